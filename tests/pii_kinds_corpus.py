"""A generated corpus for the check-digit, address and name kinds of the redactor: labelled values
embedded in sentences of five languages, and ordinary sentences full of look-alikes.

Independent of the code under test: every check digit here is computed by the functions below,
written from the published rules (Luhn; ISO 13616 mod 97; ISO 7064 MOD 11,10 for the Steuer-ID;
the NIR key 97 - n mod 97; the DNI/NIE letter table; the codice fiscale's odd/even tables), while
the detectors call python-stdnum. SSNs and NINOs have no check digit: they follow the SSA's and
HMRC's issuing rules, written out here. Names and addresses are built from hand-written lists.
Seeded, so the corpus is the same on every run."""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

SEED = 38


@dataclass(frozen=True)
class Labelled:
    text: str
    kind: str
    value: str


# -- check digits, from the published rules ----------------------------------------------------


def luhn_digit(payload: str) -> str:
    """The digit that makes payload + digit pass Luhn (double every second digit from the right of
    the full number, i.e. every first from the right of the payload)."""
    total = 0
    for i, char in enumerate(reversed(payload)):
        d = int(char)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def luhn_ok(number: str) -> bool:
    return luhn_digit(number[:-1]) == number[-1]


def _iban_number(text: str) -> int:
    return int("".join(str(int(c, 36)) for c in text))


def iban_with_check(country: str, bban: str) -> str:
    """ISO 13616: check digits 98 - (BBAN + country + 00 as a number, A=10 … Z=35) mod 97."""
    check = 98 - _iban_number(bban + country + "00") % 97
    return f"{country}{check:02d}{bban}"


def steuer_id_digit(first10: str) -> str:
    """ISO 7064 MOD 11,10."""
    product = 10
    for char in first10:
        total = (int(char) + product) % 10 or 10
        product = total * 2 % 11
    return str((11 - product) % 10)


def nir_key(first13: str) -> str:
    return f"{97 - int(first13) % 97:02d}"


_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def dni_letter(number: int) -> str:
    return _DNI_LETTERS[number % 23]


_CF_ODD = dict(
    zip(
        string.digits + string.ascii_uppercase,
        [1, 0, 5, 7, 9, 13, 15, 17, 19, 21]
        + [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25]
        + [24, 23],
        strict=True,
    )
)
_CF_EVEN = {
    c: (int(c) if c.isdigit() else ord(c) - 65) for c in string.digits + string.ascii_uppercase
}


def cf_check(first15: str) -> str:
    """Odd positions (1st, 3rd, …) by the odd table, even ones by their value, sum mod 26."""
    total = sum((_CF_ODD if i % 2 == 0 else _CF_EVEN)[c] for i, c in enumerate(first15))
    return chr(65 + total % 26)


# -- values --------------------------------------------------------------------------------------

# (prefix, length, grouping) of issued cards: Visa, Mastercard (51-55, 2221-2720), Amex, Discover,
# JCB, Diners, UnionPay, Maestro.
_CARD_SHAPES = [
    ("4", 16, (4, 4, 4, 4)),
    ("51", 16, (4, 4, 4, 4)),
    ("55", 16, (4, 4, 4, 4)),
    ("2221", 16, (4, 4, 4, 4)),
    ("2720", 16, (4, 4, 4, 4)),
    ("34", 15, (4, 6, 5)),
    ("37", 15, (4, 6, 5)),
    ("6011", 16, (4, 4, 4, 4)),
    ("65", 16, (4, 4, 4, 4)),
    ("3530", 16, (4, 4, 4, 4)),
    ("36", 14, (4, 6, 4)),
    ("62", 16, (4, 4, 4, 4)),
    ("6759", 16, (4, 4, 4, 4)),
    ("4", 19, (4, 4, 4, 4, 3)),
]


