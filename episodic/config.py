"""Settings from the environment, prefix EPISODIC_. Secrets are read, never logged.

Every value is checked when the settings load (`load_settings` raises one
`ConfigError` naming the variable); the model key is checked only by the
commands that call a model (`episodic.llm.factory.check_provider`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from episodic.errors import ConfigError

PREFIX = "EPISODIC_"
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore")

    home: Path = Field(default_factory=lambda: Path.home() / ".episodic")
    db_uri: str | None = None

    llm: Literal["offline", "anthropic", "openai"] | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_timeout_s: Positive = 30.0
    llm_retries: Annotated[int, Field(ge=0)] = 3
    llm_retry_base_s: NonNegative = 0.5  # first backoff delay; doubles per retry
    llm_cache: bool = True

    embedder: Literal["minilm", "onnx-int8", "static", "hash"] = "minilm"
    domain: Literal["general", "coding", "sre"] = "general"

    max_turn_chars: Annotated[int, Field(ge=1)] = 200_000
    batch_turns: Annotated[int, Field(ge=1)] = 2_000
    reflection_threshold: Positive = 150.0
    idle_minutes: Positive = 30.0

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
    """The settings of the environment; a ConfigError names the first bad one."""
    try:
        return Settings()
    except ValidationError as e:
        raise config_error(e) from None


def config_error(e: ValidationError) -> ConfigError:
    """One line for the first invalid setting: its variable, value and rule."""
    first = e.errors(include_url=False)[0]
    field = str(first["loc"][0]) if first["loc"] else "settings"
    value = repr(first.get("input"))
    value = value if len(value) <= 60 else value[:57] + "..."
    reason = str(first["msg"]).replace("\n", " ").replace("Input should be", "must be")
    if first["type"] in ("finite_number", "greater_than", "greater_than_equal"):
        reason += " (a finite number)" if "finite" not in reason else ""
    return ConfigError(f"{PREFIX}{field.upper()}", f"{reason}, got {value}")


def apply_prefect_env(*, quiet: bool = False) -> None:
    """Prefect settings for a process episodic starts (the CLI, tests); call
    before prefect is imported. A value the user set is kept. Importing a
    module never calls this: only entry points do."""
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
    if quiet:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
