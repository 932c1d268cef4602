"""Decide the reply to each request: bind conversations to scripts and walk their steps.

State is per conversation (Claude Code session): a cursor into its script and the variables
captured so far. Steps whose `when` does not match are skipped; a played step moves the cursor
to the next step or to its `goto` label. `times` limits how often a step plays across all
conversations, so "reject once, then work" survives the CLI's own retries and ralph's re-runs.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ralph.testing.conversation import Request
from ralph.testing.scenario import Condition, Scenario, Script, Step, StepKind
from ralph.testing.wire import ERROR_TYPES, ErrorReply, MessageReply, Reply, TextBlock, ToolUseBlock

_VARIABLE = re.compile(r"\{\{\s*(\w+)\s*\}\}")


@dataclass(slots=True)
class Conversation:
    script: Script
    cursor: int = 0
    variables: dict[str, str] = field(default_factory=dict)
    last_failed: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """The reply plus what the recorder should note about how it was chosen."""

    reply: Reply
    kind: str
    script: str | None = None
    step: int | None = None


class Engine:
    """Thread-safe scenario player; `decide` is the only entry point."""

    def __init__(self, scenario: Scenario, *, now: Callable[[], float] = time.time) -> None:
        self.scenario = scenario
        self._now = now
        self._lock = threading.Lock()
        self._conversations: dict[str, Conversation] = {}
        self._played: Counter[tuple[str, int]] = Counter()
        self._ids = itertools.count(1)

    def decide(self, request: Request) -> Decision:
        """Choose the reply for one model request, whatever its dialect."""
        if not request.is_main:
            return Decision(self._text(self.scenario.side_reply, request.model), kind="side")
        with self._lock:
            conversation = self._conversation(request)
            if conversation is None:
                return Decision(self._text(self.scenario.final_text, request.model), "unscripted")
            variables = {**conversation.variables, "cwd": request.cwd}
            while conversation.cursor < len(conversation.script.steps):
                index = conversation.cursor
                step = conversation.script.steps[index]
                captured = self._playable(step, index, conversation, request)
                if captured is None:
                    conversation.cursor += 1
                    continue
                conversation.variables.update(captured)
                variables.update(captured)
                self._played[(conversation.script.name, index)] += 1
                conversation.cursor = self._next(conversation, step, index)
                reply = self._reply(step, variables, request.model)
                conversation.last_failed = isinstance(reply, ErrorReply)
                return Decision(reply, kind="main", script=conversation.script.name, step=index)
            conversation.last_failed = False
            reply = self._text(self.scenario.final_text, request.model)
            return Decision(reply, kind="main", script=conversation.script.name)

    def played(self, script: str, step: int) -> int:
        """How many times a step has been played so far."""
        with self._lock:
            return self._played[(script, step)]

    def _conversation(self, request: Request) -> Conversation | None:
        key = request.session_key
        known = self._conversations.get(key)
        # A fresh request for a known session is the CLI retrying a failed first turn; for
        # an unknown one (or after a success) it is a new conversation.
        if known is not None and not (request.is_fresh and not known.last_failed):
            return known
        script = self.scenario.script_for(request.prompt)
        if script is None:
            return None
        self._conversations[key] = Conversation(script=script)
        return self._conversations[key]

    def _next(self, conversation: Conversation, step: Step, index: int) -> int:
        """Where the cursor goes after playing a step.

        A failure step with `times: N` holds the cursor until it has played N times, so the
        CLI's own retries meet it again ("fail twice, then answer").
        """
        repeating = step.kind is not StepKind.REPLY and step.times is not None
        if repeating and self._played[(conversation.script.name, index)] < (step.times or 0):
            return index
        return conversation.script.index_of(step.goto) if step.goto else index + 1

    def _playable(
        self, step: Step, index: int, conversation: Conversation, request: Request
    ) -> dict[str, str] | None:
        """The variables a step captures if it may play now, else None."""
        if step.times is not None and self._played[(conversation.script.name, index)] >= step.times:
            return None
        return matches(step.when, request)

    def _reply(self, step: Step, variables: dict[str, str], model: str) -> Reply:
        if step.kind is StepKind.HTTP_ERROR:
            headers = {} if step.retry_after is None else {"retry-after": f"{step.retry_after:g}"}
            return ErrorReply(
                status=step.status,
                error_type=ERROR_TYPES.get(step.status, "api_error"),
                message=step.message or f"Scripted HTTP {step.status}",
                headers=headers,
                delay=step.delay,
            )
        if step.kind is StepKind.RATE_LIMIT:
            return self._rejection(step)
        blocks: list[TextBlock | ToolUseBlock] = []
        if step.text:
            blocks.append(TextBlock(substitute(step.text, variables)))
        for tool in step.tools:
            tool_id = f"toolu_scripted_{next(self._ids):04d}"
            tool_input = substitute(tool.input, variables)
            shell = tool.agent_shell
            blocks.append(ToolUseBlock(tool_id, tool.name, tool_input, agent_shell=shell))
        return MessageReply(
            id=f"msg_scripted_{next(self._ids):04d}",
            model=model or self.scenario.model,
            blocks=tuple(blocks),
            headers=self._allowed(),
            delay=step.delay,
            input_tokens=self.scenario.input_tokens,
        )

    def _allowed(self) -> dict[str, str]:
        """Usage headers of an accepted request, when the scenario asks for them."""
        if self.scenario.utilization is None:
            return {}
        resets_at = str(int(self._now() + 3600))
        return {
            "anthropic-ratelimit-unified-status": "allowed",
            "anthropic-ratelimit-unified-reset": resets_at,
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-5h-status": "allowed",
            "anthropic-ratelimit-unified-5h-reset": resets_at,
            "anthropic-ratelimit-unified-5h-utilization": f"{self.scenario.utilization:g}",
        }

    def _rejection(self, step: Step) -> ErrorReply:
        """A usage-limit 429 the way the subscription limiter reports it (unified headers)."""
        resets_at = int(self._now() + step.reset_in)
        headers = {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-reset": str(resets_at),
            "anthropic-ratelimit-unified-representative-claim": step.rate_limit_type,
            "anthropic-ratelimit-unified-5h-reset": str(resets_at),
            "anthropic-ratelimit-unified-5h-utilization": "1.0",
            "anthropic-ratelimit-unified-5h-status": "rejected",
            "anthropic-ratelimit-unified-overage-status": "rejected",
            "anthropic-ratelimit-unified-overage-disabled-reason": "org_level_disabled",
            "retry-after": str(max(1, int(step.reset_in))),
        }
        return ErrorReply(
            status=429,
            error_type="rate_limit_error",
            message=step.message or "Scripted usage limit reached",
            headers=headers,
            delay=step.delay,
        )

    def _text(self, text: str, model: str) -> MessageReply:
        return MessageReply(
            id=f"msg_scripted_{next(self._ids):04d}",
            model=model or self.scenario.model,
            blocks=(TextBlock(text),),
            headers=self._allowed(),
            input_tokens=self.scenario.input_tokens,
        )


def matches(condition: Condition | None, request: Request) -> dict[str, str] | None:
    """Named groups captured when every regex of the condition matches, else None."""
    if condition is None:
        return {}
    captured: dict[str, str] = {}
    for pattern, text in (
        (condition.prompt, request.prompt),
        (condition.conversation, request.conversation),
        (condition.result, request.last_result),
    ):
        if pattern is None:
            continue
        found = pattern.search(text)
        if found is None:
            return None
        captured.update({k: v for k, v in found.groupdict().items() if v is not None})
    return captured


def substitute(value: Any, variables: dict[str, str]) -> Any:
    """Replace `{{name}}` in every string of a JSON value; unknown names stay as they are."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: variables.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [substitute(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, variables) for key, item in value.items()}
    return value
