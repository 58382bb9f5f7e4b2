"""The offline fact extractor: deterministic rules over the user's own words.

Only turns with role "user" are read (an assistant's statement about itself
or its guess about the user is not evidence), and inside them lines quoted
from someone else ("> ...", "Assistant: ...", text in double quotes) are
skipped. Each turn is cut into clauses:

1. sentences, at . ! ? ; and newlines;
2. a preface ending in a colon ("Quick intro:", "Reminder for you:",
   "Correction:") and lead-ins ("so", "btw", "actually", "sad news",
   "last week") are dropped;
3. a sentence is split before "and / but / so" + a subject ("..., and I ..."),
   and before "and" + a bare verb, which inherits the subject ("I live in
   Paris and work as a data engineer" -> two clauses); a compound subject
   stays whole ("Lena and I broke up");
4. a question ("?" or a question word first) or a hypothetical ("if ...")
   gives nothing;
5. a clause opening with "he" / "she" / "it" is read as being about the one
   relative or pet the same turn named before ("My sister Ana lives in Rome.
   She is a nurse."); with none or several named, it gives nothing.

A clause that corrects the last fact of the episode ("Sorry, actually it's
Klara", see `correction`) replaces that fact instead; one that corrects a
value no fact of the episode holds ("she lives in Yerevan, not Tbilisi")
becomes "User corrected Tbilisi to Yerevan", for the merge to apply to the
stored fact. Each sentence also gives what it says in passing (`passing`:
"my cat Miso", "my day job as a cartographer", "My Vespa won't start"). Any other clause goes
through the rule table of `offline_rules` (first match decides; one clause
may give two facts: "I'm a nurse at St Mary's" gives the occupation and the
employer); a first-person clause no rule reads is kept in the user's words
(`generic`: "I handle our clients' campaigns", in the present only). A fact
stating a state drops a trailing relative date (`when`:
"started at X this Monday" gives "works at X"). Facts are cut at 200
characters. Within one
episode, facts that fill the same slot with the same value are one fact
(the later wording kept, both turns cited): "I moved to Berlin last month, so
I live in Berlin now" gives "User lives in Berlin".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from episodic.facts import generic
from episodic.facts.chatter import addresses_listener
from episodic.facts.correction import (
    CORRECTION,
    apply_correction,
    contrast,
    corrected_fact,
    corrected_value,
    instead,
    said_instead,
)
from episodic.facts.endings import PART_TOGETHER
from episodic.facts.indirect import DWELLING
from episodic.facts.negation import FORGET_REQUEST
from episodic.facts.offline_rules import FROM_NOW_ON, INJURED, PETS, RELATIONS, RULES, SPORT
from episodic.facts.passing import in_passing
from episodic.facts.slots import DEVICE_WORD, parse_slot
from episodic.facts.types import FactTurn
from episodic.facts.when import MONTHS, RELATIVE_DATE, without_trailing_date
from episodic.facts.wording import obj

MAX_FACT_CHARS = 200

# a sentence ends at . ! ? ; but not after a title's abbreviation
# ("my doctor is Dr. Okafor", "Mrs. Lee", "St. Louis")
_SENTENCES = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bMrs\.)(?<!\bProf\.)"
    r"(?<=[.!?;])\s+|\n+"
    r"|\s+[-\u2013\u2014]\s+"  # a dash between two clauses: "big news - I left teaching"
    # an emoji ends what it follows: "my new flat in glasgow 🎉 move is finally done"
    r"|\s*[\U0001F300-\U0001FAFF\u2600-\u27BF]+(?:\s+|$)"
)
# a clause that opens with a past verb of a change in someone's life has dropped
# its "I" ("cancelled my gym membership today", "moved to Glasgow last weekend");
# only with the object such a change takes, so that a terse "stopped the server"
# or "moved the file to src/" stays an action of the moment
# (a verb of getting rid of something is never a command in the past: "sold
# the Saab", "ditched emacs"; a named object makes "cancelled Audible" a report;
# a home got or rented is a move: "got my own flat in Trieste")
_NO_SUBJECT_VERB = (
    r"(?:(?:cancell?ed|quit|sold|ditched|dropped|gave up(?: on)?|stopped|finished|left|"
    r"handed in) my\b|(?:moved|relocated) (?:to|out|back|away|house)\b"
    r"|started (?:as|at|a new|working|my|an? (?:apprenticeship|internship|job|role))\b"
    r"|(?:joined|left|gave up on|cancell?ed|quit|dropped|stopped) (?-i:[A-Z])"
    r"|(?:sold|ditched|got rid of|gave away)\s"
    rf"|(?:got|bought|rented|found) (?:my own|our own|an?) (?:[\w-]+ ){{0,2}}(?:{DWELLING})\b"
    r"|(?:got )?switched (?:(?:my|our) [\w-]+ )?(?:to|over|from|off)\b|adopted an?\b|retired\b"
    r"|(?:signed up|registered|enrolled) (?:for|in)\b"
    rf"|(?:settled|moved) in(?:to)? (?:the|my|our|a) (?:new )?(?:{DWELLING})\b"
    r"|joining [\w.&'-]+(?: [\w.&'-]+)? as\b"
    r"|started (?:learning|to learn)\b|quit (?!(?:it|this|that|now|already|again)\b)[a-z]"
    # a home's keys got, a trip booked or called off, an injury, a class begun
    r"|got (?:the )?keys (?:to|for)\b"
    r"|booked (?:(?:the|our|my|a|some|cheap|two|2) )?(?:flights?|tickets?|trip|holiday|hotel)\b"
    r"|had to (?:cancel|drop|quit|give up|sell|stop)\b"
    r"|(?:got|was) (?:laid off|fired|let go|made redundant) (?:from|by|at)\b"
    r"|cancell?ed (?:the|our) (?:[\w-]+ )?(?:membership|subscription|contract|lease)\b"
    # a sport given up, and nothing after it but when or why ("stopped playing
    # tennis, my knee ..."; not "stopped running the tests")
    rf"|(?:stopped|quit|gave up) (?:playing |going |doing )?(?:{SPORT})"
    r"(?=\s*(?:$|[,.!;]|\s(?:after|because|since|for|when|last|this|altogether|completely)\b))"
    rf"|haven't (?:been |gone |done |played )?(?:{SPORT}) (?:in|for)\b"
    # a device got in place of another: "gave up on android and got an iPhone 15"
    r"|gave up(?: on (?:android|ios|apple|windows|linux|mac|it|that|them))? and "
    r"(?:got|bought|switched)\b"
    rf"|(?:got|bought) (?:an?|a new) (?:(?:19|20)\d\d )?(?:{DEVICE_WORD})\b"
    # a vehicle got: "got an e-bike for my commute"
    r"|(?:got|bought) (?:an?|a new|a used|my first) (?:[\w-]+ ){0,2}(?:e-?bike|bike|bicycle|"
    r"car|motorbike|motorcycle|scooter|van|truck|suv|camper)"
    r"(?=\s*(?:$|[,.!]|\s(?:for|to|and|so|last|yesterday|today|this|on)\b))"
    rf"|(?:{INJURED}) my\b"
    r"|started an? (?:[\w-]+ ){0,3}(?:class|course|lessons|workshop|bootcamp)\b"
    # a thing given up for another, a return to one: "ditched notion for obsidian"
    r"|(?:ditched|dropped|swapped|traded) [\w.+#-]+(?: [\w.+#-]+)? for\b|went back to\b"
    r"(?! (?:for|to|that|which|called|named|in)\b))"
)
_NO_SUBJECT = re.compile(rf"^(?:(?:just|finally|recently|officially) )*{_NO_SUBJECT_VERB}", re.I)
# a state with its "I'm" / "I've" dropped: "been vegetarian for years", "living in austin"
_NO_SUBJECT_BE = re.compile(
    r"^(been|living|staying|based|working|planning|originally|starting) "
    r"(?=(?:(?:full|part)[- ]time )?(?:in|at|as|with|vegan|"
    r"vegetarian|pescatarian|an?|from)\b|for (?-i:[A-Z]))"
    # a trip with its "I'm" dropped: "going to the Azores in April instead"
    r"|^(going|heading|flying) (?=to (?:the )?(?-i:[A-Z]))",
    re.I,
)
# chat spelling without apostrophes ("im vegan now", "i dont drink coffee");
# the ambiguous ones ("id", "ill", "were", "its", "lets") are left alone
_INFORMAL = {
    "im": "I'm", "ive": "I've", "dont": "don't", "doesnt": "doesn't", "didnt": "didn't",
    "cant": "can't", "wont": "won't", "isnt": "isn't", "arent": "aren't", "wasnt": "wasn't",
    "havent": "haven't", "hasnt": "hasn't", "wouldnt": "wouldn't", "couldnt": "couldn't",
    "shouldnt": "shouldn't", "youre": "you're", "theyre": "they're", "thats": "that's",
    "gonna": "going to", "wanna": "want to", "pls": "please", "plz": "please",
    "gf": "girlfriend", "bf": "boyfriend", "bff": "best friend", "hubby": "husband",
}  # fmt: skip
_INFORMAL_RE = re.compile(rf"\b(?:{'|'.join(_INFORMAL)})\b", re.I)


# "w my bf": a lone lowercase w is "with" (not "W." or "w/o")
_W = re.compile(r"(?<![\w./])w(?= (?-i:[a-z0-9]))")


def _spelled_out(line: str) -> str:
    return _W.sub("with", _INFORMAL_RE.sub(lambda m: _INFORMAL[m[0].casefold()], line))


_CLAUSES = re.compile(
    r",?\s+(?=(?:and|but|so|plus) (?:(?:now|then|since then|these days|nowadays) |"
    r"(?:after|since|following) [^,]{1,40}? )?"
    r"(?:i|i'm|i've|i'd|we|we're|my|our)\b)"
    r"|,\s+(?=(?:(?:these days|nowadays|now|today|but now|since then),? )?"
    r"(?:i|i'm|i've|we|we're|my|our)\s)"
    # a second clause that dropped its "I" ("i finally did it, moved to X"), a
    # reason with its own subject ("... because I work at a bakery"), and a comma
    # splice naming a new favourite ("..., genmaicha is my go-to now")
    rf"|,\s+(?=(?:(?:just|finally|recently|officially) )*{_NO_SUBJECT_VERB})"
    r"|\s+(?=because (?:i|i'm|i've|we|we're)\b)"
    r"|,\s+(?=back (?:to|on) )"
    r"|,\s+(?=originally from )"
    r"|,\s+(?=[\w' -]{1,30}? (?:is|are) (?:now )?my (?:new )?(?:go-to|favou?rite|fave)\b)"
    # a request or question after a comma is not part of the fact before it
    # ("I'm a vet, can you help me ..."): it is cut off, and dropped as a question
    r"|,\s+(?=(?:(?:so|and|but|ok|now|then) )?(?:(?:can|could|would|will) you\b"
    r"|(?:(?:have you |you )?got )?any (?:ideas?|tips|tricks|hacks|pointers|advice|suggestions|"
    r"recommendations|"
    r"thoughts|(?:\w+ ){1,2}ideas)\b"
    r"|(?:what|how|where|which|why|when|who)(?:'s| is| are| do| does| should| can| would)?\b"
    r"|(?:is|are) (?:there|it|this|that)\b|should i\b|do you\b|please\b))",
    re.I,
)
# a state after "and" that keeps the "I'm" before it: "i'm vegetarian and allergic to ..."
_STATE_WORDS = frozenset({"allergic", "vegan", "vegetarian", "pescatarian", "diabetic"})
_BARE_VERB = re.compile(
    r",?\s+and (?=(?:also |now |currently )?(?:live|work|have|own|use|love|like|prefer|enjoy|"
    r"hate|moved|relocated|joined|got|adopted|drive|speak|play|study|am|'m|started|bought|"
    r"sold|quit|ditched|switched|cancell?ed|rent|rented|teach|keep|been|need|want|miss|went|"
    rf"go|run|eat|drink|cook|picked up|traded|{'|'.join(sorted(_STATE_WORDS))})\b)",
    re.I,
)
_PREFACE = re.compile(r"^(?:[A-Za-z][\w'’ -]{0,40}):\s+(?=\S)")
_LEAD_IN = re.compile(
    r"^(?:(?:so|well|also|actually|btw|by the way|oh|and|but|anyway|fyi|hey|hi|hello|ok|okay|"
    r"ugh|argh|omg|wow|yay|woohoo|phew|whew|welp|lol|haha|hmm|yikes|"
    r"yeah|yes|no(?! longer)|nope|sure|right|true|honestly|just so you know|for context|"
    r"for the record|i (?:should|must|forgot to|want to|wanted to) (?:mention|say|add|note|"
    r"tell you)(?: that)?|"
    r"quick note|quick update|update|heads up|(?:\w+ )?news|correction|sorry|oops|"
    r"change of plans?|plot twist|(?:small|big|quick) update|"
    r"sadly|unfortunately|fortunately|luckily|guess what|now|then|"
    r"to be clear|to clarify|as i said|as mentioned|basically|plus|finally|eventually|"
    r"in the end|went ahead and|because|(?:\w+ )?(?:thing|fact)|"
    # a sentence adverb before the subject: "weirdly I've ...", "funnily enough, I ..."
    r"[a-z]+ly(?: enough)?(?=,|\s+(?:i|i'm|i've|i'd|we|we've|we're)\b)|(?:last|next|this) "
    r"(?:week|month|year|weekend)|recently|lately|these days|nowadays|today|yesterday|"
    rf"tomorrow|{RELATIVE_DATE}|since (?:{MONTHS}|last \w+|(?:19|20)\d\d)|"
    r"every (?:working |week|single )?(?:day|morning|evening|night)|"
    r"after (?:\w+ ){1,2}(?:years?|months?|weeks?) of (?:being )?[\w-]+|"
    r"most (?:days|mornings|evenings))[,:!]?\s+)+",
    re.I,
)
_QUESTION = re.compile(
    r"^(?:what|how|why|who|whom|whose|where|when|which|can|could|would|should|will|"
    r"shall|do|does|did|is|are|was|were|am|may|might|if|whether|unless|suppose|imagine|"
    r"maybe|perhaps|let's|lets|you|your|you're)\b",
    re.I,
)
_QUOTED_LINE = re.compile(r"^\s*(?:>|(?:assistant|ai|bot|claude|gpt|chatgpt|model)\s*:)", re.I)
# a glowing sentence closed by an eye-roll ("I absolutely LOVE singing in front of
# my coworkers, best news of my year 🙃") means the opposite: it states nothing
_SARCASM = re.compile(
    r"[^.!?\n]*\b(?:love|loves|adore|enjoy|like|best|great|amazing|fantastic|thrilled|"
    r"can't wait)\b[^.!?\n]*?(?:\U0001F643|\U0001F644|\s/s\b)",
    re.I,
)
_QUOTES = re.compile(r"\"[^\"]*\"|“[^”]*”")
_ANTECEDENT = re.compile(
    rf"\b(?:[Mm]y|[Oo]ur) (?P<a>(?:{RELATIONS})(?: (?:named|called) [A-Z][\w-]+| [A-Z][\w-]+)?)\b"
)
# the first half of a compound subject ("Lena and I ...", "my wife and I ...")
_CO_SUBJECT = re.compile(
    rf"^(?:(?!(?:you|we|they|he|she|it|this|that|so|and|but)$)[\w-]+"
    rf"|(?:[Mm]y|[Oo]ur) (?:{RELATIONS})(?: [A-Z][\w-]+)?)$",
    re.I,
)
# the user owning up to a slip: a lowercase "X, not Y" is then a correction too
_SLIP = re.compile(
    r"\b(?:sorry|oops|my bad|my mistake|i meant|mixed (?:that|it|them) up|misspoke|typo|"
    r"wrong(?:ly)?|actually|correction|correct (?:myself|that|this|something|what i)|"
    r"scratch that|(?:got )?mixed up|got confused)\b",
    re.I,
)
# an "it" that stands for nothing named: "it's all genmaicha for me now"
_DUMMY_IT = re.compile(r"^it(?:'s| is) (?:all|only|just)\b", re.I)
_PRONOUN_START = re.compile(r"^(?P<p>he|she|it)(?P<be>'s)?\b", re.I)
_HAVE_NAMED = re.compile(
    rf"\b(?:have|got|adopted|own) (?:an? )(?P<a>(?:{RELATIONS})) (?:named|called) "
    r"(?P<n>[A-Z][\w-]+)"
)


def _parts(sentence: str) -> list[str]:
    """The sentence cut before "and / but / so" + subject, compound subjects kept whole."""
    parts: list[str] = []
    for part in _CLAUSES.split(sentence):
        last = _clean(parts[-1]) if parts else ""
        if (
            (_CO_SUBJECT.match(last) and re.match(r"and (?:i|me)\b", part, re.I))
            # "me and my boyfriend Tomasz live in ..."
            or (re.fullmatch(r"me|i", last, re.I) and re.match(r"and (?:my|our)\b", part, re.I))
            # "going forward, please keep ...": the request is a standing one
            or re.fullmatch(FROM_NOW_ON, last, re.I)
        ):
            parts[-1] = f"{parts[-1]} {part}"
        else:
            parts.append(part)
    return parts


def _clauses(sentence: str) -> list[str]:
    out: list[str] = []
    for part in _parts(sentence):
        bare = _clean(part)
        if _NO_SUBJECT.match(bare):
            part = f"I {bare}"
        elif be := _NO_SUBJECT_BE.match(bare):
            part = f"{'I have' if (be[1] or '').casefold() == 'been' else 'I am'} {bare}"
        elif together := _WITH_ME.match(bare):
            part = _user_of(together)
        elif back := generic.dropped_subject(bare):
            part = back
        pieces = _BARE_VERB.split(part)
        subject = ""
        for k, piece in enumerate(pieces):
            piece = piece.strip()
            if k == 0:
                low = piece.casefold()
                low = _LEAD_IN.sub("", _PREFACE.sub("", low)).strip()
                subject = (
                    "I" if re.match(r"i\b|i'm\b", low) else ("we" if re.match(r"we\b", low) else "")
                )
                out.append(piece)
            elif subject:
                verb = piece.split(" ", 1)[0].casefold()
                if verb in ("am", "'m"):
                    out.append(f"I'm {piece.split(' ', 1)[1] if ' ' in piece else ''}")
                elif verb in _STATE_WORDS and subject == "I":
                    out.append(f"I'm {piece}")
                elif verb == "been":
                    out.append(f"{subject} have {piece}")
                else:
                    out.append(f"{subject} {piece}")
            else:
                out[-1] = f"{out[-1]} and {piece}"
    return out


# a compound subject with the user in it ("me and my boyfriend Tomasz live in
# Poznań", "my wife and I are moving to Lisbon"): what it says holds for the
# user, unless it is a parting ("X and I broke up", read by the rule table) or
# says what they are to each other ("Priya and I have been together two years")
_WITH_ME = re.compile(
    rf"^(?:(?:me|i) and (?:[Mm]y|[Oo]ur) (?:{RELATIONS})(?: (?-i:[A-Z])[\w-]+"
    # a name written lowercase, before the verb: "me and my gf maya just ..."
    r"| (?!(?:are|were|have|had|just|both|also|still|now|live|lived|moved|got)\b)(?-i:[a-z]{3,})"
    r"(?= (?:are|were|have|had|'ve|just|both|also|live|lived|moved|got|hit)\b))?"
    rf"|(?:[Mm]y|[Oo]ur) (?:{RELATIONS})"
    r"(?: (?-i:[A-Z])[\w-]+| (?-i:[a-z]{3,})(?= and (?:i|me)\b))?"
    r" and (?:i|me)"
    rf"|(?-i:[A-Z])[\w-]+ and (?:i|me)) (?!(?:have |had |just |finally |recently )*"
    rf"(?:{PART_TOGETHER})\b)(?!.*\b(?:together|each other|dating|a couple|married|engaged|"
    r"met|hit \d+|anniversary)\b)(?:(?P<be>are|were|have|'ve)\b)?"
    # "me and my flatmate in leith keep ...": a place after the pair is no verb
    r"(?!\s*(?:in|at|from|of|on|with|for|to|near)\b)(?P<rest>.+)$",
    re.I,
)
_BE_OF_I = {"are": "I'm", "were": "I was", "have": "I have", "'ve": "I have"}


def _user_of(m: re.Match[str]) -> str:
    """The compound subject's clause said of the user alone."""
    be = _BE_OF_I.get((m["be"] or "").casefold(), "I")
    return f"{be} {m['rest'].strip()}"


