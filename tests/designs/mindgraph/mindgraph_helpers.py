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
