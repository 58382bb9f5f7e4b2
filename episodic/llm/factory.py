"""Choose the provider from the settings (EPISODIC_LLM, _LLM_MODEL, _LLM_BASE_URL ...).

- offline (the default when no key is set): `OfflineProvider`, never cached
  (computing the answer costs less than reading it back).
- anthropic: key from ANTHROPIC_API_KEY, model default claude-haiku-4-5;
  EPISODIC_LLM_BASE_URL may point at a proxy.
- openai: any OpenAI-compatible server. With EPISODIC_LLM_BASE_URL it is used
  as given (Ollama http://localhost:11434/v1, vLLM http://host:8000/v1);
  without one, api.openai.com when OPENAI_API_KEY is set, else the local
  Ollama URL. Model default llama3.1 (gpt-4o-mini on api.openai.com). Local
  servers need no key: a placeholder is sent. EPISODIC_LLM_MODE picks
  instructor's mode: tools (default), json or json_schema.

The network providers are wrapped in the disk cache under
`settings.cache_dir / "llm"` when `settings.llm_cache` is on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from episodic.config import Settings
from episodic.errors import ConfigError
from episodic.llm.anthropic_provider import DEFAULT_MODEL as ANTHROPIC_MODEL
from episodic.llm.anthropic_provider import AnthropicProvider
from episodic.llm.base import LLMProvider
from episodic.llm.cache import CachedProvider
from episodic.llm.offline import OfflineProvider
from episodic.llm.openai_provider import DEFAULT_MODEL as OPENAI_COMPAT_MODEL
from episodic.llm.openai_provider import OLLAMA_BASE_URL, OpenAIMode, OpenAIProvider
from episodic.llm.retry import RetryPolicy

OPENAI_MODEL = "gpt-4o-mini"
MODE_ENV = "EPISODIC_LLM_MODE"


def _mode(settings: Settings) -> str:
    return settings.llm_mode.strip().lower() or "tools"


def check_provider(settings: Settings) -> None:
    """Raise ConfigError for the settings make_provider would refuse, without
    building anything: the commands that call a model check it up front, the
    others never need a key."""
    kind = settings.llm_kind()
    if kind == "anthropic" and settings.api_key() is None:
        raise ConfigError("EPISODIC_LLM=anthropic", "needs ANTHROPIC_API_KEY in the environment")
    mode = _mode(settings)
    if kind == "openai" and mode not in ("tools", "json", "json_schema"):
        raise ConfigError(MODE_ENV, f"must be tools, json or json_schema, got {mode!r}")


def make_provider(
    settings: Settings,
    *,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] | None = None,
) -> LLMProvider:
    """The configured provider. `policy` and `sleep` exist for tests and tuning."""
    kind = settings.llm_kind()
    if kind == "offline":
        return OfflineProvider()
    policy = policy or RetryPolicy(
        retries=settings.llm_retries, base_delay_s=settings.llm_retry_base_s
    )
    check_provider(settings)
    key = settings.api_key()
    provider: LLMProvider
    if kind == "anthropic":
        assert key is not None  # check_provider
        provider = AnthropicProvider(
            settings.llm_model or ANTHROPIC_MODEL,
            api_key=key,
            base_url=settings.llm_base_url,
            timeout_s=settings.llm_timeout_s,
            retries=settings.llm_retries,
            policy=policy,
            sleep=sleep,
        )
    else:
        mode = _mode(settings)
        base_url = settings.llm_base_url
        if base_url is None and key is None:
            base_url = OLLAMA_BASE_URL
        default_model = OPENAI_MODEL if base_url is None else OPENAI_COMPAT_MODEL
        provider = OpenAIProvider(
            settings.llm_model or default_model,
            api_key=key,
            base_url=base_url,
            mode=cast(OpenAIMode, mode),
            max_tokens=settings.llm_max_tokens,
            timeout_s=settings.llm_timeout_s,
            retries=settings.llm_retries,
            policy=policy,
            sleep=sleep,
        )
    if settings.llm_cache:
        return CachedProvider(provider, settings.cache_dir / "llm")
    return provider
