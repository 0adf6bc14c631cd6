"""Person names (`person`) where the text itself says a name follows: self-introductions ("my
name is Maria Lopez", "I'm Joel", "je m'appelle Camille", "ich heiße Jürgen Weber"), greetings
("Hi Joel,", "Dear Dr. Okafor,", "Liebe Anna,") and sign-offs ("Thanks, Joel", "Best,\\nMaria").

The cue is the context: a capitalised word alone is never redacted, and a cue followed by a word
that is not a name ("I'm Sorry", "Hi Team,", "Thanks, Everyone") is left alone (not_names.txt).
Only the name is replaced, the cue stays ("Hi [PERSON],").

`*_CORE` has no look-around, `\\b` or `\\s` (spaces are `[ \\t]`), so Rust's regex matches it
wherever Python does and the Polars prefilter uses it as it is; the Python pattern adds
look-arounds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

Span = tuple[int, int, str]

_UP = "A-ZÀ-ÖØ-ÞŁŚŠŽŻŹČĆŃĞŞİ"
_LOW = "a-zß-öø-ÿłśšžżźčćńęąőűığş"
# Maria, O'Neill, DeShawn, McKay, Jean-Luc, N’Golo
_NAME_WORD = rf"(?:[{_UP}]['’])?[{_UP}][{_LOW}]+(?:[{_UP}][{_LOW}]+)?(?:['’\-][{_UP}]?[{_LOW}]+)*"
_PARTICLE = r"(?:(?:de|da|del|della|di|van|von|der|den|le|la|du|dos|das|y|al|bin|ben)[ \t])"
_NAME = rf"{_NAME_WORD}(?:[ \t]{_PARTICLE}?{_NAME_WORD}){{0,2}}"
_TITLE = r"(?:(?:Dr|Mr|Mrs|Ms|Mx|Prof|Herr|Frau|Monsieur|Madame|Mme|Mlle|M|Sr|Sra|Dott)\.?[ \t]+)"


def _either_case(phrase: str) -> str:
    """`phrase` with its first letter in either case ("[Hh]i")."""
    first = phrase[0]
    if first.isalpha() and first.lower() != first.upper():
        return f"[{first.upper()}{first.lower()}]" + re.escape(phrase[1:])
    return re.escape(phrase)


def _cues(phrases: str) -> str:
    return "|".join(_either_case(p).replace(r"\ ", "[ \\t]+") for p in phrases.split("|"))


_INTRO = _cues(
    "my name is|my name's|my name’s|i'm|i’m|i am|call me|they call me|"
    "je m'appelle|je m’appelle|mon nom est|moi c'est|moi c’est|"
    "ich heiße|ich heisse|mein Name ist|me llamo|mi nombre es|mi chiamo|il mio nome è"
)
_GREETING = _cues(
    "hi|hello|hey|dear|good morning|good afternoon|good evening|hallo|liebe|lieber|"
    "sehr geehrte|sehr geehrter|guten Tag|bonjour|salut|cher|chère|hola|querida|querido|"
    "estimado|estimada|ciao|buongiorno|gentile|caro|cara"
)
_SIGN_OFF = _cues(
    "thanks|thank you|thanks again|many thanks|thx|cheers|best,|best regards|kind regards|"
    "warm regards|regards|sincerely|yours,|yours truly|best wishes|all the best|love,|talk soon|"
    "danke|vielen Dank|viele Grüße|liebe Grüße|beste Grüße|mit freundlichen Grüßen|Grüße|Gruß|"
    "merci|cordialement|bien à vous|amitiés|bises|à bientôt|gracias|saludos|un saludo|grazie|"
    "saluti|un saluto|cordiali saluti"
)
INTRO_CORE = rf"(?:{_INTRO})[ \t]+{_TITLE}?{_NAME}"
GREETING_CORE = rf"(?:{_GREETING})[ \t]+{_TITLE}?{_NAME}[ \t]*(?:[,!:;]|\n|$)"
SIGN_OFF_CORE = rf"(?:{_SIGN_OFF})[ \t]*[,!.]?[ \t]*(?:\n[ \t]*|[ \t]|-+[ \t]*)?{_TITLE}?{_NAME}"
PERSON_CORES = (INTRO_CORE, GREETING_CORE, SIGN_OFF_CORE)

_BEFORE = r"(?<![\w'’\-])"
# Greetings and sign-offs open a line or a sentence ("I love Paris." is no sign-off).
_LINE_START = r"(?<![^\n.!?:;\"“(])[ \t]*"
_INTRO_RE = re.compile(rf"{_BEFORE}(?:{_INTRO})[ \t]+{_TITLE}?(?P<name>{_NAME})(?![\w'’])")
_GREETING_RE = re.compile(
    rf"{_LINE_START}(?:{_GREETING})[ \t]+{_TITLE}?(?P<name>{_NAME})[ \t]*(?:[,!:;]|\n|$)"
)
# A sign-off ends its line or the text ("Thanks, Joel", "Cheers,\nMaria."), or a sentence.
_SIGN_OFF_RE = re.compile(
    rf"{_LINE_START}(?:{_SIGN_OFF})[ \t]*[,!.]?[ \t]*(?:\n[ \t]*|[ \t]|-+[ \t]*)?{_TITLE}?"
    rf"(?P<name>{_NAME})[ \t]*(?:[.!]?[ \t]*(?:\n|$)|[.!][ \t]|,[ \t]+[a-z])"
)
NOT_NAMES = frozenset(
    word
    for line in Path(__file__).with_name("not_names.txt").read_text(encoding="utf-8").splitlines()
    if not line.startswith("#")
    for word in line.split()
)


def persons(text: str) -> Iterator[Span]:
    for pattern in (_INTRO_RE, _GREETING_RE, _SIGN_OFF_RE):
        for m in pattern.finditer(text):
            span = _name_span(text, m.start("name"), m.end("name"))
            if span is not None:
                yield span


def _name_span(text: str, start: int, end: int) -> Span | None:
    """The name's words up to the first that is not a name ("Maria From Spain" → "Maria"); None
    when the first is not one."""
    stop = start
    for word in re.finditer(r"\S+", text[start:end]):
        if word.group().strip(".,") in NOT_NAMES:
            break
        stop = start + word.end()
    return (start, stop, "person") if stop > start else None
