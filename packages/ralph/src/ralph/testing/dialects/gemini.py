"""The Gemini API (`POST /v1beta/models/{model}:generateContent` and
`:streamGenerateContent?alt=sse`), spoken by gemini-cli.

gemini-cli 0.61.0 sends `contents` (`user` / `model` turns of `parts`: `text`,
`functionCall` {name, args}, `functionResponse` {name, response: {output}}), a
`systemInstruction`, and `tools[].functionDeclarations` on the agent's turns; its side calls
(routing, next-speaker checks) carry none and ask for JSON matching `responseJsonSchema`. A
stream is `data:` chunks of GenerateContentResponse (`candidates[].content.parts`,
`finishReason`, `usageMetadata`). Its shell tool is `run_shell_command` {command}.
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

_PATH = re.compile(r"^/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):(?P<verb>\w+)$")
_CWD = re.compile(r"(?:working in the directory|[Ww]orking directory): (\S+)")
SHELL_TOOL = "run_shell_command"
STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


class Gemini:
    name = "gemini"

    def handles(self, path: str) -> bool:
        found = _PATH.match(path)
        return found is not None and found["verb"] in ("generateContent", "streamGenerateContent")

    def request(self, path: str, body: Mapping[str, Any], headers: Message) -> Request:
        contents = mappings(body.get("contents"))
        conversation = "\n".join(_content_text(c) for c in contents)
        declared = [
            d
            for tool in mappings(body.get("tools"))
            for d in mappings(tool.get("functionDeclarations"))
        ]
        found = _CWD.search(conversation) or _CWD.search(
            _content_text(body.get("systemInstruction"))
        )
        matched = _PATH.match(path)
        return Request(
            prompt=next(
                (_content_text(c) for c in contents if c.get("role", "user") == "user"), ""
            ),
            conversation=conversation,
            last_result=_last_results(contents),
            model=matched["model"] if matched else "",
            is_main=len(declared) > 0,
            is_fresh=not any(c.get("role") == "model" for c in contents),
            streaming=matched is not None and matched["verb"] == "streamGenerateContent",
            cwd=found.group(1) if found else "",
            body=body,
        )

    def reply(self, reply: MessageReply, request: Request) -> Response:
        parts = [_part(block) for block in reply.blocks]
        config = request.body.get("generationConfig")
        schema = config.get("responseJsonSchema") if isinstance(config, Mapping) else None
        if not request.is_main and isinstance(schema, Mapping):
            # Side calls that want JSON (the `auto` model router, next-speaker checks) get
            # the plainest value their schema allows, so the CLI does not retry them.
            parts = [{"text": json.dumps(instance(schema))}]
        usage = {
            "promptTokenCount": reply.input_tokens,
            "candidatesTokenCount": reply.output_tokens,
            "totalTokenCount": reply.input_tokens + reply.output_tokens,
        }
        headers = {"x-request-id": f"req_{reply.id}"}
        if not request.streaming:
            return json_response(200, _chunk(reply, parts, "STOP", usage), headers)
        return Response(200, events=tuple(_events(reply, parts, usage)), headers=headers)

    def error(self, reply: ErrorReply, request: Request) -> Response:
        status = STATUSES.get(reply.status, "UNKNOWN")
        error: dict[str, Any] = {"code": reply.status, "message": reply.message, "status": status}
        headers = {k: v for k, v in reply.headers.items() if k == "retry-after"}
        if "retry-after" in headers:
            retry = {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": f"{headers['retry-after']}s",
            }
            error["details"] = [retry]
        return json_response(reply.status, {"error": error}, headers)


def instance(schema: Mapping[str, Any]) -> object:
    """The plainest value a (Gemini-style, upper-case types) JSON schema accepts."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = str(schema.get("type", "OBJECT")).upper()
    if kind == "OBJECT":
        properties = schema.get("properties")
        fields = properties if isinstance(properties, Mapping) else {}
        return {k: instance(v) for k, v in fields.items() if isinstance(v, Mapping)}
    plain: dict[str, object] = {"STRING": "OK", "INTEGER": 1, "NUMBER": 1, "BOOLEAN": False}
    return plain.get(kind, [])


def _events(reply: MessageReply, parts: list[dict[str, Any]], usage: object) -> Iterator[bytes]:
    # Text arrives in two chunks; function calls come whole, as the real API sends them.
    texts = [p["text"] for p in parts if "text" in p]
    calls = [p for p in parts if "functionCall" in p]
    pieces = [{"text": piece} for text in texts for piece in halves(text)] + calls
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        yield data_event(_chunk(reply, [piece], "STOP" if last else None, usage if last else None))
    if not pieces:
        yield data_event(_chunk(reply, [{"text": ""}], "STOP", usage))


def _chunk(
    reply: MessageReply, parts: list[dict[str, Any]], finish: str | None, usage: object
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    chunk: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": reply.model,
        "responseId": reply.id,
    }
    if usage is not None:
        chunk["usageMetadata"] = usage
    return chunk


def _part(block: TextBlock | ToolUseBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if block.agent_shell:
        return {"functionCall": {"name": SHELL_TOOL, "args": {"command": block.input["command"]}}}
    return {"functionCall": {"name": block.name, "args": block.input}}


def _part_text(part: Mapping[str, Any]) -> str:
    if "text" in part:
        return str(part["text"])
    if isinstance(part.get("functionCall"), Mapping):
        return as_text(part["functionCall"].get("args", {}))
    if isinstance(part.get("functionResponse"), Mapping):
        return _response_text(part["functionResponse"].get("response"))
    return ""


def _response_text(response: object) -> str:
    if isinstance(response, Mapping):
        for key in ("output", "llmContent", "error"):
            if key in response:
                return as_text(response[key])
    return as_text(response)


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, Mapping):
        return ""
    return "\n".join(_part_text(part) for part in mappings(content.get("parts")))


def _last_results(contents: list[Mapping[str, Any]]) -> str:
    """The function responses of the last user turn ("" when it has none)."""
    for content in reversed(contents):
        if content.get("role", "user") != "user":
            return ""
        parts = mappings(content.get("parts"))
        responses = [p for p in parts if isinstance(p.get("functionResponse"), Mapping)]
        if responses:
            return "\n".join(_part_text(p) for p in responses)
        if parts:
            return ""
    return ""
