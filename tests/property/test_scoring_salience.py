"""The offline salience uses the whole scale and never punishes what makes an episode matter."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import fields

from hypothesis import given, settings
from hypothesis import strategies as st

from episodic.salience import EpisodeFeatures, EpisodeTurn, episode_features, offline_salience

# one template per feature the scorer counts, plus filler
ERROR = EpisodeTurn("tool", "tool-error", "Traceback: KeyError 'user'")
CORRECTION = EpisodeTurn("user", "user-correction", "That is not it, use the other config.")
DECISION = EpisodeTurn("assistant", "assistant-answer", "We decided to cache the tokens.")
FACT = EpisodeTurn("user", "user-question", "I work nights and my team is in Berlin.")
QUESTION = EpisodeTurn("user", "user-question", "Which file holds the settings?")
EVENT = EpisodeTurn("user", "user-question", "The production outage is urgent.")
FILLER = [
    EpisodeTurn("assistant", "assistant-answer", "Here is the file you asked for."),
    EpisodeTurn("tool", "tool-call", "cat settings.toml"),
    EpisodeTurn("tool", "tool-success", "ok"),
]
KINDS = [ERROR, CORRECTION, DECISION, FACT, QUESTION, EVENT]


def synthetic_episode(rng: random.Random) -> list[EpisodeTurn]:
    """From a two-turn exchange to a long, eventful session, in random order."""
    if rng.random() < 0.05:
        return [QUESTION]
    intensity = rng.random() ** 1.5  # more quiet episodes than eventful ones
    turns = [QUESTION, FILLER[0]]
    for _ in range(rng.randint(0, 25)):
        turns.append(rng.choice(KINDS) if rng.random() < intensity else rng.choice(FILLER))
    rng.shuffle(turns)
    return turns


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_scores_cover_the_scale(seed: int) -> None:
    rng = random.Random(seed)
    scores = Counter(
        offline_salience(episode_features(synthetic_episode(rng)))[0] for _ in range(400)
    )
    assert set(range(1, 10)) <= set(scores), sorted(scores)
    # not bunched in the middle
    assert sum(scores[s] for s in (5, 6, 7)) < 0.6 * 400


# every count the scorer weighs (the fields but size and novelty), from one range
COUNTS = [
    f.name for f in fields(EpisodeFeatures) if f.name not in ("n_turns", "n_chars", "novelty")
]
features = st.builds(
    EpisodeFeatures,
    n_turns=st.integers(min_value=0, max_value=200),
    n_chars=st.integers(min_value=0, max_value=100_000),
    novelty=st.none() | st.floats(min_value=0.0, max_value=1.0),
    **dict.fromkeys(COUNTS, st.integers(min_value=0, max_value=30)),
)


@given(features, st.sampled_from(["tool_errors", "corrections", "decisions", "significant"]))
def test_more_of_a_feature_never_lowers_the_score(f: EpisodeFeatures, name: str) -> None:
    more = EpisodeFeatures.from_mapping({**f.as_dict(), name: getattr(f, name) + 1})
    score, _ = offline_salience(f)
    assert 1 <= score <= 10
    assert offline_salience(more)[0] >= score


@given(
    st.lists(st.sampled_from([*KINDS, *FILLER]), min_size=1, max_size=30),
    st.sampled_from([ERROR, CORRECTION, DECISION]),
    st.integers(min_value=0, max_value=30),
)
def test_adding_an_error_correction_or_decision_turn_never_lowers_the_score(
    turns: list[EpisodeTurn], extra: EpisodeTurn, at: int
) -> None:
    before = offline_salience(episode_features(turns))[0]
    after = offline_salience(episode_features([*turns[:at], extra, *turns[at:]]))[0]
    assert after >= before