# "my dad's a retired electrician": the contraction of "is", not a possessive
# (an article or an adverb follows, where a possessive has its noun)
_RELATIVE_IS = re.compile(
    rf"\b((?:[Mm]y|[Oo]ur) (?:{RELATIONS}))'s (?=(?:an?|the|not|no|still|now|also|retired|"
    r"really|so|very|always|never)\b)"
)


# a hedge before the user's own state: "so I guess I'm pescatarian now"
_HEDGE = re.compile(
    r"^(?:i guess|i suppose|technically|apparently|officially),? "
    r"(?=(?:i'm|i am|i've|we're|we are)\b)",
    re.I,
)


def _clean(clause: str) -> str:
    s = _RELATIVE_IS.sub(r"\1 is ", clause.strip().replace("\u2019", "'"))
    for _ in range(3):
        before = s
        s = _PREFACE.sub("", s).strip()
        s = _LEAD_IN.sub("", s).strip()
        s = _HEDGE.sub("", s).strip()
        if s == before:
            break
    return s


# a request to forget, often asked as a question ("can you forget where I live?");
# only "forget" and only with what is remembered as its object: "can you delete
# the old branch?" or "forget about the tests for now" asks for no erasure
_FORGET_ASKED = re.compile(
    r"^(?:(?:can|could|would|will) you (?:please )?|please )forget "
    r"(?:that |the fact that )?(?P<x>(?:where|what|who|which) (?:i|my)\b.+"
    r"|my .+|the .+ (?:thing|stuff|bit) (?:i|that i) (?:mentioned|said|told you)\b.*"
    r"|(?<=that )(?:i|my)\b.+)\??$",
    re.I,
)


