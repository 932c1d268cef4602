"""OpenAI Responses (`POST /v1/responses`), spoken by codex through a custom provider.

codex 0.169.0 sends its whole history as `input` items each turn: `developer` and `user`
messages (the first user items carry `<environment_context>` with `<cwd>` and then the prompt),
`message` items of the assistant, `function_call` items and their `function_call_output`.
It streams (`stream: true`) and reads the SSE events `response.created`,
`response.output_item.added` / `.done`, `response.output_text.delta` and `response.completed`
(which carries `usage`). Its shell tool is `exec_command` {cmd}; `prompt_cache_key` is the
conversation id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from email.message import Message
from typing import Any

from ralph.testing.conversation import Request, as_text, mappings
from ralph.testing.dialects import Response, data_event, halves, json_response
from ralph.testing.wire import ErrorReply, MessageReply, TextBlock, ToolUseBlock

_CWD = re.compile(r"<cwd>([^<]+)</cwd>")
SHELL_TOOL = "exec_command"
OPENAI_ERRORS = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}


class Responses:
    name = "responses"

    def handles(self, path: str) -> bool:
        return path in ("/v1/responses", "/responses")

    def request(self, path: str, body: Mapping[str, Any], headers: Message) -> Request:
        items = mappings(body.get("input"))
        texts = [_item_text(item) for item in items]
        conversation = "\n".join(text for text in texts if text)
        opening: list[str] = []
        for item in items:
            if item.get("role") != "user":
                if opening:
                    break
                continue
            opening.append(_item_text(item))
        tools = body.get("tools")
        found = _CWD.search(conversation)
        return Request(
            prompt="\n".join(opening),
            conversation=conversation,
            last_result=_last_results(items),
            session=str(body.get("prompt_cache_key") or headers.get("session_id") or ""),
            model=str(body.get("model", "")),
            is_main=isinstance(tools, list) and len(tools) > 0,
            is_fresh=not any(_from_model(item) for item in items),
            streaming=bool(body.get("stream")),
            cwd=found.group(1).strip() if found else "",
            body=body,
        )

    def reply(self, reply: MessageReply, request: Request) -> Response:
        items = [_output_item(reply.id, index, block) for index, block in enumerate(reply.blocks)]
        usage = {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        done = _response(reply, "completed", items, usage)
        if not request.streaming:
            return json_response(200, done, reply_headers(reply))
        return Response(
            200, events=tuple(_events(reply, items, done)), headers=reply_headers(reply)
        )

    def error(self, reply: ErrorReply, request: Request) -> Response:
        return openai_error(reply)


def reply_headers(reply: MessageReply) -> dict[str, str]:
    return {"x-request-id": f"req_{reply.id}"}


def openai_error(reply: ErrorReply) -> Response:
    """An OpenAI error body; a 429 keeps `retry-after` and adds the x-ratelimit headers."""
    code = OPENAI_ERRORS.get(reply.status, "server_error")
    headers = {k: v for k, v in reply.headers.items() if k == "retry-after"}
    if reply.status == 429:
        reset = headers.get("retry-after", "1")
        headers |= {
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": f"{reset}s",
        }
    error = {"message": reply.message, "type": code, "param": None, "code": code}
    return json_response(reply.status, {"error": error}, headers)


def _events(
    reply: MessageReply, items: list[dict[str, Any]], done: dict[str, Any]
) -> Iterator[bytes]:
    sequence = iter(range(1, 10_000))

    def event(kind: str, **fields: Any) -> bytes:
        return data_event({"type": kind, "sequence_number": next(sequence), **fields}, kind)

    yield event("response.created", response=_response(reply, "in_progress", [], None))
    for index, item in enumerate(items):
        if item["type"] == "message":
            yield event(
                "response.output_item.added", output_index=index, item={**item, "content": []}
            )
            for delta in halves(item["content"][0]["text"]):
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=delta,
                )
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=done)


def _response(
    reply: MessageReply, status: str, output: list[dict[str, Any]], usage: object
) -> dict[str, Any]:
    return {
        "id": f"resp_{reply.id}",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": reply.model,
        "output": output,
        "usage": usage,
    }


def _output_item(reply_id: str, index: int, block: TextBlock | ToolUseBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {
            "type": "message",
            "id": f"{reply_id}_{index}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": block.text, "annotations": []}],
        }
    name, arguments = (
        (SHELL_TOOL, {"cmd": block.input["command"]})
        if block.agent_shell
        else (
            block.name,
            block.input,
        )
    )
    return {
        "type": "function_call",
        "id": f"fc_{block.id}",
        "status": "completed",
        "call_id": block.id,
        "name": name,
        "arguments": json.dumps(arguments),
    }


def _from_model(item: Mapping[str, Any]) -> bool:
    return item.get("role") == "assistant" or item.get("type") in ("function_call", "reasoning")


def _item_text(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind == "function_call":
        return as_text(item.get("arguments", ""))
    if kind in ("function_call_output", "custom_tool_call_output"):
        return _output_text(item.get("output"))
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in mappings(content))


def _output_text(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping):
        return _output_text(output.get("content") or output.get("output") or "")
    return "\n".join(str(part.get("text", "")) for part in mappings(output))


def _last_results(items: list[Mapping[str, Any]]) -> str:
    """The tool outputs after the model's last turn ("" when it ended with no tool call)."""
    results: list[str] = []
    for item in reversed(items):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            results.append(_output_text(item.get("output")))
        elif item.get("role") == "user" or (results and _from_model(item)):
            break
    return "\n".join(reversed(results))