def card_number(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    return body + luhn_digit(body)


def _grouped(digits: str, groups: tuple[int, ...], sep: str) -> str:
    out, pos = [], 0
    for g in groups:
        out.append(digits[pos : pos + g])
        pos += g
    return sep.join(out)


def cards(rng: random.Random, n: int) -> list[str]:
    values = []
    for i in range(n):
        prefix, length, groups = _CARD_SHAPES[i % len(_CARD_SHAPES)]
        digits = card_number(rng, prefix, length)
        values.append(digits if i % 3 == 0 else _grouped(digits, groups, " -"[i % 3 - 1]))
    return values


_IBAN_BBANS = {  # country → BBAN made of (count, class) pieces (ISO 13616 registry formats)
    "DE": ((18, "n"),),
    "GB": ((4, "a"), (14, "n")),
    "FR": ((10, "n"), (11, "c"), (2, "n")),
    "IT": ((1, "a"), (10, "n"), (12, "c")),
    "NL": ((4, "a"), (10, "n")),
    "AT": ((16, "n"),),
    "CH": ((5, "n"), (12, "c")),
    "PL": ((24, "n"),),
    "IE": ((4, "a"), (14, "n")),
}
_CLASSES = {
    "n": string.digits,
    "a": string.ascii_uppercase,
    "c": string.digits + string.ascii_uppercase,
}


def ibans(rng: random.Random, n: int) -> list[str]:
    values = []
    countries = list(_IBAN_BBANS)
    for i in range(n):
        country = countries[i % len(countries)]
        bban = "".join(
            rng.choice(_CLASSES[cls]) for count, cls in _IBAN_BBANS[country] for _ in range(count)
        )
        iban = iban_with_check(country, bban)
        spaced = " ".join(iban[j : j + 4] for j in range(0, len(iban), 4))
        values.append(spaced if i % 2 == 0 else iban)
    return values


def ssn(rng: random.Random) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


_NINO_FIRST = "ABCEGHJKLMNOPRSTWXYZ"
_NINO_SECOND = "ABCEGHJKLMNPRSTWXYZ"
_NINO_NOT_ISSUED = {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}


def nino(rng: random.Random) -> str:
    while (prefix := rng.choice(_NINO_FIRST) + rng.choice(_NINO_SECOND)) in _NINO_NOT_ISSUED:
        pass
    digits = f"{rng.randint(0, 999999):06d}"
    return f"{prefix} {digits[:2]} {digits[2:4]} {digits[4:]} {rng.choice('ABCD')}"


def steuer_id(rng: random.Random) -> str:
    """Ten digits, the first not 0, one digit twice and another left out, then the check digit."""
    digits = rng.sample(string.digits, 9)
    digits.insert(rng.randrange(1, 10), rng.choice(digits))
    if digits[0] == "0":
        digits[0], digits[1] = digits[1], digits[0]
    first10 = "".join(digits)
    return first10 + steuer_id_digit(first10)


def nir(rng: random.Random) -> str:
    first13 = (
        f"{rng.choice('12')}{rng.randint(40, 99):02d}{rng.randint(1, 12):02d}"
        f"{rng.choice([d for d in range(1, 96) if d != 20]):02d}{rng.randint(1, 990):03d}"
        f"{rng.randint(1, 999):03d}"
    )
    return first13 + nir_key(first13)


def spaced_nir(value: str) -> str:
    cuts = (1, 3, 5, 7, 10, 13)
    parts, pos = [], 0
    for cut in cuts:
        parts.append(value[pos:cut])
        pos = cut
    return " ".join([*parts, value[13:]])


def dni(rng: random.Random) -> str:
    number = rng.randint(10_000_000, 99_999_999)
    return f"{number}{dni_letter(number)}"


def nie(rng: random.Random) -> str:
    lead = rng.choice("XYZ")
    number = rng.randint(0, 9_999_999)
    return f"{lead}{number:07d}{dni_letter(int(str('XYZ'.index(lead)) + f'{number:07d}'))}"


_CF_MONTHS = "ABCDEHLMPRST"
_CF_PLACES = ["A562", "H501", "F205", "L219", "G273", "D612", "A944", "F839"]


def codice_fiscale(rng: random.Random) -> str:
    consonants = "BCDFGHJKLMNPQRSTVWXZ"
    letters = "".join(rng.choice(consonants) for _ in range(6))
    day = rng.randint(1, 28) + rng.choice([0, 40])
    birth = f"{rng.randint(40, 99):02d}{rng.choice(_CF_MONTHS)}{day:02d}"
    first15 = f"{letters}{birth}{rng.choice(_CF_PLACES)}"
    return first15 + cf_check(first15)


def national_ids(rng: random.Random, n: int) -> list[tuple[str, str]]:
    """(sentence template with {v}, value), cycling through the id types and their formats."""
    makers = [
        lambda: ("My SSN is {v}, please keep it private.", ssn(rng)),
        lambda: ("Social security number {v} was on the W-2.", ssn(rng).replace("-", " ")),
        lambda: ("SSN: {v}", ssn(rng).replace("-", "")),
        lambda: ("Her National Insurance number is {v}.", nino(rng)),
        lambda: ("NINO {v} on the payslip", nino(rng).replace(" ", "")),
        lambda: ("Meine Steuer-ID lautet {v}.", steuer_id(rng)),
        lambda: ("Steueridentifikationsnummer: {v}", steuer_id(rng)),
        lambda: ("Mon numéro de sécurité sociale est le {v}.", spaced_nir(nir(rng))),
        lambda: ("NIR {v} sur la carte Vitale", nir(rng)),
        lambda: ("Mi DNI es {v} y vivo en Madrid.", dni(rng)),
        lambda: ("Adjunto mi NIE {v} para el contrato.", nie(rng)),
        lambda: ("Il mio codice fiscale è {v}.", codice_fiscale(rng)),
    ]
    return [makers[i % len(makers)]() for i in range(n)]


_US_STREETS = ["Main", "Oak", "Maple", "Pennsylvania", "Elm", "Cedar", "Lincoln", "Washington"]
_US_SUFFIXES = ["Street", "St.", "Avenue", "Ave", "Road", "Blvd", "Lane", "Drive", "Court"]
_US_TOWNS = [("Springfield", "IL", "62704"), ("Austin", "TX", "78701"), ("Portland", "OR", "97205")]
_UK_STREETS = ["Baker", "Elm", "Victoria", "Church", "Station", "Mill", "Queens"]
_UK_SUFFIXES = ["Street", "Road", "Lane", "Close", "Gardens", "Crescent", "Grove", "Way"]
_UK_TOWNS = [
    ("London", "NW1 6XE"),
    ("Leeds", "LS6 2AB"),
    ("Manchester", "M4 1HQ"),
    ("Bath", "BA1 1LZ"),
]
_DE_STREETS = ["Haupt", "Bahnhof", "Schiller", "Goethe", "Linden", "Garten", "Kirch"]
_DE_SUFFIXES = ["straße", "str.", "weg", "platz", "allee", "gasse"]
_DE_TOWNS = [("10115", "Berlin"), ("80331", "München"), ("50667", "Köln"), ("20095", "Hamburg")]
_FR_TYPES = ["rue", "avenue", "boulevard", "place", "chemin", "allée", "impasse", "quai"]
_FR_NAMES = ["de la Paix", "Victor Hugo", "des Lilas", "du Moulin", "Jean Jaurès", "de Provence"]
_FR_TOWNS = [("75002", "Paris"), ("69001", "Lyon"), ("13001", "Marseille"), ("33000", "Bordeaux")]


def addresses(rng: random.Random, n: int) -> list[tuple[str, str]]:
    def us() -> tuple[str, str]:
        town, state, zip_code = rng.choice(_US_TOWNS)
        street = f"{rng.randint(1, 9999)} {rng.choice(_US_STREETS)} {rng.choice(_US_SUFFIXES)}"
        if rng.random() < 0.15:  # lower case: not recognised (the street word must be capitalised)
            street = street.lower()
        value = f"{street}, {town}, {state} {zip_code}" if rng.random() < 0.6 else street
        return rng.choice(
            ["Please ship it to {v}.", "I live at {v} since May.", "Address: {v}"]
        ), value

    def uk() -> tuple[str, str]:
        town, postcode = rng.choice(_UK_TOWNS)
        number = f"{rng.randint(1, 300)}{rng.choice(['', '', 'A', 'B'])}"
        value = f"{number} {rng.choice(_UK_STREETS)} {rng.choice(_UK_SUFFIXES)}, {town} {postcode}"
        return rng.choice(["Send the forms to {v}, ta.", "We moved to {v} last year."]), value

    def de() -> tuple[str, str]:
        plz, town = rng.choice(_DE_TOWNS)
        number = f"{rng.randint(1, 200)}{rng.choice(['', '', 'a', 'b'])}"
        suffix = rng.choice(_DE_SUFFIXES)
        street = f"{rng.choice(_DE_STREETS)}{suffix}" if rng.random() < 0.7 else "Berliner Straße"
        value = f"{street} {number}, {plz} {town}" if rng.random() < 0.7 else f"{street} {number}"
        return rng.choice(["Ich wohne in der {v}.", "Bitte schicken Sie es an {v}."]), value

    def fr() -> tuple[str, str]:
        cp, town = rng.choice(_FR_TOWNS)
        number = f"{rng.randint(1, 150)}{rng.choice(['', '', ' bis', ' ter'])}"
        street = f"{number} {rng.choice(_FR_TYPES)} {rng.choice(_FR_NAMES)}"
        value = f"{street}, {cp} {town}" if rng.random() < 0.7 else street
        return rng.choice(["J'habite au {v} depuis 2019.", "Envoyez le colis au {v}."]), value

    makers = [us, uk, de, fr]
    return [makers[i % len(makers)]() for i in range(n)]


_NAMES = [
    "Maria Lopez", "Joel", "Camille Dubois", "Jürgen Weber", "Łukasz Nowak", "Siobhán O'Neill",
    "Ana", "Kwame Mensah", "Priya Natarajan", "Sophie", "Giulia Rossi", "Mehmet Yılmaz",
    "Hannah Schmidt", "José García", "Chloé Martin", "Tomás", "Ingrid Johansson", "Pierre",
    "Akira Tanaka", "Fatima Zahra", "Lars", "Olga Petrova", "DeShawn Williams", "Marco",
    "Ludwig van Beethoven", "Ewa", "Noah", "Sara Cohen",
]  # fmt: skip
_NAME_TEMPLATES = [
    "Hi, my name is {v} and I have a question.",
    "Hello! I'm {v}, nice to meet you.",
    "I am {v}, the new tenant.",
    "Bonjour, je m'appelle {v}.",
    "Hallo, ich heiße {v} und komme aus Köln.",
    "Mein Name ist {v}.",
    "Hola, me llamo {v}.",
    "Ciao, mi chiamo {v}!",
    "Hi {v},\nthanks for the quick reply.",
    "Dear {v},\nplease find the report attached.",
    "Liebe {v}, danke für die Nachricht.",
    "Bonjour {v}, merci pour votre aide.",
    "Hola {v}, gracias por todo.",
    "That fixed it.\nThanks, {v}",
    "See you tomorrow.\n\nBest regards,\n{v}",
    "Let me know if anything changes. Cheers, {v}",
    "Danke für die Hilfe!\nViele Grüße,\n{v}",
    "Merci d'avance.\nCordialement,\n{v}",
    "Thank you {v}!",
    "This is {v} from the front desk.",  # no cue the detector knows: a miss, counted
]


def names(rng: random.Random, n: int) -> list[tuple[str, str]]:
    return [(_NAME_TEMPLATES[i % len(_NAME_TEMPLATES)], rng.choice(_NAMES)) for i in range(n)]


_CARD_TEMPLATES = [
    "Please charge my card {v} for the deposit.",
    "Kartennummer: {v}",
    "Ma carte bancaire est la {v}, expiration 04/27.",
    "Use {v} for the booking, CVC on the back.",
    "Mi tarjeta es {v}.",
]
_IBAN_TEMPLATES = [
    "Please transfer the refund to {v}.",
    "Überweisung bitte auf {v} bis Freitag.",
    "Mon IBAN est {v}.",
    "IBAN: {v} (BIC on the invoice)",
    "Il mio IBAN è {v}, grazie.",
]


def labelled(per_kind: int = 60) -> list[Labelled]:
    """`per_kind` labelled values of each kind in sentences."""
    rng = random.Random(SEED)
    out = [
        Labelled(_CARD_TEMPLATES[i % 5].format(v=v), "card", v)
        for i, v in enumerate(cards(rng, per_kind))
    ]
    out += [
        Labelled(_IBAN_TEMPLATES[i % 5].format(v=v), "iban", v)
        for i, v in enumerate(ibans(rng, per_kind))
    ]
    for kind, pairs in (
        ("national_id", national_ids(rng, per_kind)),
        ("address", addresses(rng, per_kind)),
        ("person", names(rng, per_kind)),
    ):
        out += [Labelled(template.format(v=v), kind, v) for template, v in pairs]
    return out


# -- look-alikes ---------------------------------------------------------------------------------


def _not_luhn(rng: random.Random, length: int, prefix: str) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    good = luhn_digit(body)
    return body + rng.choice([d for d in string.digits if d != good])


def _wrong_iban(rng: random.Random) -> str:
    iban = iban_with_check("DE", "".join(rng.choice(string.digits) for _ in range(18)))
    wrong = (int(iban[2:4]) + rng.randint(1, 90)) % 97
    return f"DE{max(wrong, 2):02d}{iban[4:]}" if f"{wrong:02d}" != iban[2:4] else "DE00" + iban[4:]


def look_alikes(n: int = 500) -> list[str]:
    """Ordinary sentences with order numbers, dates, product codes, tracking numbers, long numbers
    that fail their check digit, and capitalised common words after the name cues."""
    rng = random.Random(SEED + 1)
    fixed = [
        "Hi Team, the build is green again.",
        "Hello World! is the first program.",
        "Thanks, Everyone, for joining the call.",
        "I'm Sorry to hear that the delivery was late.",
        "I am Not sure the answer is right.",
        "Dear Customer, your order has shipped.",
        "Best Practices\nKeep functions small.",
        "Hi there, can you help me?",
        "Thanks Again for the help.",
        "Good Morning Everyone!",
        "My name is not important here.",
        "Top 10 Best Way to learn Python",
        "Chapter 2 The Place of Memory",
        "We took Route 66 through Arizona.",
        "Liebe Grüße\nund bis bald",
        "Hallo Welt, wie geht's?",
        "Bonjour à tous, merci d'être venus.",
        "Cheers Mate, see you at 5.",
        "I'm American and I work in Berlin.",
        "Danke Schön für die Blumen.",
        "Version 3.11.4 was released on 2024-10-07.",
        "Flight LH 2024 leaves at 14:30 from gate B12.",
        "The ISBN is 978-3-16-148410-0.",
        "Room 101 is on the 3rd floor.",
        "Windows 11 and iPhone 15 Pro are supported.",
        "Call of Duty 4 sold 15 million copies.",
        "Step 3 Way Forward: merge the branch.",
        "The meeting is on Friday, March 14, 2025.",
        "Temperature was 21.5 °C at 06:45.",
        "Section 4 Main results are in the appendix.",
        "I'm Claude, an AI assistant. How can I help?",
        "Hi Gemini, summarise this page.",
    ]
    makers = [
        lambda: f"Your order #{rng.randint(10**7, 10**8 - 1)} has shipped.",
        lambda: f"Order number {_not_luhn(rng, 16, '4')} could not be found.",
        lambda: f"Reference {_not_luhn(rng, 16, '5' + rng.choice('12345'))} is pending.",
        lambda: "Tracking: 1Z" + "".join(rng.choice(_CLASSES["c"]) for _ in range(16)),
        lambda: (
            f"USPS tracking {rng.choice(['9400', '9205', '9361'])} {rng.randint(1000, 9999)} "
            f"{rng.randint(1000, 9999)} {rng.randint(1000, 9999)} {rng.randint(1000, 9999)} "
            f"{rng.randint(10, 99)}"
        ),
        lambda: f"The invoice INV-{rng.randint(2019, 2025)}-{rng.randint(1, 99999):05d} is paid.",
        lambda: (
            f"Product code SKU-{rng.randint(1000, 9999)}-{rng.choice(string.ascii_uppercase)}"
            f"{rng.choice(string.ascii_uppercase)} is out of stock."
        ),
        lambda: (
            f"Meeting on {rng.randint(2020, 2026)}-{rng.randint(1, 12):02d}-"
            f"{rng.randint(1, 28):02d} at {rng.randint(8, 18)}:{rng.choice(['00', '15', '30'])}."
        ),
        lambda: f"The account id {_wrong_iban(rng)} failed validation.",
        lambda: f"Timestamp {rng.randint(1_600_000_000_000, 1_800_000_000_000)} in the log.",
        lambda: (
            f"Batch {rng.randint(100, 999)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}"
            f"{rng.choice(string.ascii_uppercase)} was recalled."
        ),
        lambda: (
            f"Serial number {''.join(rng.choice(string.ascii_uppercase) for _ in range(3))}"
            f"{rng.randint(10**8, 10**9 - 1)} on the sticker."
        ),
        lambda: f"Model XPS-{rng.randint(1000, 9999)} with {rng.choice([8, 16, 32])} GB of RAM.",
        lambda: (
            f"The population grew to {rng.randint(10**6, 10**9):,} by {rng.randint(1900, 2020)}."
        ),
        lambda: f"Hi {rng.choice(['Team', 'All', 'Everyone', 'Folks', 'Guys'])}, quick update.",
        lambda: f"Thanks, {rng.choice(['Everyone', 'Team', 'All', 'Guys'])}!",
        lambda: (
            f"I'm {rng.choice(['Happy', 'Glad', 'Sorry', 'Not', 'Sure', 'Ready', 'Back'])} to "
            "help with that."
        ),
        lambda: f"Go to page {rng.randint(1, 400)}, paragraph {rng.randint(1, 20)}.",
        lambda: (
            f"The {rng.choice(['Great', 'Old', 'Grand'])} Hall seats {rng.randint(100, 900)} "
            "people."
        ),
        lambda: (
            f"Bus {rng.randint(1, 300)} stops at the Central Station every "
            f"{rng.randint(5, 20)} minutes."
        ),
        lambda: f"Postleitzahl {rng.randint(10000, 99999)} gehört zu einer Stadt im Norden.",
        lambda: f"Il y a {rng.randint(2, 40)} rues dans le quartier.",
        lambda: (
            f"Lot {rng.randint(10**9, 10**10 - 1)}{rng.randint(10, 99)} shipped in "
            f"{rng.randint(2, 12)} boxes."
        ),
    ]
    out = list(fixed)
    while len(out) < n:
        out.append(makers[len(out) % len(makers)]())
    return out
