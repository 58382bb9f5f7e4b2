"""OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp) through instructor.

`mode` picks how the schema is asked for: "tools" (function calling),
"json" (`response_format={"type": "json_object"}` with the schema in the
system prompt; the safest choice for small local models) or "json_schema"
(`response_format` with the schema itself; vLLM and recent Ollama honour it).
Temperature 0 and a fixed seed keep answers as repeatable as the server allows;
`max_tokens` (EPISODIC_LLM_MAX_TOKENS) bounds each answer, which a small local
model needs: it otherwise runs on until the server's limit. For llama.cpp's
server use "tools": it turns the forced tool call into a grammar from the
schema, while "json_schema" gets a 500 there and "json" rambles.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any, Literal, Unpack

from pydantic import SecretStr

from episodic.llm.base import Message
from episodic.llm.network import InstructorProvider, Patience, protected

OpenAIMode = Literal["tools", "json", "json_schema"]
DEFAULT_MODEL = "llama3.1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
NO_KEY = "not-needed"  # local servers ignore the key, but the SDK insists on one


class OpenAIProvider(InstructorProvider):
    name = "openai"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: SecretStr | str | None = None,
        base_url: str | None = OLLAMA_BASE_URL,
        mode: OpenAIMode = "tools",
        seed: int | None = 0,
        max_tokens: int | None = None,
        **patience: Unpack[Patience],
    ) -> None:
        super().__init__(
            model, api_key=api_key or NO_KEY, base_url=base_url, max_tokens=max_tokens, **patience
        )
        if mode not in ("tools", "json", "json_schema"):
            raise ValueError(f"mode must be tools, json or json_schema, got {mode!r}")
        self.mode: OpenAIMode = mode
        self.seed = seed

    def __repr__(self) -> str:
        return (
            f"OpenAIProvider(model={self.model!r}, base_url={self.base_url!r}, mode={self.mode!r})"
        )

    def _sdk(self) -> ModuleType:
        import openai

        return openai

    def _build(self) -> Any:
        import instructor
        import openai

        modes = {
            "tools": instructor.Mode.TOOLS,
            "json": instructor.Mode.JSON,
            "json_schema": instructor.Mode.JSON_SCHEMA,
        }
        client = openai.OpenAI(
            api_key=self._key.get_secret_value(),
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=0,
        )
        return instructor.from_openai(client, mode=modes[self.mode])

    def _endpoint(self, client: Any) -> Callable[..., Any]:
        create: Callable[..., Any] = client.chat.completions.create
        return create

    def _arguments(self, messages: list[Message], context: dict[str, Any] | None) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "messages": protected(messages) if context else messages,
            "temperature": 0,
        }
        if self.seed is not None:
            arguments["seed"] = self.seed
        if self.max_tokens is not None:
            arguments["max_tokens"] = self.max_tokens
        return arguments

    def _tokens(self, response: Any) -> tuple[int, int]:
        usage = getattr(response, "usage", None)
        return int(getattr(usage, "prompt_tokens", 0) or 0), int(
            getattr(usage, "completion_tokens", 0) or 0
        )

    def _mend(self, response: Any) -> None:
        """Small local models put raw newlines and tabs inside JSON strings,
        which strict JSON (and so pydantic) rejects: re-encode such an answer
        when Python's lenient parser reads it. Anything else is left for
        validation to judge."""
        for choice in getattr(response, "choices", None) or []:
            message = getattr(choice, "message", None)
            for call in getattr(message, "tool_calls", None) or []:
                call.function.arguments = lenient_json(call.function.arguments)
            if message is not None and isinstance(message.content, str):
                message.content = lenient_json(message.content)


def lenient_json(text: str) -> str:
    """`text`, or the same JSON re-encoded if it only parses with control
    characters allowed inside strings."""
    if not isinstance(text, str):
        return text
    try:
        json.loads(text)
        return text
    except ValueError:
        pass
    try:
        return json.dumps(json.loads(text, strict=False), ensure_ascii=False)
    except ValueError:
        return text
