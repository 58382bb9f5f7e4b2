"""Subject and slot of a fact, so the offline merge can see "same slot, new value".

A slot is (subject, attribute). The subject is "user" for facts about the
person ("I ...", "my ...", "User ...", "The user's ...") and "team" for facts
about their group ("we ...", "our ...", "Team ..."). Patterns, tried in order
on the text after the subject:

=============  =======================================  ==========================
attribute      matches                                  value
=============  =======================================  ==========================
residence      lives / is based / resides in X;         X
               moved / relocated (from A) to X
               (X not a known tool)
employer       works at / for X; joined X;               X
               is employed by X
occupation     works as (a) X; teaches X at a school       X (X teacher)
pet:NAME       has / owns a SPECIES named / called       SPECIES
               NAME; (possessive) SPECIES is named NAME
name           (possessive) name is X; is called X       X
origin         is from X                                 X
age            is N (years old)                          N
diet           is vegan / vegetarian / pescatarian ...   the diet
opinion:X      likes / loves / enjoys / prefers / wants  "+" or "-"
               (prefers a known tool: its CATEGORY)
               / hates / dislikes X (adverbs dropped)
tool-for:P     uses / switched to / migrated to X        X
               for P (X not a known tool)
CATEGORY       uses / switched to / migrated to /        the tool
               adopted X, X a known tool (database,
               cloud, ci, editor, language, os, ...)
tool:X         uses X, X unknown                         "used"
ATTR           (possessive) ATTR is / are X              X
=============  =======================================  ==========================

Each slot is taken to hold one value at a time, except that plain use of a
tool of a kind people combine (language, database, cache, search, frontend,
chat) is not exclusive: "uses Rust" does not replace "uses Python", while
"switched to Rust" does. A possessive attribute is split by the kind of
value ("sister is a nurse" and "sister is 30" are two slots). Values are cut
at time words and clauses ("Berlin last month" -> "berlin").
"""

from __future__ import annotations

import re
from typing import NamedTuple

from episodic.facts.normalize import normalize
from episodic.facts.when import MONTHS, SEASONS, WEEKDAYS


class Slot(NamedTuple):
    subject: str
    attribute: str


class SlotValue(NamedTuple):
    slot: Slot
    value: str
    # False when a second value may sit beside the first ("uses Python" and
    # "uses Rust"): a different value is then news, not a replacement
    exclusive: bool = True


