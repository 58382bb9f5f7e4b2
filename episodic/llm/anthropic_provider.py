"""Anthropic's Messages API through instructor, in TOOLS mode (tool_use blocks).

Checked against the installed anthropic 2.14: `Messages.create` has no
`temperature` parameter (passing it raises TypeError), so temperature 0 goes
in `extra_body`, which the API still reads. System messages are lifted out of
the message list into the `system` parameter, as the Messages API expects.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, Unpack

from pydantic import SecretStr

from episodic.llm.base import Message
from episodic.llm.network import InstructorProvider, Patience, protected

DEFAULT_MODEL = "claude-haiku-4-5"


def split_system(messages: list[Message]) -> tuple[str | None, list[Message]]:
    """The system prompt (all system messages joined) and the other messages."""
    system = [m["content"] for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    return ("\n\n".join(system) if system else None), rest


class AnthropicProvider(InstructorProvider):
    name = "anthropic"

    max_tokens: int  # the Messages API requires one

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: SecretStr | str | None,
        base_url: str | None = None,
        max_tokens: int = 1024,
        **patience: Unpack[Patience],
    ) -> None:
        super().__init__(
            model, api_key=api_key, base_url=base_url, max_tokens=max_tokens, **patience
        )
        if not self._key.get_secret_value():
            raise ValueError("an Anthropic API key is required (ANTHROPIC_API_KEY)")

    def _sdk(self) -> ModuleType:
        import anthropic

        return anthropic

    def _build(self) -> Any:
        import anthropic
        import instructor

        client = anthropic.Anthropic(
            api_key=self._key.get_secret_value(),
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=0,
        )
        return instructor.from_anthropic(client, mode=instructor.Mode.TOOLS)

    def _endpoint(self, client: Any) -> Callable[..., Any]:
        create: Callable[..., Any] = client.messages.create
        return create

    def _arguments(self, messages: list[Message], context: dict[str, Any] | None) -> dict[str, Any]:
        system, rest = split_system(messages)
        arguments: dict[str, Any] = {
            "max_tokens": self.max_tokens,
            # the `system` parameter is not templated, the messages are
            "messages": protected(rest) if context else rest,
            "extra_body": {"temperature": 0},
        }
        if system is not None:
            arguments["system"] = system
        return arguments

    def _tokens(self, response: Any) -> tuple[int, int]:
        usage = getattr(response, "usage", None)
        return int(getattr(usage, "input_tokens", 0) or 0), int(
            getattr(usage, "output_tokens", 0) or 0
        )
