"""LLM faults (issue 8): a seeded random mix of faults over 200 calls per backend.

Timeouts, 429, 5xx, non-JSON bodies, malformed JSON answers and schema-invalid
answers, served by the stubs to the real SDKs from 8 threads. Every call must
end with a value (the model's, or the offline answer with the error recorded),
and the provider's token accounting must equal what the stub served.
"""

from __future__ import annotations

import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from episodic.llm import RetryPolicy, structured_or_offline
from episodic.llm.fallback import Answer as LLMAnswer
from tests.stubs.backends import BACKENDS, make_backend_provider, make_stub
from tests.stubs.rating import Rating
from tests.stubs.scripted import Action, Answer, Delay, Garbage, Status, Text

CALLS = 200
# Generous: an ordinary answer must never time out, even on a loaded 2-core box,
# or the tokens the stub served would be missing on the client's side. The
# cost of each timeout fault is divided by the WORKERS that wait in parallel.
TIMEOUT_S = 1.5
WORKERS = 8
FAULTS: list[tuple[str, float]] = [
    ("valid", 0.50),
    ("timeout", 0.05),
    ("429", 0.08),
    ("5xx", 0.10),
    ("garbage", 0.06),
    ("malformed", 0.08),
    ("invalid", 0.13),
]


def kind_of(action: Action) -> str:
    if isinstance(action, Delay):
        return "timeout"
    if isinstance(action, Status):
        return "429" if action.code == 429 else "5xx"
    if isinstance(action, Garbage):
        return "garbage"
    if isinstance(action, Text):
        return "malformed"
    return "valid" if 1 <= action.value["score"] <= 10 else "invalid"


def fault_mix(seed: int) -> tuple[random.Random, object]:
    rng = random.Random(seed)
    kinds = [k for k, _ in FAULTS]
    weights = [w for _, w in FAULTS]

    def next_action(n: int) -> Action:
        kind = rng.choices(kinds, weights)[0]
        tokens = {"input_tokens": rng.randint(50, 400), "output_tokens": rng.randint(5, 60)}
        score = rng.randint(1, 10)
        if kind == "valid":
            return Answer({"score": score, "rationale": f"r{n}"}, **tokens)
        if kind == "invalid":
            return Answer({"score": rng.choice([0, 11, 42]), "rationale": f"r{n}"}, **tokens)
        if kind == "malformed":
            return Text('{"score": ' + str(score) + ', "rationale": "cut', **tokens)
        if kind == "timeout":
            return Delay(TIMEOUT_S * 2, Answer({"score": score, "rationale": "late"}, **tokens))
        if kind == "429":
            return Status(429, {"retry-after": rng.choice(["0", "0.01", "2"])})
        if kind == "5xx":
            return Status(rng.choice([500, 502, 503, 529]))
        return Garbage()

    return rng, next_action


@pytest.mark.parametrize("backend", BACKENDS)
def test_fault_mix_every_call_ends_with_a_value(backend: str) -> None:
    _, next_action = fault_mix(seed=8)
    with make_stub(backend, default=next_action) as stub:  # type: ignore[arg-type]
        policy = RetryPolicy(
            retries=3, base_delay_s=0.001, max_delay_s=0.01, retry_after_cap_s=0.02
        )
        provider = make_backend_provider(
            backend, stub, timeout_s=TIMEOUT_S, retries=2, policy=policy
        )

        def one(i: int) -> LLMAnswer[Rating]:
            ask = [{"role": "user", "content": f"Rate episode {i}."}]
            return structured_or_offline(provider, ask, Rating, {"n_turns": i % 12})

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            answers = list(pool.map(one, range(CALLS)))

        injected = Counter(kind_of(a) for a in stub.actions)
        fell_back = [a for a in answers if a.fell_back]
        print(
            f"\n[{backend}] calls={CALLS} requests={len(stub.requests)} "
            f"faults={sum(v for k, v in injected.items() if k != 'valid')} {dict(injected)} "
            f"fallbacks={len(fell_back)} unscored=0 usage={provider.usage.as_dict()}"
        )

    # every call ends scored, by the model or by the recorded fallback
    assert len(answers) == CALLS
    assert all(isinstance(a.value, Rating) and 1 <= a.value.score <= 10 for a in answers)
    assert all(a.source in (provider.model, "offline-fallback") for a in answers)
    assert all(a.error for a in fell_back)
    assert all(a.error is None for a in answers if not a.fell_back)
    assert provider.usage.failures == len(fell_back)
    assert 0 < len(fell_back) < CALLS // 2

    # every kind of fault was actually served, more than a handful of times
    assert all(injected[kind] >= 5 for kind, _ in FAULTS), injected

    # the token accounting adds up against what the stub served
    assert provider.usage.calls == stub.served.answers
    assert provider.usage.input_tokens == stub.served.input_tokens
    assert provider.usage.output_tokens == stub.served.output_tokens
    assert provider.usage.calls == injected["valid"] + injected["invalid"] + injected["malformed"]
