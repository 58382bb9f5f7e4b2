"""The verbs that end a fact, in one place: the extractor states them, the
negation check recognises them.

Families (past tense, as the user reports them):
- giving something up: stopped, quit, gave up (on), dropped, cancelled,
  ended, terminated, unsubscribed from, got rid of, gave away, sold;
- leaving a place or an employer: left, moved out of, moved away from,
  resigned from, retired from;
- ending a relationship: broke up with, split up with, separated from,
  divorced (also "X and I broke up", "my girlfriend and I split up");
- losing the taste for something: gone off, went off, lost interest in,
  fell out of love with, grew out of, got bored of (the extractor writes
  "has gone off X" for all the "gone off" forms).
"""

from __future__ import annotations

# "left" alone is ambiguous ("I left my keys"), so the extractor asks for a
# named object after it; everything else here ends whatever follows
GIVE_UP = (
    r"stopped|quit|gave up(?: on)?|dropped(?! (?:by|off|in)\b)|cancell?ed|ended(?! up\b)|"
    r"terminated|unsubscribed from|got rid of|gave away|sold|ditched"
)
LEAVE = r"moved out of|moved away from|resigned from|retired from"
# "gone right off X", "completely went off X": a taste that ended, said sideways
LOSE_TASTE = (
    r"(?:gone|went) (?:(?:right|completely|totally|kind of|sort of|a bit) )?off|"
    r"lost (?:all |my )?interest in|fell out of love with|grew out of|outgrew|"
    r"got (?:bored|sick|tired) of"
)
PART = r"broke up with|split up with|separated from|divorced"
# "X and I ..." : the same endings said of both
PART_TOGETHER = r"broke up|split up|separated|got divorced|divorced"
ENDING_VERBS = (
    rf"{GIVE_UP}|{LEAVE}|{LOSE_TASTE}|{PART}|left|broke up|split up|separated|got divorced"
)
# words of an ending that say nothing about what was ended
ENDING_WORDS = frozenset(
    """
    stopped quit gave give up on dropped cancelled canceled ended terminated unsubscribed
    got rid sold ditched away left moved out resigned retired broke split separated
    divorced with from gone went off lost interest fell grew outgrew bored sick tired
    """.split()
)
