"""POST /v1/messages in the shape of Anthropic's Messages API (tool_use blocks)."""

from __future__ import annotations

import json
from typing import Any

from tests.stubs.scripted import Answer, ScriptedServer, Status, Text

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def tool_name(request: dict[str, Any]) -> str:
    """The tool instructor asked for: forced by tool_choice, else the first tool."""
    choice = request.get("tool_choice") or {}
    if choice.get("type") == "tool":
        return str(choice["name"])
    tools = request.get("tools") or []
    return str(tools[0]["name"]) if tools else "answer"


class AnthropicStub(ScriptedServer):
    path = "/v1/messages"

    def render_answer(self, action: Answer | Text, request: dict[str, Any]) -> dict[str, Any]:
        n = len(self.requests)
        if isinstance(action, Answer) and request.get("tools"):
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_{n:04d}",
                "name": tool_name(request),
                "input": action.value,
            }
            stop = "tool_use"
        else:
            text = json.dumps(action.value) if isinstance(action, Answer) else action.text
            block, stop = {"type": "text", "text": text}, "end_turn"
        return {
            "id": f"msg_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "stub"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": action.input_tokens,
                "output_tokens": action.output_tokens,
            },
        }

    def render_error(self, action: Status) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(action.code, "api_error")
        return {"type": "error", "error": {"type": kind, "message": action.message}}
