"""Test data shared by the MindGraph tests."""

from __future__ import annotations

DOC = (
    "Maya Chen moved to Lisbon in March 2021 to join the Tagus Robotics lab.\n"
    "She led a team of 12 engineers building underwater drones.\n"
    "In 2023 the lab won the Atlantic Prize for its drone Marlin.\n"
    "Her brother Leo stayed in Toronto, where he teaches history.\n"
    "The Marlin drone can dive to 300 meters and costs $45,000.\n"
    "Maya says the hardest part was the cold water testing in Sines.\n"
)


def story(seed: int = 3) -> tuple[str, str]:
    """About 31 KB of village chronicle where Ana and the village recur in every
    paragraph, and one sentence, past character 22,000, says why Ana left. Returns the
    text and that sentence."""
    import random

    rng = random.Random(seed)
    people = ["Ana", "her aunt Odile", "the baker", "old Tomas", "the twins", "the priest"]
    acts = [
        "swept the square",
        "mended the fishing nets",
        "carried bread to the church",
        "walked along the cliffs",
        "sang at the harvest feast",
        "counted the goats",
        "painted the shutters blue",
        "wrote letters to the city",
        "repaired the chapel roof",
    ]
    times = ["in the morning", "after the rains", "on market day", "before dawn", "at dusk"]
    places = ["in the village", "near the village well", "on the village road"]
    paragraphs: list[str] = []
    while sum(len(p) for p in paragraphs) < 31_000:
        lines = [
            f"{rng.choice(people)} {rng.choice(acts)} {rng.choice(places)} {rng.choice(times)}."
            for _ in range(rng.randint(4, 7))
        ]
        paragraphs.append(" ".join(line[0].upper() + line[1:] for line in lines))
    text = "\n\n".join(paragraphs)
    cut = text.index("\n\n", 22_000)
    answer = "Ana left the village for good when the river mill burned down in the winter storm."
    return text[:cut] + "\n\n" + answer + text[cut:], answer


def transcript() -> tuple[str, str]:
    """A user/assistant chat exported as text, 60 turns on cooking, travel and
    gardening, and one long assistant turn (about 2,100 characters, over seven lines)
    with a plan for the user's database migration. Returns the text and that turn."""
    topics = [
        ("How long should I roast a chicken?", "About 20 minutes per 500 g at 200 C."),
        ("Which train goes to the coast?", "The morning express leaves at 7:40 on weekdays."),
        ("When do I plant tomatoes?", "After the last frost, once nights stay above 10 C."),
        ("What spice goes with lentils?", "Cumin and a little smoked paprika work well."),
        ("Is the museum open on Mondays?", "It closes on Mondays and opens late on Thursdays."),
    ]
    steps = [
        "Take a full backup of the orders database and restore it on a spare server",
        "Freeze schema changes for the week of the move and tell the team",
        "Copy the customer tables first, since the invoices reference them",
        "Run both databases side by side and compare row counts every night",
        "Switch the application's connection string during the Sunday window",
        "Keep the old server read-only for a month before it is retired",
    ]
    long_turn = "assistant: Here is a migration plan for your orders database:\n" + "".join(
        f"{i}. {step}. This matters because a partial copy of the orders data is very hard "
        f"to repair once customers place new orders against it, and every later step "
        f"assumes this one finished cleanly and was checked by someone else. Write the "
        f"result in the shared log with the time it finished.\n"
        for i, step in enumerate(steps, start=1)
    )
    lines = []
    for day in range(6):
        for question, answer in topics:
            lines += [f"[2024-05-{day + 1:02d} 10:00] user: {question}", f"assistant: {answer}"]
        if day == 3:
            lines += ["user: I need to move my orders database to the new server.", long_turn]
    return "\n".join(lines), long_turn.rstrip()