# an adverb between the subject and what it says ("I'm now a staff engineer at
# Brightwave", "we also moved to Manchester"): the rules read the clause without
# it; "now" before a verb stays ("I now prefer tea" tells of a change)
_SUBJECT_ADVERB = re.compile(
    r"^(?P<s>i'm|i am|we're|we are|i|we|i've|we've)"
    r"(?P<a>(?: (?:also|now|currently|still|actually|really|finally|officially|recently|"
    r"just|already|both|all))+)(?= )",
    re.I,
)
_BE = frozenset({"i'm", "i am", "we're", "we are"})


def _without_adverb(m: re.Match[str]) -> str:
    keep = m["s"].casefold() not in _BE and "now" in m["a"].casefold().split()
    return m[0] if keep else m["s"]


def extract_facts_of(sentence: str) -> list[str]:
    """Every fact one clause states (none for questions and chatter)."""
    s = _SUBJECT_ADVERB.sub(_without_adverb, _clean(sentence))
    asked = _FORGET_ASKED.match(s)
    if asked and (x := obj(re.sub(r"(?:,?\s+please)?[\s?!.]*$", "", asked["x"], flags=re.I))):
        that = "" if re.match(r"(?:where|what|who|when|how|which)\b", x, re.I) else "that "
        return [f"User asked to forget {that}{x}"]
    if not s or s.endswith("?") or _QUESTION.match(s):
        return []
    s = s.rstrip(" .!;:")
    for pattern, build in RULES:
        m = pattern.match(s)
        if m:
            facts = (without_trailing_date(f) for f in build(m) if f)
            return [f[:MAX_FACT_CHARS].rstrip() for f in facts if f and _kept(f)]
    said = generic.first_person_fact(s)
    return [said] if said and _kept(said) else []