# multiword names first so "google cloud" wins over "google"
_TOOLS: dict[str, str] = {
    "postgresql": "database", "postgres": "database", "mysql": "database",
    "mariadb": "database", "sqlite": "database", "mongodb": "database",
    "mongo": "database", "cassandra": "database", "dynamodb": "database",
    "oracle": "database", "sql server": "database", "mssql": "database",
    "cockroachdb": "database", "lancedb": "database", "duckdb": "database",
    "clickhouse": "database", "snowflake": "database", "bigquery": "database",
    "supabase": "database", "firestore": "database", "neo4j": "database",
    "redis": "cache", "memcached": "cache",
    "elasticsearch": "search", "opensearch": "search", "meilisearch": "search",
    "aws": "cloud", "gcp": "cloud", "google cloud": "cloud", "azure": "cloud",
    "digitalocean": "cloud", "heroku": "cloud",
    "jenkins": "ci", "github actions": "ci", "gitlab ci": "ci",
    "circleci": "ci", "travis": "ci", "buildkite": "ci",
    "vim": "editor", "neovim": "editor", "emacs": "editor", "vscode": "editor",
    "vs code": "editor", "pycharm": "editor", "intellij": "editor",
    "sublime": "editor", "cursor": "editor", "zed": "editor", "helix": "editor",
    "webstorm": "editor", "xcode": "editor", "android studio": "editor",
    "python": "language", "rust": "language", "golang": "language",
    "java": "language", "typescript": "language", "javascript": "language",
    "ruby": "language", "kotlin": "language", "scala": "language",
    "elixir": "language",
    "linux": "os", "ubuntu": "os", "debian": "os", "macos": "os",
    "windows": "os", "fedora": "os", "arch linux": "os",
    "kubernetes": "orchestrator", "k8s": "orchestrator", "nomad": "orchestrator",
    "jira": "tracker", "linear": "tracker", "asana": "tracker", "trello": "tracker",
    "slack": "chat", "discord": "chat",
    "react": "frontend", "vue": "frontend", "angular": "frontend", "svelte": "frontend",
}  # fmt: skip
# the devices a person has one of at a time, by kind ("my pixel 6" -> "an iphone 15")
DEVICES = {
    "phone": r"iphone|pixel|galaxy s\d*|samsung galaxy|oneplus|android phone|fairphone",
    "laptop": r"macbook|thinkpad|chromebook|surface laptop|xps",
    "tablet": r"ipad|surface pro|galaxy tab",
    "e-reader": r"kindle|kobo|remarkable|boox|pocketbook",
    "watch": r"apple watch|garmin|fitbit|coros|galaxy watch|amazfit|polar vantage",
}
DEVICE_WORD = "|".join(DEVICES.values())
_DEVICE_SLOT = re.compile(
    r"^(?:(?:has|have|just|recently|now|also|finally) )*(?:has|have|owns?|got|bought|uses?|using|"
    r"switched to|is on) (?:an? |the |a new |their )?(?:(?:19|20)\d\d )?"
    rf"(?P<v>{DEVICE_WORD})\b"
)
# kinds of tool people use several of at once
_COMBINED = frozenset({"language", "database", "cache", "search", "frontend", "chat"})
_TOOL_NAMES = sorted(_TOOLS, key=len, reverse=True)
# any known tool's name, as a word of a sentence ("my emacs", "for rust dev")
TOOL_WORD = r"(?:" + "|".join(re.escape(n) for n in _TOOL_NAMES) + r")(?![\w-])"
# spellings of one tool, so "postgres" and "PostgreSQL" are the same value
_ALIASES = {
    "postgresql": "postgres", "mongo": "mongodb", "vs code": "vscode",
    "k8s": "kubernetes", "golang": "go",
}  # fmt: skip

_SUBJECTS: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"^(?:the )?user'?s "), "user", True),
    (re.compile(r"^(?:the )?user "), "user", False),
    (re.compile(r"^my "), "user", True),
    (re.compile(r"^i'm "), "user", False),
    (re.compile(r"^i "), "user", False),
    (re.compile(r"^(?:our|the team'?s|team'?s) "), "team", True),
    (re.compile(r"^(?:we're|we are) "), "team", False),
    (re.compile(r"^(?:we|the team|team) "), "team", False),
)

_CUT = re.compile(
    r"\s+(?:since|now|anymore|last|this|next|ago|yesterday|today|recently|because|"
    r"but|and|with|when|after|before|as of|for now|instead)\b.*$"
    rf"|\s+(?:in|on|over|during|around) (?:the )?(?:{MONTHS}|{SEASONS}|"
    rf"weekend|{WEEKDAYS}|\d{{4}})\b.*$"
)
_BE = r"(?:is |am |are |'s |'m |'re )?"
_V = r"(?:(?:has |have |just |recently |now |also |finally )*)"

