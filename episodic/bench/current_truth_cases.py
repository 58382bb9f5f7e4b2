"""Knowledge-update cases: a fact about the user changes between two
conversations ten days apart; the question asks for the current value.

Written before the ranking code that is judged on them (issue 31) and not
edited to fit it. Each conversation is a few user/assistant turns with some
unrelated chatter around the statement; `new` is a phrase the top hit must
contain, `old` one it must not (the superseded value).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UpdateCase:
    name: str
    first: tuple[tuple[str, str], ...]  # (role, text) of the first conversation
    second: tuple[tuple[str, str], ...]  # ten days later
    question: str
    new: str
    old: str


CASES: tuple[UpdateCase, ...] = (
    UpdateCase(
        "city",
        (
            ("user", "Hi! I live in Lisbon and I work as a data analyst."),
            ("assistant", "Nice to meet you. How can I help today?"),
            ("user", "Can you suggest a good book about statistics?"),
            ("assistant", "Try 'The Art of Statistics' by David Spiegelhalter."),
        ),
        (
            ("user", "Big news: I moved to Amsterdam last week, I live in Amsterdam now."),
            ("assistant", "Congratulations on the move! How is it going?"),
            ("user", "The weather is rainy but I love the canals."),
        ),
        "where does the user live",
        "Amsterdam",
        "Lisbon",
    ),
    UpdateCase(
        "employer",
        (
            ("user", "I work at Acme Corp as a backend engineer."),
            ("assistant", "Got it. What are you working on?"),
            ("user", "Mostly payment services written in Go."),
        ),
        (
            ("user", "I quit Acme. I started a new job at Globex this Monday."),
            ("assistant", "Exciting! What is the role at Globex?"),
            ("user", "Platform engineering, lots of Kubernetes."),
        ),
        "where does the user work now",
        "Globex",
        "Acme",
    ),
    UpdateCase(
        "editor",
        (
            ("user", "My editor is Vim, I have used it for years."),
            ("assistant", "Vim is great. Any plugins you like?"),
            ("user", "Mostly fzf and a linter."),
        ),
        (
            ("user", "I switched from Vim to VS Code, my editor is VS Code now."),
            ("assistant", "What made you switch?"),
            ("user", "The remote development extension."),
        ),
        "which editor does the user use",
        "VS Code",
        "My editor is Vim",
    ),
    UpdateCase(
        "pet",
        (
            ("user", "I have a cat named Miso, she sleeps on my keyboard."),
            ("assistant", "Cats love warm keyboards. How old is Miso?"),
            ("user", "She is twelve."),
        ),
        (
            ("user", "Sad news, Miso died last week. I adopted a dog named Pixel."),
            ("assistant", "I'm sorry about Miso. Welcome, Pixel!"),
            ("user", "Pixel is a very energetic beagle."),
        ),
        "what pet does the user have",
        "dog",
        "I have a cat",
    ),
    UpdateCase(
        "diet",
        (
            ("user", "I'm vegetarian, so please keep recipes meat-free."),
            ("assistant", "Noted. Here is a lentil curry."),
        ),
        (
            ("user", "Update: I am fully vegan now, no dairy or eggs either."),
            ("assistant", "Thanks, I'll suggest vegan recipes from now on."),
            ("user", "Could you give me a quick breakfast idea?"),
        ),
        "what diet does the user follow",
        "vegan",
        "I'm vegetarian",
    ),
    UpdateCase(
        "language",
        (
            ("user", "I'm learning Spanish, about twenty minutes a day."),
            ("assistant", "Great habit. Do you use an app?"),
            ("user", "Yes, and a podcast on the commute."),
        ),
        (
            ("user", "I stopped Spanish and I'm learning Japanese now."),
            ("assistant", "Japanese is a fun challenge. Kana first?"),
            ("user", "Yes, hiragana this month."),
        ),
        "which language is the user learning",
        "Japanese",
        "I'm learning Spanish",
    ),
    UpdateCase(
        "car",
        (
            ("user", "I drive a Toyota Corolla to work every day."),
            ("assistant", "Reliable car. Any trouble with it?"),
            ("user", "No, it just needs new tyres soon."),
        ),
        (
            ("user", "I sold the Corolla and bought a Tesla Model 3."),
            ("assistant", "How do you like driving electric?"),
            ("user", "Charging at home is so convenient."),
        ),
        "what car does the user drive",
        "Tesla",
        "I drive a Toyota",
    ),
    UpdateCase(
        "team_size",
        (
            ("user", "I manage a team of five engineers."),
            ("assistant", "What does the team work on?"),
            ("user", "Search infrastructure."),
        ),
        (
            ("user", "We reorganised: my team grew to twelve engineers."),
            ("assistant", "That's a big jump. Hiring going well?"),
            ("user", "Yes, three more start next month."),
        ),
        "how many engineers are on the user's team",
        "twelve",
        "five engineers",
    ),
    UpdateCase(
        "image_size",
        (
            ("user", "Our docker image is 1.9 GB, builds are slow."),
            ("assistant", "Multi-stage builds could help. Want an example?"),
            ("user", "Yes please, for a Python service."),
        ),
        (
            ("user", "The multi-stage build worked: the docker image is 312 MB now."),
            ("assistant", "Excellent, that's a huge reduction."),
            ("user", "Deploys are much faster too."),
        ),
        "how big is the docker image now",
        "312 MB",
        "1.9 GB",
    ),
    UpdateCase(
        "phone",
        (
            ("user", "I use an Android phone, a Pixel 6."),
            ("assistant", "Do you want help with an Android setting?"),
            ("user", "How do I turn on dark mode?"),
        ),
        (
            ("user", "I switched to an iPhone 15 last weekend."),
            ("assistant", "How are you finding iOS?"),
            ("user", "The camera is great, the keyboard takes getting used to."),
        ),
        "what phone does the user have",
        "iPhone",
        "Android",
    ),
)

# The same questions as the user asks them of their agent, which passes them on
# as said: written on 2026-12-07 with the ranking's reading of "I" and "my" as
# "the user" (in-sample for it). The docker image's question has no person in it.
FIRST_PERSON: dict[str, str] = {
    "city": "where do I live",
    "employer": "where do I work now",
    "editor": "which editor do I use",
    "pet": "what pet do I have",
    "diet": "what diet do I follow",
    "language": "which language am I learning",
    "car": "what car do I drive",
    "team_size": "how many engineers are on my team",
    "phone": "what phone do I have",
}
