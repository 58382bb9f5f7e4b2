"""Settings from the environment, prefix EPISODIC_. Secrets are read, never logged.

This module is the only reader of the environment: everything else takes a
`Settings` (or a value from one). Every value is checked when the settings
load (`load_settings` raises one `ConfigError` naming the variable); the model
key is checked only by the commands that call a model
(`episodic.llm.factory.check_provider`).

The detector's thresholds are `Settings.segment`, a `DetectorConfig` whose
defaults are declared once in `episodic/segment/config.py`; each field is set
with a double underscore, e.g. `EPISODIC_SEGMENT__MAX_TURNS=12`.
`EPISODIC_IDLE_MINUTES` is the detector's `idle_minutes` (it wins over
`EPISODIC_SEGMENT__IDLE_MINUTES` when both are set)."""

from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from episodic.errors import ConfigError
from episodic.segment.config import DEFAULTS, DetectorConfig

PREFIX = "EPISODIC_"
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
# storage option keys that hold a secret (kept out of EPISODIC_* settings)
_CREDENTIAL_WORDS = ("secret", "token", "password", "access_key", "account_key", "credential")


class HomeSettings(BaseSettings):
    """EPISODIC_HOME alone: what an entry point needs before the rest is
    checked (`apply_prefect_env`, error messages)."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX, extra="ignore", env_nested_delimiter="__", populate_by_name=True
    )

    home: Path = Field(default_factory=lambda: Path.home() / ".episodic")


class Settings(HomeSettings):
    db_uri: str | None = None
    # LanceDB's object-store options for an s3:// (gs://, az://) db_uri, as JSON
    # or one key at a time (EPISODIC_DB_STORAGE_OPTIONS__ENDPOINT=...); e.g.
    # {"endpoint": "http://127.0.0.1:9000", "allow_http": "true"}. Credentials
    # stay in the provider's own variables (AWS_ACCESS_KEY_ID, ...), never here.
    db_storage_options: dict[str, str] = Field(default_factory=dict)

    llm: Literal["offline", "anthropic", "openai"] | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_timeout_s: Positive = 30.0
    llm_retries: Annotated[int, Field(ge=0)] = 3
    llm_retry_base_s: NonNegative = 0.5  # first backoff delay; doubles per retry
    llm_cache: bool = True
    llm_mode: str = "tools"  # instructor's mode for openai: tools, json or json_schema
    llm_max_tokens: Annotated[int, Field(ge=16)] | None = None  # per answer (openai); local: 512
    # the providers' own variable names, without the prefix
    anthropic_api_key: SecretStr | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    openai_api_key: SecretStr | None = Field(default=None, validation_alias="OPENAI_API_KEY")

    # int8 by issue 19's rule (docs/perf/embed-default.json): Pk within .005 of
    # fp32 on each dev set, LoCoMo recall too, 3.4x the turns/s; "minilm" is fp32
    embedder: Literal["minilm", "onnx-int8", "static", "hash"] = "onnx-int8"
    domain: Literal["general", "coding", "sre"] = "general"
    # cross-machine exclusion of one user's consolidations: "prefect" takes a
    # Prefect global concurrency slot per user. It needs `prefect server start`:
    # the temporary API runs no lease repossessor, so a killed holder's slot
    # would never come back. "local": the file lock and the checkpoint check.
    user_slot: Literal["local", "prefect"] = "local"

    max_turn_chars: Annotated[int, Field(ge=1)] = 200_000
    # the API and MCP servers consolidate a user this many seconds after the
    # user's last write (debounced), and drain the hooks' spool; 0: only on request
    auto_consolidate_s: NonNegative = 30.0
    # ... and at the latest this long after the first write it has not read,
    # however often the user writes (an agent's stream may never pause)
    auto_consolidate_max_s: NonNegative = 300.0
    # users consolidated at once in one flow run: each holds its working set, so
    # memory grows with this; on 2 cores more threads bought no speed offline
    # (a network model waits on I/O: raise it there)
    user_threads: Annotated[int, Field(ge=1)] = 2
    # while a group of users scores and merges (Python, one core), embed the
    # next group's new turns on the cores the embedder would leave idle
    embed_ahead: bool = True
    # LanceDB's index + metadata caches, in MiB. A cache fills to its bound in
    # a long run (a folded index leaves its old pages in it): 512 held 138 MB
    # at 200k turns; 64 kept the search at 1M turns as fast (8.7 / 11.2 ms
    # p50 / p95 against 8.4 / 13.3), as it searches its working set, and so
    # did 32 (6.6 / 9.4 against 6.7 / 8.5 at 64), 25 MB less at 200k turns
    lance_cache_mb: Annotated[int, Field(ge=16)] = 32
    # the search's working set: searched users' turns, facts, reflections and
    # episodes in memory (about 1.9 KB a turn with 384-dim vectors), in MiB
    working_set_mb: Annotated[int, Field(ge=1)] = 2048
    batch_turns: Annotated[int, Field(ge=1)] = 2_000
    reflection_threshold: Positive = 150.0
    idle_minutes: Positive = DEFAULTS.idle_minutes  # fractions too: 0.1 is six seconds
    segment: DetectorConfig = Field(default_factory=DetectorConfig)
    shared_data: Path | None = None  # the public evaluation sets (bench/)
    models: Path | None = None  # where exported embedding models live (default: per machine)

    # alerts (deployments/automations.yaml): a poll that finds more raw turns
    # than this waiting on one stream emits `episodic.stream.lagging`; 0: off.
    # (1000 is far above a minute of one agent's turns: it fires on a backlog;
    # a bulk import of a long history fires it once)
    alert_lag_turns: Annotated[int, Field(ge=0)] = 1_000

    @field_validator("anthropic_api_key", "openai_api_key", mode="before")
    @classmethod
    def _blank_key_is_none(cls, v: Any) -> Any:
        return None if isinstance(v, str) and not v.strip() else v

    @field_validator("db_storage_options", mode="before")
    @classmethod
    def _no_credentials_in_options(cls, v: Any) -> Any:
        if isinstance(v, dict):
            for k in v:
                if any(word in str(k).lower() for word in _CREDENTIAL_WORDS):
                    raise ValueError(
                        f"{k!r} is a credential: set it in the provider's own variable "
                        "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)"
                    )
            # "allow_http": true in JSON means "true" to LanceDB
            return {k: str(x).lower() if isinstance(x, bool) else x for k, x in v.items()}
        return v

    @field_validator("segment", mode="before")
    @classmethod
    def _known_detector_keys(cls, v: Any) -> Any:
        if isinstance(v, dict):
            unknown = sorted(set(v) - {f.name for f in fields(DetectorConfig)})
            if unknown:
                raise ValueError(f"unknown detector setting {unknown[0]!r}")
        return v

    @model_validator(mode="after")
    def _one_idle(self) -> Self:
        """One idle threshold: the poll's gate and the detector read the same."""
        if "idle_minutes" in self.model_fields_set:
            self.segment = replace(self.segment, idle_minutes=self.idle_minutes)
        else:
            self.idle_minutes = self.segment.idle_minutes
        return self

    @property
    def database_uri(self) -> str:
        return self.db_uri or str(self.home / "lancedb")

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def models_dir(self) -> Path:
        """Locally exported or distilled embedding models: once per machine
        (they derive from the packaged weights alone, not from a home's data),
        under EPISODIC_MODELS or the user's cache folder."""
        if self.models is not None:
            return self.models
        cache = os.environ.get("XDG_CACHE_HOME")
        return (Path(cache) if cache else Path.home() / ".cache") / "episodic" / "models"

    def llm_kind(self) -> Literal["offline", "anthropic", "openai"]:
        """Offline unless asked for, or a key is present for a network provider."""
        if self.llm:
            return self.llm
        if self.anthropic_api_key is not None:
            return "anthropic"
        return "offline"

    def api_key(self) -> SecretStr | None:
        kind = self.llm_kind()
        return {"anthropic": self.anthropic_api_key, "openai": self.openai_api_key}.get(kind)


