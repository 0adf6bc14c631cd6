"""Conversation and comment text for the dialogue demo (varied, realistic, no lorem ipsum)."""

SUPPORT_TOPICS = [
    (
        "My router drops the Wi-Fi every evening around eight.",
        "Does it happen on 2.4 GHz, 5 GHz or both?",
        "Only on 5 GHz, the 2.4 network is fine.",
        "Switch the 5 GHz band to channel 36 and disable band steering, then reboot.",
    ),
    (
        "How do I export all my invoices as CSV?",
        "Open Billing, choose the date range and click Export, then CSV.",
        "I don't see an Export button.",
        "It only shows for account owners; ask your owner to grant you the Billing admin role.",
    ),
    (
        "I was charged twice for the May subscription.",
        "Sorry about that. Can you share the last four digits of the card?",
        "It ends in 4417.",
        "I found the duplicate charge and issued a refund; it takes 3 to 5 business days.",
    ),
    (
        "The mobile app logs me out every time I close it.",
        "Which phone and app version are you on?",
        "Pixel 7, version 5.12.0.",
        "Version 5.12.1 fixes that session bug; please update from the store.",
    ),
    (
        "Can I change the email address on my account?",
        "Yes: Settings, Profile, then Email. We send a confirmation link.",
        "The link says it expired.",
        "Links expire after 30 minutes; I have sent a fresh one just now.",
    ),
    (
        "Is there a discount for students?",
        "Yes, 30% off with a valid university email address.",
        "Does it work for PhD students too?",
        "It does, any active enrolment qualifies.",
    ),
    (
        "My package shows delivered but it is not here.",
        "Please check with neighbours and the building reception first.",
        "I did, nobody has it.",
        "I have opened a carrier trace and will reship it if it is not found within 48 hours.",
    ),
]
TUTORING_TOPICS = [
    (
        "Why is the sky blue?",
        "Shorter wavelengths scatter more off air molecules; that is Rayleigh scattering.",
        "So sunsets are red because the light travels through more air?",
        "Exactly: most of the blue is scattered away before it reaches you.",
    ),
    (
        "Can you check my answer: 3x + 5 = 20 gives x = 5?",
        "Subtract 5 from both sides to get 3x = 15, so yes, x = 5.",
        "What if it were 3x + 5 = 21?",
        "Then 3x = 16 and x = 16/3, about 5.33.",
    ),
    (
        "What is the difference between mitosis and meiosis?",
        "Mitosis makes two identical cells; meiosis makes four cells with half the chromosomes.",
        "Why do we need meiosis at all?",
        "It produces gametes, so fertilisation restores the full chromosome count.",
    ),
    (
        "How do I find the derivative of x squared?",
        "Use the power rule: bring the 2 down and subtract one from the exponent, giving 2x.",
        "And for x cubed?",
        "Same rule: 3x squared.",
    ),
    (
        "When did the Western Roman Empire fall?",
        "The usual date is 476, when Odoacer deposed Romulus Augustulus.",
        "Was it sudden?",
        "No, it was a long decline over more than a century.",
    ),
    (
        "What does a semicolon do?",
        "It joins two closely related independent clauses without a conjunction.",
        "Can I use it before 'however'?",
        "Yes: 'It rained; however, we went out.'",
    ),
]
COMMENTS = [
    "That fixed it, thanks!",
    "Not what I asked.",
    "Too long, but correct.",
    "Clear explanation.",
    "The steps did not match my screen.",
    "Great, exactly what I needed.",
    "Still confused.",
]
