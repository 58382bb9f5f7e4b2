"""The LLM layer: one protocol, offline / fake / Anthropic / OpenAI-compatible providers.

Nothing here imports anthropic, openai or instructor; the network providers
import them on their first call. The names below load with the first use of
each (PEP 562): a command that asks no model (`episodic status`) does not pay
for the providers' modules and tenacity.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, typed; `X as X` marks each as this package's
    from episodic.llm.base import LLMProvider as LLMProvider
    from episodic.llm.base import Message as Message
    from episodic.llm.base import OfflineAnswerable as OfflineAnswerable
    from episodic.llm.base import Usage as Usage
    from episodic.llm.cache import CachedProvider as CachedProvider
    from episodic.llm.cache import ResponseCache as ResponseCache
    from episodic.llm.factory import make_provider as make_provider
    from episodic.llm.fake import FakeProvider as FakeProvider
    from episodic.llm.fallback import OFFLINE as OFFLINE
    from episodic.llm.fallback import OFFLINE_FALLBACK as OFFLINE_FALLBACK
    from episodic.llm.fallback import Answer as Answer
    from episodic.llm.fallback import structured_or_offline as structured_or_offline
    from episodic.llm.offline import OfflineProvider as OfflineProvider
    from episodic.llm.retry import RetryPolicy as RetryPolicy

_HOME = {
    "LLMProvider": "base",
    "Message": "base",
    "OfflineAnswerable": "base",
    "Usage": "base",
    "CachedProvider": "cache",
    "ResponseCache": "cache",
    "make_provider": "factory",
    "FakeProvider": "fake",
    "OFFLINE": "fallback",
    "OFFLINE_FALLBACK": "fallback",
    "Answer": "fallback",
    "structured_or_offline": "fallback",
    "OfflineProvider": "offline",
    "RetryPolicy": "retry",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'episodic.llm' has no attribute {name!r}")
    return getattr(import_module(f"episodic.llm.{_HOME[name]}"), name)
