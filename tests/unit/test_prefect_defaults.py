"""What episodic asks of Prefect in a process: the Python face (on first use
of `episodic.Memory`) turns the temporary server's telemetry off, which
printed an error offline, and keeps Prefect's console to warnings; the log
level itself stays, so a run's log still reaches the Prefect UI. A value the
user set is kept, and the host's Prefect home is left alone."""

from __future__ import annotations

import os

import pytest

import episodic
from episodic.config import prefect_defaults

SET = (
    "PREFECT_SERVER_ANALYTICS_ENABLED",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS",
)
LEFT = ("PREFECT_HOME", "PREFECT_LOGGING_LEVEL", "HF_HUB_OFFLINE", "DO_NOT_TRACK")


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SET + LEFT:
        monkeypatch.delenv(name, raising=False)


def test_the_python_face_quiets_prefect_and_leaves_the_host_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _clear(monkeypatch)
    assert episodic.Memory is not None
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] == "WARNING"
    assert all(name not in os.environ for name in LEFT)


def test_a_value_the_user_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "INFO")
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "true")
    prefect_defaults(quiet=True)
    assert os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] == "INFO"
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "true"
    prefect_defaults(quiet=False)
    monkeypatch.delenv("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL")
    prefect_defaults(quiet=False)
    assert "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL" not in os.environ