def _kept(fact: str) -> bool:
    """A fact speaking to the listener is dropped; a request to forget, or what
    the user wants of the assistant ("always tell me when you are unsure"), is kept."""
    return (
        not addresses_listener(fact)
        or FORGET_REQUEST.match(fact) is not None
        or fact.startswith("User wants the assistant to ")
    )


def extract_sentence(sentence: str) -> str | None:
    """The first fact one sentence states, or None (questions and chatter give None)."""
    for clause in _clauses(sentence):
        facts = extract_facts_of(clause)
        if facts:
            return facts[0]
    return None


def _resolve(clause: str, antecedents: list[str]) -> str | None:
    """A clause opening with he / she / it, about the one antecedent named; else None."""
    s = _clean(clause)
    m = _PRONOUN_START.match(s)
    if m is None or _DUMMY_IT.match(s):
        return clause
    if len(set(antecedents)) != 1:
        return None
    if m["p"].casefold() == "it" and antecedents[0].split()[0].casefold() not in PETS:
        return clause  # "my sister ... it's actually lyon": "it" is no person
    rest = s[m.end() :].strip()
    verb = "is " if m["be"] else ""
    return f"my {antecedents[0]} {verb}{rest}"


def _turn_facts(text: str, earlier: Sequence[str] = ()) -> list[tuple[str, str | None]]:
    """(fact, the earlier fact it corrects or None) for each fact of one turn;
    `earlier` are the facts the episode stated before it, in order."""
    facts: list[tuple[str, str | None]] = []
    if meant := said_instead(text):
        facts.append((meant, None))
    antecedents: list[str] = []
    said = ""
    slip = _SLIP.search(text)
    for line in _asides_apart(text).splitlines():
        # one space between words: a run of whitespace (a paste's indentation)
        # made some rules backtrack for seconds
        line = _spelled_out(" ".join(line.split()))
        if not line or _QUOTED_LINE.match(line):
            continue
        line = _QUOTES.sub(" ", line)
        if "\U0001f643" in line or "\U0001f644" in line or " /s" in line:  # the scan is slow
            line = _SARCASM.sub(" ", line)
        for sentence in _SENTENCES.split(line):
            for clause in _clauses(sentence):
                stated = [*earlier, *(f for f, _ in facts)]
                fixed = _correction(clause, stated[-1]) if stated else None
                if fixed is not None:
                    facts.append((fixed, stated[-1]))
                    continue
                resolved = _resolve(clause, antecedents)
                got = extract_facts_of(resolved) if resolved is not None else []
                fix = _contrasted(clause, slip) if not got or slip else None
                if fix:
                    # "she lives in Yerevan, not Tbilisi": the value of a stored fact,
                    # rewritten before a restatement of it in the clause is merged
                    got = [fix, *got]
                facts.extend((f, None) for f in got)
                if resolved is None:
                    continue
                for m in _HAVE_NAMED.finditer(resolved):
                    antecedents.append(f"{m['a']} {m['n']}")
                for m in _ANTECEDENT.finditer(resolved):
                    antecedents.append(m["a"].replace(" named", "").replace(" called", ""))
            stated = [f for f, _ in facts]
            facts.extend((f, None) for f in in_passing(sentence, said, stated))
            said = f"{said} {sentence}"
    return facts


