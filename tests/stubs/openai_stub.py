"""POST /v1/chat/completions in the shape of OpenAI's chat-completions API.

A request that carries `tools` is answered with a tool call (instructor's
TOOLS mode); one without is answered with the JSON in the message content
(JSON mode), the way Ollama, vLLM and llama.cpp servers answer.
"""

from __future__ import annotations

import json
from typing import Any

from tests.stubs.scripted import Answer, ScriptedServer, Status, Text


def tool_name(request: dict[str, Any]) -> str:
    choice = request.get("tool_choice")
    if isinstance(choice, dict) and choice.get("function"):
        return str(choice["function"]["name"])
    tools = request.get("tools") or []
    return str(tools[0]["function"]["name"]) if tools else "answer"


class OpenAIStub(ScriptedServer):
    path = "/v1/chat/completions"

    def render_answer(self, action: Answer | Text, request: dict[str, Any]) -> dict[str, Any]:
        n = len(self.requests)
        text = json.dumps(action.value) if isinstance(action, Answer) else action.text
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = "stop"
        if request.get("tools"):
            call = {"name": tool_name(request), "arguments": text}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"call_{n:04d}", "type": "function", "function": call}],
            }
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-{n:04d}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request.get("model", "stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": action.input_tokens,
                "completion_tokens": action.output_tokens,
                "total_tokens": action.input_tokens + action.output_tokens,
            },
        }

    def render_error(self, action: Status) -> dict[str, Any]:
        return {"error": {"message": action.message, "type": "scripted", "code": action.code}}
