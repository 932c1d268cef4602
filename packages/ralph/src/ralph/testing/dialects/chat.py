"""OpenAI chat completions (`POST /v1/chat/completions`), spoken by opencode.

opencode 1.18.33, through an OpenAI-compatible provider, sends `messages` (a `system`
message announcing the working directory, `user`, `assistant` with `tool_calls`, `tool` with
`tool_call_id`), `tools` on the agent's turns (none on its title side call) and
`stream: true` with `stream_options.include_usage`. A stream is `chat.completion.chunk` deltas,
a final chunk with `finish_reason`, a usage chunk, then `data: [DONE]`. Its shell tool is
`bash` {command}.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from email.message import Message
from typing import Any

from ralph.testing.conversation import Request, mappings
from ralph.testing.dialects import Response, halves, json_response
from ralph.testing.dialects.responses import openai_error, reply_headers
from ralph.testing.wire import ErrorReply, MessageReply, TextBlock, ToolUseBlock

_CWD = re.compile(r"[Ww]orking directory: (\S+)")
SHELL_TOOL = "bash"


class ChatCompletions:
    name = "chat"

    def handles(self, path: str) -> bool:
        return path in ("/v1/chat/completions", "/chat/completions")

    def request(self, path: str, body: Mapping[str, Any], headers: Message) -> Request:
        messages = mappings(body.get("messages"))
        conversation = "\n".join(_message_text(m) for m in messages)
        tools = body.get("tools")
        found = _CWD.search(conversation)
        return Request(
            prompt=next((_message_text(m) for m in messages if m.get("role") == "user"), ""),
            conversation=conversation,
            last_result=_last_results(messages),
            model=str(body.get("model", "")),
            is_main=isinstance(tools, list) and len(tools) > 0,
            is_fresh=not any(m.get("role") == "assistant" for m in messages),
            streaming=bool(body.get("stream")),
            cwd=found.group(1) if found else "",
            body=body,
        )

    def reply(self, reply: MessageReply, request: Request) -> Response:
        text = "".join(b.text for b in reply.blocks if isinstance(b, TextBlock))
        calls = [_call(b) for b in reply.blocks if isinstance(b, ToolUseBlock)]
        finish = "tool_calls" if calls else "stop"
        usage = {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        head = {"id": f"chatcmpl_{reply.id}", "created": 0, "model": reply.model}
        if not request.streaming:
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = calls
            choice = {"index": 0, "message": message, "finish_reason": finish}
            body = {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
            return json_response(200, body, reply_headers(reply))
        events = tuple(_chunks(head, text, calls, finish, usage))
        return Response(200, events=events, headers=reply_headers(reply))

    def error(self, reply: ErrorReply, request: Request) -> Response:
        return openai_error(reply)


def _chunks(
    head: dict[str, Any], text: str, calls: list[dict[str, Any]], finish: str, usage: object
) -> Iterator[bytes]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        payload = {**head, "object": "chat.completion.chunk", "choices": [choice]}
        return f"data: {json.dumps(payload)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    for part in halves(text):
        yield chunk({"content": part})
    for index, call in enumerate(calls):
        function = call["function"]
        first = {**call, "index": index, "function": {"name": function["name"], "arguments": ""}}
        yield chunk({"tool_calls": [first]})
        for part in halves(function["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, finish)
    usage_chunk = {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}
    yield f"data: {json.dumps(usage_chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def _call(block: ToolUseBlock) -> dict[str, Any]:
    if block.agent_shell:
        name, arguments = SHELL_TOOL, {"command": block.input["command"]}
    else:
        name, arguments = block.name, block.input
    return {
        "id": f"call_{block.id}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    parts = (
        [content]
        if isinstance(content, str)
        else [str(part.get("text", "")) for part in mappings(content)]
    )
    calls = [call.get("function") for call in mappings(message.get("tool_calls"))]
    parts += [str(f.get("arguments", "")) for f in calls if isinstance(f, Mapping)]
    return "\n".join(parts)


def _last_results(messages: list[Mapping[str, Any]]) -> str:
    """The `tool` messages after the last assistant turn."""
    results: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.append(_message_text(message))
    return "\n".join(reversed(results))