def load_settings() -> Settings:
    """The settings of the environment; a ConfigError names the first bad one."""
    try:
        return Settings()
    except ValidationError as e:
        raise config_error(e) from None
    except SettingsError as e:  # a JSON value that does not parse; its text is not echoed
        field = str(e).split('"')[1] if str(e).count('"') >= 2 else "settings"
        raise ConfigError(f"{PREFIX}{field.upper()}", "is not valid JSON") from None


def config_error(e: ValidationError) -> ConfigError:
    """One line for the first invalid setting: its variable, value and rule."""
    first = e.errors(include_url=False)[0]
    field = "__".join(str(p) for p in first["loc"]) if first["loc"] else "settings"
    value = repr(first.get("input"))
    value = value if len(value) <= 60 else value[:57] + "..."
    reason = str(first["msg"]).replace("\n", " ").replace("Input should be", "must be")
    if first["type"] in ("finite_number", "greater_than", "greater_than_equal"):
        reason += " (a finite number)" if "finite" not in reason else ""
    if first["type"] == "value_error":  # a whole group (EPISODIC_SEGMENT__*) checked together
        reason = str(first.get("ctx", {}).get("error", reason))
        if isinstance(first.get("input"), dict):
            return ConfigError(f"{PREFIX}{field.upper()}__*", reason)
    name = field.upper() if field.upper().endswith("_API_KEY") else f"{PREFIX}{field.upper()}"
    return ConfigError(name, f"{reason}, got {value}")


def crashpoint_spec() -> str | None:
    """EPISODIC_CRASHPOINT, the test hook of `episodic.crashpoints`: read at each
    point (cheaply, not through Settings) so a test can arm it at any time."""
    return os.environ.get(f"{PREFIX}CRASHPOINT") or None


def apply_prefect_env(*, quiet: bool = False) -> None:
    """The environment of a process episodic starts (the CLI, tests); call
    before prefect is imported. A value the user set is kept. Importing a
    module never calls this: only entry points do."""
    home = HomeSettings().home
    os.environ.setdefault("PREFECT_HOME", str(home / "prefect"))
    try:
        Path(os.environ["PREFECT_HOME"]).expanduser().mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # Prefect reports it; an unwritable home is the user's to fix
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    prefect_defaults(quiet=quiet)


def prefect_defaults(*, quiet: bool = False) -> None:
    """What episodic wants of Prefect in any process, the Python face's too (on
    first use of `episodic.Memory`; a host's own process keeps its Prefect
    home and everything else). A value the user set is kept."""
    # the 20 s default timed out on a loaded 2-core machine
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    if quiet:
        # the terminal hears warnings only; a run's log still reaches the
        # Prefect UI (a logger level of WARNING dropped it before the API's handler)
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