_RESIDENCE = (
    re.compile(rf"^{_V}{_BE}(?:lives?|living|resides?|based|located|staying) in (?P<v>.+)$"),
    re.compile(rf"^{_V}(?:moved|relocated|moving) (?:from .+? )?to (?P<v>.+)$"),
)
_EMPLOYER = (
    re.compile(rf"^{_V}{_BE}(?:works?|working|employed) (?:at|for|by) (?P<v>.+)$"),
    re.compile(rf"^{_V}joined (?P<v>.+)$"),
)
_OCCUPATION = re.compile(rf"^{_V}{_BE}(?:works?|working) as (?:an? )?(?P<v>.+)$")
# studying is the occupation until a job follows: "is an MSc student in hydrology"
_STUDENT = re.compile(r"^is (?:now )?an? (?P<v>(?:[\w-]+ ){0,3}student)\b")
# teaching at a school is the occupation: "teaches 7th grade science at lincoln"
_TEACHES = re.compile(
    rf"^{_V}teach(?:es)? (?P<v>.+?) at (?:an? |the )?[\w' -]*?(?:school|college|"
    r"university|academy|uni|institute)\b"
)
_PET = re.compile(
    rf"^{_V}(?:has|have|owns?|got|adopted) (?:an? )?(?P<s>\w+) (?:named|called) (?P<n>\w+)"
)
# one diet at a time: "is pescatarian" replaces "is vegetarian"
_DIET = re.compile(r"^is (?:now )?(?P<v>vegan|vegetarian|pescatarian|flexitarian|omnivore)\b")
# eating again what a diet leaves out ends the diet: meat makes an omnivore,
# fish a pescatarian ("started eating chicken again" ends "is pescatarian")
_EATS = re.compile(
    r"^eats (?:(?P<meat>chicken|meat|red meat|beef|pork|lamb|turkey|steak|bacon)|"
    r"(?P<fish>fish|seafood|salmon))\b(?! (?:stock|sauce|oil|substitute|alternative)s?\b)"
)
_PET_POSSESSIVE = re.compile(r"^(?P<s>\w+)(?:'s name is| is named| is called) (?P<n>\w+)")
_NAME = (
    re.compile(r"^name is (?P<v>.+)$"),
    re.compile(rf"^{_BE}(?:called|named) (?P<v>.+)$"),
)
_ORIGIN = re.compile(rf"^{_BE}(?:originally )?from (?P<v>.+)$")
_AGE = re.compile(rf"^{_BE}(?P<v>\d{{1,3}})(?: years? old)?$")
_OPINION = re.compile(
    rf"^{_V}(?:(?:really|always|usually|generally|strongly|definitely|mostly) )*"
    r"(?P<p>likes?|loves?|enjoys?|prefers?|wants?|hates?|dislikes?|"
    r"can't stand|cannot stand|(?:is |am |are )?(?:a )?(?:big )?fans? of) (?P<v>.+)$"
)
_TOOL = re.compile(
    rf"^{_V}{_BE}(?P<verb>uses?|using|switched|switching|migrated|migrating|moved|"
    r"adopted|chose|picked|standardi[sz]ed on)(?: (?:from .+? )?to| on)? (?P<v>.+)$"
)
_POSSESSIVE = re.compile(r"^(?P<a>[\w' ]{1,40}?) (?:is|are) (?P<v>.+)$")


def _subject(text: str) -> tuple[str, str, bool] | None:
    low = " ".join(text.casefold().replace("\u2019", "'").split()).rstrip(".!;: ")
    for pattern, subject, possessive in _SUBJECTS:
        m = pattern.match(low)
        if m:
            return subject, low[m.end() :], possessive
    return None


def _trim(value: str) -> str:
    return normalize(_CUT.sub("", value))


def tool_name(value: str) -> str | None:
    """The canonical name of the known tool `value` starts with, if any."""
    v = normalize(value)
    for name in _TOOL_NAMES:
        if v == name or v.startswith(name + " "):
            return _ALIASES.get(name, name)
    return None


