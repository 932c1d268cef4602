"""What each agent CLI tells its hooks, read into one shape, and how each is answered.

The hook program (hookrun.py) decides the same way for every backend; the CLIs differ in the
JSON they send and the JSON they obey, as the pinned versions do (checked with each real CLI
in Docker against the scripted model):

- Claude Code and codex send `tool_name`/`tool_input` and obey the same answers
  (`permissionDecision: deny`, `decision: block`). Claude runs PostToolUse after a command
  that succeeded and PostToolUseFailure after one that failed; codex runs PostToolUse after
  both, with only the output as `tool_response`, and writes the command's end (its exit code)
  into the session's transcript first. codex names a patch `apply_patch`, the patch in
  `tool_input.command`.
- gemini-cli sends BeforeTool/AfterTool with its own tool names (`run_shell_command`,
  `write_file`, `replace`), the exit code of a failed command in the result's text
  (`Exit Code: N`), and AfterAgent with the turn's text; it obeys `decision: deny` for both.
- opencode's plugin (opencode_plugin.js) passes the plugin hook's input and output as they
  are (`tool`, `args`, `output.metadata.exit`) and throws the reason of a `deny`.

Standard library only (sandbox).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, replace
from typing import Any

# The canonical tool names: what the guard and the checklist know (Claude Code's).
SHELL, EDIT, WRITE = "Bash", "Edit", "Write"
FILE_TOOLS = {
    "Edit": EDIT, "Write": WRITE, "MultiEdit": EDIT, "NotebookEdit": EDIT,  # claude
    "write_file": WRITE, "replace": EDIT,  # gemini
    "edit": EDIT, "write": WRITE,  # opencode
}  # fmt: skip
SHELLS = {"Bash", "run_shell_command", "bash"}
PATCHES = {"apply_patch"}  # codex and opencode: one patch, any number of files
_PATCH_PATH = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
_GEMINI_EXIT = re.compile(r"^Exit Code: (-?\d+)", re.M)
_TRANSCRIPT_TAIL = 1 << 20  # the part of codex's transcript read for a command's end


@dataclass(frozen=True, slots=True)
class Call:
    """One hook call, whichever CLI made it."""

    session: str
    tool: str = ""  # SHELL, EDIT or WRITE, else the CLI's own name for the tool
    command: str = ""  # the shell command line
    paths: tuple[str, ...] = ()  # the files a file tool writes
    cwd: str = ""  # where the command runs ("" when the CLI does not say)
    output: str = ""  # what the tool printed (after it ran)
    failed: bool | None = None  # whether it failed (None: the CLI does not say)
    message: str = ""  # the agent's last words (at a stop)
    source: str = ""  # why a session starts: startup, resume, compact...

    def shown(self) -> str:
        """The tool's input for the run record."""
        return json.dumps({"command": self.command} if self.tool == SHELL else list(self.paths))


def read(agent: str, event: str, raw: dict[str, Any]) -> Call:
    """`raw`, the JSON `agent` sent its hook for `event`, as a Call."""
    if agent == "opencode":
        return _opencode(raw)
    call = _tool(_text(raw.get("tool_name")), _obj(raw.get("tool_input")), _text(raw.get("cwd")))
    response = raw.get("tool_response")
    message = _text(raw.get("last_assistant_message"))
    failed: bool | None
    if agent == "gemini":
        output = _text(_obj(response).get("llmContent"))
        found = _GEMINI_EXIT.search(output)
        failed = bool(_obj(response).get("error")) or (found is not None and found[1] != "0")
        message = _text(raw.get("prompt_response"))
    elif agent == "codex":
        output = response if isinstance(response, str) else json.dumps(response)
        exit_code = _codex_exit(_text(raw.get("transcript_path")), _text(raw.get("tool_use_id")))
        failed = None if exit_code is None else exit_code != 0
    else:
        output = _claude_output(response) if response is not None else _text(raw.get("error"))
        failed = event == "post-tool-use-failure"
    session, source = _text(raw.get("session_id")), _text(raw.get("source"))
    return replace(
        call, session=session, output=output, failed=failed, message=message, source=source
    )


def deny(agent: str, reason: str) -> str:
    """The answer that stops one tool call, with `reason` for the model."""
    if agent == "gemini":
        return json.dumps({"decision": "deny", "reason": reason})
    if agent == "opencode":
        return json.dumps({"deny": reason})
    decision = {"hookEventName": "PreToolUse", "permissionDecision": "deny"}
    return json.dumps({"hookSpecificOutput": {**decision, "permissionDecisionReason": reason}})


def block(agent: str, reason: str) -> str:
    """The answer that sends the model back to work at a stop, with `reason` as its prompt."""
    return json.dumps({"decision": "deny" if agent == "gemini" else "block", "reason": reason})


def patch_paths(patch: str) -> tuple[str, ...]:
    """The files an `apply_patch` patch adds, changes, deletes or moves to."""
    return tuple(a or b for a, b in _PATCH_PATH.findall(patch))


def _tool(tool: str, tool_input: dict[str, Any], cwd: str) -> Call:
    if tool in SHELLS:
        where = _text(tool_input.get("dir_path") or tool_input.get("workdir"))  # gemini, opencode
        command = _text(tool_input.get("command"))
        return Call("", SHELL, command, cwd=os.path.join(cwd, where) if where else cwd)
    if tool in PATCHES:
        patch = _text(tool_input.get("command") or tool_input.get("patchText"))
        return Call("", WRITE, paths=patch_paths(patch), cwd=cwd)
    if tool in FILE_TOOLS:
        path = (
            tool_input.get("file_path")
            or tool_input.get("notebook_path")
            or tool_input.get("filePath")
        )
        return Call("", FILE_TOOLS[tool], paths=(path,) if isinstance(path, str) else (), cwd=cwd)
    return Call("", tool, cwd=cwd)


def _opencode(raw: dict[str, Any]) -> Call:
    """The plugin's `{tool, sessionID, args, directory, output}`; an `event` for a session
    that starts."""
    session = _text(raw.get("sessionID"))
    if raw.get("event") == "session.created":
        return Call(session, source="startup")
    call = _tool(_text(raw.get("tool")), _obj(raw.get("args")), _text(raw.get("directory")))
    result = _obj(raw.get("output"))
    exit_code = _obj(result.get("metadata")).get("exit")
    failed = isinstance(exit_code, int) and exit_code != 0
    return replace(call, session=session, output=_text(result.get("output")), failed=failed)


def _claude_output(response: object) -> str:
    if isinstance(response, dict):
        return f"{response.get('stdout', '')}\n{response.get('stderr', '')}"
    return json.dumps(response, ensure_ascii=False)


def _codex_exit(transcript: str, call_id: str) -> int | None:
    """The exit code codex recorded for command `call_id` in its session's transcript (a
    JSON-lines file it writes, ending an `item_completed` entry per command), or None."""
    if not transcript or not call_id:
        return None
    try:
        fd = os.open(transcript, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.lseek(fd, max(size - _TRANSCRIPT_TAIL, 0), os.SEEK_SET)
        data = os.read(fd, _TRANSCRIPT_TAIL)
    except OSError:
        return None
    finally:
        os.close(fd)
    for line in reversed(data.decode("utf-8", "replace").splitlines()):
        if call_id not in line or "item_completed" not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        item = _obj(_obj(_obj(entry).get("payload")).get("item"))
        if item.get("id") == call_id and isinstance(item.get("exit_code"), int):
            return int(item["exit_code"])
    return None


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
