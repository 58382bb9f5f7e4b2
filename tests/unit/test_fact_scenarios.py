"""The fact scenario suite (episodic/bench/fact_cases.py) through the offline extractor
and the real merge (`extract_facts` + `decide`, offline provider): the
issue 16 targets, and the misses named when they are not met."""

from __future__ import annotations

import json

from episodic.bench.fact_cases import CASES, HELD_OUT
from episodic.bench.fact_scenarios import run_suite


def test_suite_has_enough_cases_over_every_topic() -> None:
    assert len(CASES) + len(HELD_OUT) >= 40
    topics = {c.topic for c in CASES}
    assert {"location", "work", "family", "pets", "preferences", "tools", "plans"} <= topics
    assert "corrections" in topics and "negation" in topics


def test_offline_suite_meets_targets() -> None:
    # the cases the rules were tuned on, and the first held-out set (issue 16 targets)
    report = run_suite(cases=[c for c in CASES + HELD_OUT if c.written in ("after", "held-out")])
    detail = json.dumps(report["failures"], indent=1)
    assert report["recall"] >= 0.90, detail
    assert report["wrong_supersessions"] == 0, detail
    assert report["assistant_facts"] == 0, detail
    assert report["precision"] >= 0.90, detail


def test_the_issue_sentences() -> None:
    """The three sentences the issue found broken, as one user's history."""
    from episodic.bench.fact_cases import Case, U

    case = Case(
        "issue-16",
        "location",
        [
            [(U, "Hi! Quick intro: I live in Paris and I work as a data engineer.")],
            [(U, "Reminder for you: I live in Paris.")],
            [(U, "Big news: I moved to Berlin last month, so I live in Berlin now.")],
            [(U, "I always want small PRs with squash merges")],
        ],
        active=["lives in berlin", "works as a data engineer", "small prs with squash merges"],
        superseded=["lives in paris"],
        absent=["paris"],
    )
    report = run_suite(cases=[case])
    assert report["recall"] == 1.0 and report["wrong_supersessions"] == 0, report["failures"]


def test_cases_written_before_their_rules_are_reported_apart() -> None:
    """Issue 28: the cases written before any rule handled them are scored on
    their own, and so is the second held-out batch (written before the issue
    28 rules, never tuned on; its two misses, an unlisted relation and job,
    were relabelled `after` when the vocabularies were widened with them in
    view). The floors are a little under what the rules reach (before: recall
    1.0, precision .929 over 22 cases; held-out-2: 1.0 / 1.0 over 12), so a
    regression shows; the issue's target is recall >= .90, precision >= .95."""
    from episodic.bench.fact_scenarios import run_by_written

    groups = run_by_written()
    assert set(FLOORS) | {"after", "held-out"} <= set(groups)
    for name, (recall, precision) in FLOORS.items():
        group = groups[name]
        detail = json.dumps(group["failures"], indent=1)
        assert group["cases"] >= 12, name
        assert group["wrong_supersessions"] == 0, detail
        assert group["recall"] >= recall, detail
        assert group["precision"] >= precision, detail


# (recall, precision) floors per `written` group, a little under what the rules
# reach (2026-12-03: before 1.0 / 1.0; held-out-2 1.0 / 1.0; held-out-3, blind,
# tuned on after its first measurement, .56 / 1.0; held-out-4, blind, measured
# once at .45 / .63 and then tuned on, .74 / .75; held-out-5, blind, measured
# once at .30 / .375 (old rules .20 / .31), then tuned on (issue 28 item 4),
# 1.0 / .94; held-out-6, blind, measured once at .44 / .79 (old rules .15 / .60),
# then tuned on, 1.0 / 1.0; held-out-7, blind, written before the held-out-5/6
# rules and measured once after them, never tuned on: .234 / .588, where the
# rules before them read .213 / .60; 2026-12-05, with chat spelling spelled
# out ("im", "dont") and the other rules of that day, none written with it in
# view: .277 / .632; 2026-12-06, after the held-out-8 rules: .298 / .619);
# held-out-8, blind, measured once as written at .27 / .56, then tuned on: .73 / .74;
# held-out-9, blind, measured once after that round at .17 / .43, then chose
# the limits of the first-person fallback (`facts/generic.py`): .20 / .46;
# held-out-7, untouched, .298 / .619 after both; 2026-12-06 (later), a rules
# round on held-out-9: .74 / .85 there, held-out-7 .40 / .71 (never tuned on;
# one case read to fix a wrong supersession the round caused), held-out-4
# .82 / .82; held-out-10, blind, measured before and after that round: .17 /
# .70, then .17 / .58 (never tuned on); a last round on the misses of -3, -4
# and -8 (devices, "that's where I live", a slip corrected in its episode):
# -3 .75 / .93, -4 .95 / .94, -8 .82 / .79, held-out-10 .17 / .54 (a phone
# named in passing and never seen replaced); held-out-11, blind, measured on
# the morning's rules at .23 / .40 and after those rounds at .26 / .39, then
# tuned on: .73 / .68 (held-out-3 .75 / .88: one more right fact it does
# not list; held-out-10 .20 / .50); held-out-12, blind, measured once on the
# morning's rules (.26 / .33) and once after the held-out-11 round (.40 / .46),
# never tuned on; held-out-13 and -14, blind, measured once as written (.47 /
# .54, .43 / .50), then tuned on (.92 / .82, .93 / .64); held-out-15, blind,
# as written .47 / .50 and .47 / .49 after that round, then tuned on (.74 /
# .63); held-out-16, blind, .51 / .50 on the morning's rules and .59 / .55
# after those rounds, never tuned on (held-out-7 .49 / .74); held-out-17,
# blind, .55 / .50 on the morning's rules and .575 / .55 after them, with one
# wrong supersession found and fixed; held-out-18, blind, measured once as
# written on 28ef25c (.656 / .536), never tuned on.
FLOORS = {
    "before": (0.95, 0.95),
    "held-out-2": (0.90, 0.90),
    "held-out-3": (0.72, 0.85),
    "held-out-4": (0.90, 0.90),
    "held-out-5": (0.95, 0.90),
    "held-out-6": (0.95, 0.95),
    "held-out-7": (0.46, 0.70),
    "held-out-8": (0.80, 0.76),
    "held-out-9": (0.70, 0.80),
    "held-out-10": (0.15, 0.45),
    "held-out-11": (0.70, 0.65),
    "held-out-12": (0.37, 0.43),
    "held-out-13": (0.88, 0.78),
    "held-out-14": (0.90, 0.60),
    "held-out-15": (0.70, 0.58),
    "held-out-16": (0.55, 0.50),
    "held-out-17": (0.55, 0.50),
    "held-out-18": (0.62, 0.50),
}
