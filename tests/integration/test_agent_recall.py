"""Guard for recall on an agent's stream (issue 31): twenty questions about
the demo transcript, written blind by a helper agent shown only the
transcript (`episodic/bench/agent_questions.json`). On 2026-12-07 the
shipped search read MRR .618, hit@1 .50, hit@5 .75 (questions about the
user: MRR .812); without "the user" read as a party of the stream, .487 /
.30 / .75 (the user's .483); before that day's two changes, .467 / .25 /
.75. The floors sit below the shipped figures, above those without."""

from __future__ import annotations

from pathlib import Path

from episodic.bench.agent_recall import run_agent_recall


def test_the_answer_ranks_near_the_top_on_the_agent_transcript(
    tmp_path: Path, prefect_harness: None
) -> None:
    res = run_agent_recall(workdir=tmp_path / "agent")
    assert res["n_questions"] == 20
    firsts = [(q["q"][:50], q["first"]) for q in res["questions"]]
    assert res["mrr"] >= 0.55, firsts
    assert res["hit_at_1"] >= 0.40, firsts
    assert res["by_about"]["user"]["mrr"] >= 0.70, firsts
