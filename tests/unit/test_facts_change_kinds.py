"""The offline extractor on the issue's kinds of change (issue 28, the
held-out-13/14/15 rounds): corrections said the ways people say them, a
choice changed, a thing replaced by one of its kind, facts that end, names
and homes said in passing, and the junk each rule must not make."""

from __future__ import annotations

import pytest

from episodic.bench.fact_cases import Case, U
from episodic.bench.fact_scenarios import run_case
from episodic.embed.hash import HashEmbedder
from episodic.facts import offline_extract
from episodic.llm.offline import OfflineProvider
from tests.unit.test_facts_support import turn


@pytest.mark.parametrize(
    ("sentence", "facts"),
    [
        # corrections: several words, a cleft, a month, parallel clauses, a reason between
        (
            "sorry i meant product manager not project manager lol",
            ["User corrected project manager to product manager"],
        ),
        (
            "sorry, its pistachios im allergic to not cashews",
            ["User corrected cashews to pistachios"],
        ),
        ("its pistachios im allergic to not cashews", []),  # no slip owned up to
        (
            "my allergy is to tree nuts, not peanuts (peanuts are fine for me), sorry",
            ["User corrected peanuts to tree nuts"],
        ),
        ("the Ljubljana trip is in June, not May, sorry", ["User corrected May to June"]),
        ("it was Monday, not Tuesday", []),
        ("If not Thursday, I'd like Friday, sorry", []),
        (
            "I told you I live in Aarhus, but actually I live in Odense",
            ["User corrected Aarhus to Odense"],
        ),
        (
            "i keep saying heidelberg bc thats where the office is but my apartment is "
            "actually in mannheim",
            ["User corrected heidelberg to mannheim", "User's apartment is actually in mannheim"],
        ),
        (
            "i said juniper last time, juniper is my neighbors dog, mine is figaro",
            ["User corrected juniper to figaro"],
        ),
        ("were doing ljubljana instead of oaxaca", ["User changed oaxaca to ljubljana"]),
        # a name after "at" is where; the job before it is what is contrasted
        (
            "sorry, I'm the pastry chef at Ostra Verde, not the sous chef",
            ["User corrected sous chef to pastry chef", "User works as the pastry chef"],
        ),
        ("he works at Siemens, not Bosch", ["User corrected Bosch to Siemens"]),
        # someone else's slip, or "it" for a person, corrects none of the user's facts
        ("my sister said paris was lovely. it's actually lyon where she lives", []),
        ("She said she likes tea, but actually she likes coffee", []),
        ("that's correct, I want tea not coffee", ["User wants tea"]),
        # names and homes in passing
        ("my dog juniper ate half a sock", ["User has a dog named Juniper"]),
        ("for my bf teodor, hes into vinyl", ["User's boyfriend is Teodor"]),
        ("My wife, Ingrid, is a vet", ["User's wife is Ingrid"]),
        ("gift for my wife tomorrow, any ideas", []),
        ("We live in Utrecht", ["User lives in Utrecht"]),
        ("a vegetable bed on my balcony in Ghent", ["User lives in Ghent"]),
        ("me and my flatmate in leith keep fighting", ["User lives in leith"]),
        ("a parcel from here in Hobart", ["User lives in Hobart"]),
        ("I moved out of my flat in Leith", ["User moved out of their flat in Leith"]),
        (
            "moved out of the leith flat, staying w my parents in stirling til i find somewhere",
            ["User moved out of the leith flat", "User is staying with their parents in stirling"],
        ),
        ("I want to stay living in Leeds", ["User lives in Leeds"]),
        ("I would like to stay in the east", []),
        # replacements, endings, habits
        (
            "I have ditched the Garmin for a Coros Pace 3 (the battery lasts far longer), "
            "so how do I load workouts?",
            ["User replaced the Garmin with a Coros Pace 3"],
        ),
        ("I was made redundant from Marlowe & Keane", ["User no longer works at Marlowe & Keane"]),
        ("went back to regular whole milk", ["User switched to regular whole milk"]),
        ("went back to work after lunch", []),
        ("had to drop the pottery class", ["User dropped the pottery class"]),
        ("had to cancel the deploy", []),
        ("im NOT allergic to penicillin after all", ["User is not allergic to penicillin"]),
        (
            "I'm not actually employed by Halvorsen Marine",
            ["User does not work at Halvorsen Marine"],
        ),
        ("pescatarian here, need a lunch", ["User is pescatarian"]),
        (
            "I take the regional train from Zug to Lucerne",
            ["User takes the regional train from Zug to Lucerne"],
        ),
        ("I do all my editing in Sublime Text", ["User uses Sublime Text"]),
        ("I'm writing an email to my boss", []),
        (
            "I am leaving for a conference in Tallinn",
            ["User is travelling to a conference in Tallinn"],
        ),
        ("I'm leaving for work", []),
        ("just my e-bike and the bus", ["User has an e-bike"]),
        # a new clause about someone else after a comma is cut; chat's short weekdays
        (
            "welp. got laid off from brightwave on tues, they cut the whole qa team",
            ["User no longer works at brightwave on tues"],
        ),
        (
            "my dad is 63 and still working as an electrician, his knees are shot",
            ["User's dad is 63 and still working as an electrician"],
        ),
        # chat about this chat: what the user will do with the answer, or to the assistant
        ("I got mixed up last time", []),
        ("I'll definitely add it to my list. Thanks!", []),
        ("I'll definitely keep your advice in mind when I make macarons", []),
        ("I'll talk to you tomorrow", []),
        ("I'll definitely have a blast", []),
        ("I will have to look into that, it could be fun", []),
        ("I'll be moving to Lyon in March", ["User will be moving to Lyon in March"]),
        # a participle after "have" / "got" is no possession; an adverb is no verb
        ("i have learned alot", []),
        ("I just got robbed and I need help", []),
        ("I have red hair", ["User has red hair"]),
        ("I generally don't get crazy competitive over them", []),
        ("I got promoted at work!", []),
        ("I got promoted to team lead", ["User works as team lead"]),
        ("i never got to episode 2 myself", ["User never got to episode 2 themselves"]),
        ("so I joined in", []),
        ("always been interested in different cultures", []),
        ("always answer in French", ["User wants the assistant to always answer in French"]),
        ("I'll keep doing my best", []),
        ("Always here to cheer you on", []),
        ("I ditched the gym for good", ["User ditched the gym for good"]),
        ("I got the idea from a fashion mag", []),
        ("i got into trouble", []),
        ("We have a blast together", []),
        ("I finally got around to organizing my bookshelf", []),
        (
            "I used to do karate when I was younger",
            ["User used to do karate when they were younger"],
        ),
        (
            "from now on, always tell me when you are unsure",
            ["User wants the assistant to always tell them when you are unsure"],
        ),
        # a fact that speaks to the listener is about this chat; a clause to them is cut
        ("I love when you try something new", []),
        ("I'll keep ya posted", []),
        ("I got back from a run", []),
        ("I first watched it around 3 years ago", []),
        ("My name is Emilia, nice to meet you Kevin", ["User's name is Emilia"]),
        ("good , i am married , are you married", ["User is married"]),
        ("i am married to my wife of 32 years", ["User is married to their wife of 32 years"]),
        (
            "forget that I told you about the diabetes",
            ["User asked to forget that they told you about the diabetes"],
        ),
        ("I have not been, actually", []),
        ("I will contact the harbour one", []),
    ],
)
def test_the_change_kinds_round(sentence: str, facts: list[str]) -> None:
    assert [f for f, _ in offline_extract([turn(1, sentence)])] == facts