def parse_slot(text: str) -> SlotValue | None:
    """(subject, attribute) and value of a fact, or None when no pattern fits."""
    parsed = _subject(text)
    if parsed is None:
        return None
    subject, rest, possessive = parsed

    def sv(attribute: str, value: str) -> SlotValue | None:
        value = value.strip()
        return SlotValue(Slot(subject, attribute), value) if value else None

    if possessive:
        m = _PET_POSSESSIVE.match(rest)
        if m:
            return sv(f"pet:{m['n']}", m["s"])
        m = _NAME[0].match(rest)
        if m:
            return sv("name", _trim(m["v"]))
    m = _PET.match(rest)
    if m:
        return sv(f"pet:{m['n']}", m["s"])
    m = _DEVICE_SLOT.match(rest)
    if m:
        kind = next(k for k, words in DEVICES.items() if re.fullmatch(words, m["v"]))
        return sv(kind, m["v"].split(" ")[0])
    for pattern in _RESIDENCE:
        m = pattern.match(rest)
        if m and tool_name(m["v"]) is None:
            return sv("residence", _trim(m["v"]))
    m = _OCCUPATION.match(rest)
    if m:
        return sv("occupation", _trim(m["v"]))
    m = _TEACHES.match(rest)
    if m:
        return sv("occupation", f"{_trim(m['v'])} teacher")
    m = _STUDENT.match(rest)
    if m:
        return sv("occupation", _trim(m["v"]))
    for pattern in _EMPLOYER:
        m = pattern.match(rest)
        if m:
            return sv("employer", _trim(m["v"]))
    m = _TOOL.match(rest)
    if m:
        return _tool_slot(subject, m["verb"], m["v"])
    m = _OPINION.match(rest)
    if m and m["p"].startswith("prefer") and tool_name(m["v"]):
        # preferring a known tool is choosing it for its kind: "prefers vim"
        # and "switched to VS Code" fill one slot, the editor
        return _tool_slot(subject, "prefers", m["v"])
    if m:
        polarity = "-" if re.match(r"hate|dislike|can", m["p"]) else "+"
        return sv(f"opinion:{_trim(m['v'])}", polarity)
    m = _NAME[1].match(rest)
    if m:
        return sv("name", _trim(m["v"]))
    m = _ORIGIN.match(rest)
    if m:
        return sv("origin", _trim(m["v"]))
    m = _AGE.match(rest)
    if m:
        return sv("age", m["v"])
    m = _DIET.match(rest)
    if m:
        return sv("diet", m["v"])
    m = _EATS.match(rest)
    if m:
        return sv("diet", "omnivore" if m["meat"] else "pescatarian")
    if possessive:
        m = _POSSESSIVE.match(rest)
        if m:
            kind = _value_kind(m["v"])
            if kind == ":about":  # "wife is really into opera" names no one: it sits beside
                return SlotValue(Slot(subject, normalize(m["a"]) + kind), _trim(m["v"]), False)
            return sv(normalize(m["a"]) + kind, _trim(m["v"]))
    return None


def _value_kind(value: str) -> str:
    """A suffix that keeps "is a nurse", "is 30" and "is named X" in separate slots."""
    v = value.strip()
    if re.match(r"^\d{1,3}(?: years? old)?$", v):
        return ":age"
    if re.match(r"^(?:an?|the) ", v):
        return ":is-a"
    if re.match(r"^(?:named|called) ", v):
        return ":name"
    # a description, not who they are: "really into opera", "into opera", "so proud"
    if re.match(
        r"^(?:really|very|so|too|into|not|always|never|quite|super|pretty|such|in|on|at|from|"
        r"with|of|still|also|just|now|\w+ly|\w+ing|\w+ed) \S",
        v,
        re.I,
    ):
        return ":about"
    return ""


def _tool_slot(subject: str, verb: str, value: str) -> SlotValue | None:
    tool_part, _, purpose = value.partition(" for ")
    tool = tool_name(tool_part) or _trim(tool_part)
    if not tool:
        return None
    purpose = _trim(purpose)
    known = tool_name(tool_part) is not None
    if purpose and not known:
        return SlotValue(Slot(subject, f"tool-for:{purpose}"), tool)
    category = _TOOLS.get(tool) or _TOOLS.get(
        next((k for k, v in _ALIASES.items() if v == tool), "")
    )
    if category is not None:
        exclusive = not verb.startswith("us") or category not in _COMBINED
        return SlotValue(Slot(subject, category), tool, exclusive)
    if verb.startswith("us"):
        return SlotValue(Slot(subject, f"tool:{tool}"), "used")
    return None


def slot_of(text: str) -> Slot | None:
    """The (subject, attribute) a fact fills, or None; see the module table."""
    parsed = parse_slot(text)
    return parsed.slot if parsed else None
