"""Settings is the one reader of the environment: detector thresholds,
EPISODIC_IDLE_MINUTES and the provider keys all arrive through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from episodic.config import HomeSettings, Settings, load_settings
from episodic.errors import ConfigError
from episodic.segment.config import DetectorConfig


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "EPISODIC_LLM", "EPISODIC_IDLE_MINUTES"):
        monkeypatch.delenv(name, raising=False)


def test_detector_defaults_come_from_detector_config() -> None:
    s = Settings()
    assert s.segment == DetectorConfig()
    assert s.idle_minutes == DetectorConfig().idle_minutes


def test_nested_detector_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_SEGMENT__MAX_TURNS", "7")
    monkeypatch.setenv("EPISODIC_SEGMENT__SEMANTIC_THRESHOLD", "0.9")
    monkeypatch.setenv("EPISODIC_SEGMENT__CENTER", "false")
    seg = load_settings().segment
    assert (seg.max_turns, seg.semantic_threshold, seg.center) == (7, 0.9, False)
    assert seg.hazard_lambda == DetectorConfig().hazard_lambda


def test_idle_minutes_takes_fractions_and_reaches_the_detector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EPISODIC_IDLE_MINUTES", "0.1")
    s = load_settings()
    assert s.idle_minutes == s.segment.idle_minutes == 0.1
    monkeypatch.delenv("EPISODIC_IDLE_MINUTES")
    monkeypatch.setenv("EPISODIC_SEGMENT__IDLE_MINUTES", "2.5")
    s = load_settings()
    assert s.idle_minutes == s.segment.idle_minutes == 2.5
    monkeypatch.setenv("EPISODIC_IDLE_MINUTES", "4")  # the documented name wins
    assert load_settings().segment.idle_minutes == 4.0
    assert Settings(idle_minutes=0.25).segment.idle_minutes == 0.25


@pytest.mark.parametrize(
    ("name", "value", "names"),
    [
        ("EPISODIC_SEGMENT__MAX_TURNS", "many", "EPISODIC_SEGMENT__MAX_TURNS"),
        ("EPISODIC_SEGMENT__MAX_TURNS", "0", "EPISODIC_SEGMENT__*: max_turns"),
        ("EPISODIC_SEGMENT__MAXTURNS", "3", "unknown detector setting 'maxturns'"),
        ("EPISODIC_SEGMENT__CUT_THRESHOLD", "nan", "cut_threshold"),
        ("EPISODIC_IDLE_MINUTES", "0", "EPISODIC_IDLE_MINUTES"),
    ],
)
def test_a_bad_detector_setting_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, names: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as e:
        load_settings()
    assert names in str(e.value) and "\n" not in str(e.value)


def test_keys_through_settings_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().llm_kind() == "offline" and Settings().api_key() is None
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    s = Settings()
    assert s.llm_kind() == "anthropic"
    key = s.api_key()
    assert key is not None and key.get_secret_value() == "sk-ant-secret"
    assert "sk-ant-secret" not in repr(s)
    monkeypatch.setenv("EPISODIC_LLM", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-oa")
    key = Settings().api_key()
    assert key is not None and key.get_secret_value() == "sk-oa"
    monkeypatch.setenv("OPENAI_API_KEY", "  ")  # blank is no key
    assert Settings().api_key() is None


def test_home_declared_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EPISODIC_HOME", str(tmp_path))
    assert HomeSettings().home == Settings().home == tmp_path
    # exported models derive from the packaged weights alone: once per machine
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert Settings().models_dir == tmp_path / "cache" / "episodic" / "models"
    monkeypatch.setenv("EPISODIC_MODELS", str(tmp_path / "m"))
    assert Settings().models_dir == tmp_path / "m"
