"""Phrase pools for the study demo writer: dispatcher lines, resident replies, judge notes."""

from __future__ import annotations

CHARACTERS = ("niki", "bob", "mary", "ben", "lindsay", "ross", "michelle", "ana", "tom", "mia")
POLICIES = ("bob", "lindsay", "michelle", "niki", "ross")
STRATEGIES = ("rational-informational", "emotional-relational", "social-normative")
NONROLE_SCENARIO = (
    "You are at home when you notice smoke in the distance. A wildfire is spreading rapidly. "
    "Your phone rings\u2014it's the fire department."
)
ROLEPLAY_SCENARIOS = {
    "niki": "It is a regular day at home. You (Niki) are with your partner when the phone rings.",
    "bob": "You (Bob) are finishing a shift at the hardware store; your dog is home alone.",
    "mary": "You (Mary) live alone with two cats on the edge of the canyon.",
    "ben": "You (Ben) are watching your younger siblings while your parents are at work.",
}

OPENINGS = (
    (
        "Hello, this is the fire department dispatcher. We're monitoring a wildfire close to your "
        "location and need to ensure your safety. Are you currently safe at home?"
    ),
    (
        "Hi, this is county fire dispatch. A brush fire is moving toward your neighborhood. Can you "
        "tell me where you are right now?"
    ),
    (
        "Good afternoon, this is the fire department. We're calling residents near the ridge about a "
        "fast-moving wildfire. How are you doing?"
    ),
    (
        "This is emergency dispatch with the fire department. There's an active wildfire a few miles "
        "from you. Is everyone in your home okay?"
    ),
)
OPERATOR_LINES = {
    "bob": (
        (
            "I hear you, and your home matters. But the fire is moving faster than crews can hold it. "
            "Please take your keys and go now."
        ),
        (
            "Your neighbors on Pine Hollow have already left. The shelter at the high school has room "
            "for you."
        ),
    ),
    "lindsay": (
        (
            "I understand this is frightening. Let's take it one step at a time: grab your medications "
            "and your phone charger."
        ),
        (
            "You're doing the right thing by talking with me. Is there anyone who needs help getting "
            "to the car?"
        ),
    ),
    "michelle": (
        (
            "Wind gusts are expected to reach 35 mph this afternoon, and the fire has already crossed "
            "Route 9. You need to leave within the next 15 minutes."
        ),
        (
            "The evacuation order for your zone is mandatory. Take Highway 12 west; the eastern roads "
            "may close without warning."
        ),
    ),
    "niki": (
        (
            "Please gather your essentials and leave the area now. Head to the nearest evacuation "
            "center for safety."
        ),
        (
            "If you can, bring your pets in carriers and leave the gate open for any animals you can't "
            "take."
        ),
    ),
    "ross": (
        (
            "I know work feels important, but nothing at your desk is worth your life. Can you leave "
            "in the next ten minutes?"
        ),
        (
            "Smoke will make the roads hard to see soon. If you go now, you'll be ahead of the "
            "traffic."
        ),
    ),
}
CLOSINGS = (
    "Thank you for your cooperation. Stay safe and take care as you evacuate.",
    "Please stay safe and evacuate now. Goodbye.",
    "I'll note that you're leaving. Drive carefully and keep your headlights on.",
)
RESIDENT_LINES = {
    "AGREE": (
        "okay, I'm grabbing my bag and leaving now",
        "Alright, we'll head to the high school.",
        "yes, leaving in five minutes",
        "Fine, I'll go. Which road again?",
    ),
    "REFUSE": (
        "No, I'm staying. I've been through fires before.",
        "I'm not leaving my horses behind.",
        "I don't think it's that bad, I'll stay.",
        "Stop calling, I'm not going anywhere.",
    ),
    "NEUTRAL": (
        "How close is it exactly?",
        "What about my neighbor, is she leaving?",
        "Who are you again?",
        "I can see some smoke but it looks far.",
    ),
    "UNKNOWN": ("yes", "hmm", "I'm at home.", "I am doing good"),
    "DELAY": (
        "Let me finish packing first, maybe half an hour.",
        "I need to wait for my husband to get home.",
        "I'll go after I water the garden.",
    ),
}
JUDGE_NOTES = {
    "AGREE": "The resident commits to leaving and asks about the route.",
    "REFUSE": "The resident states plainly that they will not evacuate.",
    "NEUTRAL": "The resident asks for information without indicating a decision.",
    "UNKNOWN": "The resident's response does not indicate any clear stance on evacuating.",
    "DELAY": "The resident intends to leave but only after a delay.",
}
NATURALNESS = ("very-natural", "somewhat-natural", "neutral", "somewhat-unnatural")
EDUCATION = ("high-school", "some-college", "college-graduate", "graduate-degree", "other")
OCCUPATIONS = ("nurse", "software engineer", "teacher", "retired", "student", "electrician")
NICKNAMES = ("Mavis", "Jo", "Sunny", "Dee", "Kit", "Rae")
