"""Settings from the environment, prefix EPISODIC_. Secrets are read, never logged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EPISODIC_", extra="ignore")

    home: Path = Field(default_factory=lambda: Path.home() / ".episodic")
    db_uri: str | None = None

    llm: Literal["offline", "anthropic", "openai"] | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_timeout_s: float = 30.0
    llm_retries: int = 3
    llm_retry_base_s: float = 0.5  # first backoff delay; doubles per retry
    llm_cache: bool = True

    embedder: Literal["minilm", "onnx-int8", "static", "hash"] = "minilm"
    domain: Literal["general", "coding", "sre"] = "general"

    max_turn_chars: int = 200_000
    batch_turns: int = 2_000
    reflection_threshold: float = 150.0
    idle_minutes: float = 30.0

    @property
    def database_uri(self) -> str:
        return self.db_uri or str(self.home / "lancedb")

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    def llm_kind(self) -> Literal["offline", "anthropic", "openai"]:
        """Offline unless asked for, or a key is present for a network provider."""
        if self.llm:
            return self.llm
        if os.environ.get("ANTHROPIC_API_KEY"):
            return "anthropic"
        return "offline"

    def api_key(self) -> SecretStr | None:
        name = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}.get(self.llm_kind())
        value = os.environ.get(name) if name else None
        return SecretStr(value) if value else None


def load_settings() -> Settings:
    return Settings()


def apply_prefect_env() -> None:
    """Prefect settings wherever episodic runs (CLI, tests, CI, workers); call
    before prefect is imported. A value the user set is kept."""
    home = Path(os.environ.get("EPISODIC_HOME") or Path.home() / ".episodic")
    os.environ.setdefault("PREFECT_HOME", str(home / "prefect"))
    try:
        Path(os.environ["PREFECT_HOME"]).expanduser().mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # Prefect reports it; an unwritable home is the user's to fix
    # the 20 s default timed out on a loaded 2-core machine
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