def _history(*episodes: str) -> dict[str, list[str]]:
    """The active and superseded facts after one user turn per episode."""
    case = Case("h", "other", [[(U, text)] for text in episodes])
    result = run_case(case, OfflineProvider(), HashEmbedder())
    return {"active": result.active, "superseded": result.superseded}


def test_a_correction_rewrites_the_stored_fact_before_its_restatement() -> None:
    got = _history(
        "I am a data analyst at an insurer in Cork.",
        "Sorry, I described myself wrongly: my title is actually actuarial analyst, "
        "not data analyst.",
    )
    assert got["superseded"] == ["User works as a data analyst"]
    assert "User works as an actuarial analyst" in got["active"]
    got = _history(
        "my cat Quince keeps shredding the sofa",
        "a small correction from last time: my cat's name is Quincy, not Quince.",
    )
    assert got["superseded"] == ["User has a cat named Quince"]
    assert "User has a cat named Quincy" in got["active"]


def test_a_choice_changed_rewrites_the_plan_and_a_kind_replaces_its_kind() -> None:
    got = _history(
        "planning a trip to oaxaca in november w my partner",
        "change of plans, were doing ljubljana instead of oaxaca. still november.",
    )
    assert got["active"] == ["User is planning a trip to ljubljana in november with their partner"]
    got = _history("i use oat milk btw", "went back to regular whole milk, the oat was bloating me")
    assert got == {
        "active": ["User switched to regular whole milk"],
        "superseded": ["User uses oat milk"],
    }
    got = _history("I always book aisle seats.", "plot twist, i now prefer window seats.")
    assert got["superseded"] == ["User books aisle seats"]


def test_meat_again_ends_the_diet_and_a_denied_allergy_ends_the_allergy() -> None:
    got = _history(
        "pescatarian here, need a lunch",
        "so after four years of being pescatarian I've started eating chicken again",
    )
    assert got == {"active": ["User eats chicken"], "superseded": ["User is pescatarian"]}
    got = _history("I'm allergic to penicillin.", "im NOT allergic to penicillin after all.")
    assert got["superseded"] == ["User is allergic to penicillin"]


def test_a_denied_state_ends_only_what_it_denies() -> None:
    from episodic.facts.negation import is_negation_of

    allergy = "User is allergic to penicillin"
    assert is_negation_of("User is not allergic to penicillin", allergy)
    # doubt is no ending: the city stays
    assert not is_negation_of("User is not sure about Berlin", "User lives in Berlin")
