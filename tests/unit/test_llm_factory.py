"""Choosing the provider from settings; secrets stay out of reprs; imports stay light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from episodic.config import Settings
from episodic.llm import CachedProvider, OfflineProvider, make_provider
from episodic.llm.anthropic_provider import AnthropicProvider
from episodic.llm.openai_provider import OLLAMA_BASE_URL, OpenAIProvider

KEY = "sk-ant-secret-0123456789"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "EPISODIC_LLM_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name in ("EPISODIC_LLM", "EPISODIC_LLM_MODEL", "EPISODIC_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_offline_without_a_key(tmp_path: Path) -> None:
    provider = make_provider(Settings(home=tmp_path))
    assert isinstance(provider, OfflineProvider)


def test_anthropic_when_a_key_is_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    provider = make_provider(Settings(home=tmp_path, llm_timeout_s=7, llm_retries=4))
    assert isinstance(provider, CachedProvider)
    assert provider.cache.cache_dir == tmp_path / "cache" / "llm"
    inner = provider.inner
    assert isinstance(inner, AnthropicProvider)
    assert (inner.model, inner.timeout_s, inner.reasks, inner.policy.retries) == (
        "claude-haiku-4-5",
        7,
        4,
        4,
    )
    for text in (repr(provider), repr(inner), str(vars(inner))):
        assert KEY not in text


def test_anthropic_asked_for_without_a_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        make_provider(Settings(home=tmp_path, llm="anthropic"))


def test_openai_compatible_defaults_to_local_ollama(tmp_path: Path) -> None:
    provider = make_provider(Settings(home=tmp_path, llm="openai", llm_cache=False))
    assert isinstance(provider, OpenAIProvider)
    assert (provider.model, provider.base_url, provider.mode) == (
        "llama3.1",
        OLLAMA_BASE_URL,
        "tools",
    )


def test_openai_compatible_with_base_url_model_and_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_LLM_MODE", "json")
    settings = Settings(
        home=tmp_path,
        llm="openai",
        llm_model="qwen2.5:7b",
        llm_base_url="http://gpu-box:8000/v1",
        llm_cache=False,
    )
    provider = make_provider(settings)
    assert isinstance(provider, OpenAIProvider)
    assert (provider.model, provider.base_url, provider.mode) == (
        "qwen2.5:7b",
        "http://gpu-box:8000/v1",
        "json",
    )


def test_openai_with_a_key_and_no_base_url_is_api_openai(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret-42")
    provider = make_provider(Settings(home=tmp_path, llm="openai", llm_cache=False))
    assert isinstance(provider, OpenAIProvider)
    assert (provider.model, provider.base_url) == ("gpt-4o-mini", None)
    assert "sk-openai-secret-42" not in repr(provider)


def test_bad_mode_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_LLM_MODE", "yaml")
    with pytest.raises(ValueError, match="EPISODIC_LLM_MODE"):
        make_provider(Settings(home=tmp_path, llm="openai"))


def test_bad_parameters_raise_at_construction() -> None:
    with pytest.raises(ValueError):
        AnthropicProvider(api_key="")
    with pytest.raises(ValueError):
        AnthropicProvider(api_key="k", timeout_s=0)
    with pytest.raises(ValueError):
        OpenAIProvider(retries=-1)
    with pytest.raises(ValueError):
        OpenAIProvider(mode="xml")  # type: ignore[arg-type]


def test_importing_the_llm_layer_loads_no_sdk() -> None:
    code = (
        "import sys, episodic.llm, episodic.llm.factory, episodic.llm.anthropic_provider, "
        "episodic.llm.openai_provider\n"
        "heavy = [m for m in ('anthropic', 'openai', 'instructor', 'httpx2') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == ""