def _contrasted(clause: str, slip: object) -> str | None:
    """The correction or change of choice a clause says, or None; "not" and
    "instead" are rare, so most clauses are not scanned at all."""
    low = clause.casefold()
    if " not " in low:
        return contrast(_clean(clause), signal=slip)
    return instead(_clean(clause)) if "instead" in low else None


# an aside in brackets: "(I work at a bookshop in Salamanca Place, so ...)"
# (of three words or more: "(leave-in)" and "(2021)" stay where they are)
_ASIDE = re.compile(r"\s*\(([^()\n\s]+\s+[^()\n\s]+\s+[^()\n]{1,280})\)")


def _asides_apart(text: str) -> str:
    """Each line with its bracketed asides moved to lines of their own after it:
    an aside is a sentence of its own, and the sentence around it reads whole."""
    if "(" not in text:
        return text
    lines = []
    for line in text.splitlines():
        asides = _ASIDE.findall(line)
        lines.append(_ASIDE.sub("", line))
        lines.extend(asides)
    return "\n".join(lines)


def _correction(clause: str, last: str) -> str | None:
    """`last` with the value `clause` corrects it to ("actually it's Klara"), or None."""
    said = corrected_value(clause)
    return None if said is None else apply_correction(last, *said)


def offline_extract(turns: Sequence[FactTurn]) -> list[tuple[str, list[int]]]:
    """(fact text, [1-based index of its turn]) for every rule match, in order.

    The same text from several turns is one fact supported by all of them;
    two facts with the same slot and value are one fact, the later wording kept;
    a corrected fact is replaced by its correction, supported by both turns.
    """
    found: dict[str, list[int]] = {}
    for index, turn in enumerate(turns, start=1):
        if turn.role != "user":
            continue
        for fact, corrects in _turn_facts(turn.text, list(found)):
            if corrects is None and CORRECTION.match(fact):
                # "i meant square not stripe" said of a fact of this episode: rewrite it here
                fixed = next(((f, new) for f in found if (new := corrected_fact(fact, f))), None)
                if fixed is not None:
                    corrects, fact = fixed
            slip = found.pop(corrects, []) if corrects is not None else []
            support = found.setdefault(fact, slip)
            if index not in support:
                support.append(index)
    return _merge_same_slot(list(found.items()))


def _merge_same_slot(facts: list[tuple[str, list[int]]]) -> list[tuple[str, list[int]]]:
    out: list[tuple[str, list[int]]] = []
    for text, support in facts:
        sv = parse_slot(text)
        same = next(
            (i for i, (t, _) in enumerate(out) if sv is not None and parse_slot(t) == sv), None
        )
        if same is None:
            out.append((text, support))
        else:
            merged = sorted(set(out[same][1]) | set(support))
            del out[same]
            out.append((text, merged))
    return out
