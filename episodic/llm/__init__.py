"""The LLM layer: one protocol, offline / fake / Anthropic / OpenAI-compatible providers.

Nothing here imports anthropic, openai or instructor; the network providers
import them on their first call.
"""

from episodic.llm.base import LLMProvider, Message, OfflineAnswerable, Usage
from episodic.llm.cache import CachedProvider, ResponseCache
from episodic.llm.factory import make_provider
from episodic.llm.fake import FakeProvider
from episodic.llm.fallback import OFFLINE, OFFLINE_FALLBACK, Answer, structured_or_offline
from episodic.llm.offline import OfflineProvider
from episodic.llm.retry import RetryPolicy

__all__ = [
    "OFFLINE",
    "OFFLINE_FALLBACK",
    "Answer",
    "CachedProvider",
    "FakeProvider",
    "LLMProvider",
    "Message",
    "OfflineAnswerable",
    "OfflineProvider",
    "ResponseCache",
    "RetryPolicy",
    "Usage",
    "make_provider",
    "structured_or_offline",
]
