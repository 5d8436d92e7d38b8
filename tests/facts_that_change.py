"""A chat of two friends in which facts about Jonas change over time (issue 59's steps):
he moves from Bristol to Cardiff, gives up the cello for the viola, changes employer,
favourite food, rent and weekly distance, while Mia's likes and Jonas's visits and
friends only grow."""

from __future__ import annotations

#: (speaker, text); turn n happens at day n
CHAT: list[tuple[str, str]] = [
    ("Mia", "Jonas! Long time. How are things?"),
    ("Jonas", "Good! I live in Bristol now, and I play the cello in a quartet."),
    ("Mia", "Lovely. My favourite food is sushi, by the way, we should go out."),
    ("Jonas", "I work at Deltares as a hydrologist. My rent is £700 a month."),
    ("Mia", "That's cheap for Bristol."),
    ("Jonas", "My favourite food is lasagne, so you choose the place."),
    ("Mia", "I like jazz and blues, there's a club near the harbour."),
    ("Jonas", "I visited Paris and Rome last summer, the food was amazing."),
    ("Mia", "Jealous. I'm friends with Ana and Ben from the choir."),
    ("Jonas", "I run 30 km a week, mostly along the river."),
    ("Mia", "Impressive."),
    ("Jonas", "Big news: I moved to Cardiff last week!"),
    ("Mia", "How's Cardiff treating you?"),
    ("Jonas", "Great. I no longer play the cello. I play the viola now."),
    ("Mia", "The viola! Brave."),
    ("Jonas", "My new boss at Vattenfall is lovely, she reads my reports."),
    ("Mia", "So you left the hydrology job?"),
    ("Jonas", "Yes, I quit Deltares in May."),
    ("Mia", "And the flat?"),
    ("Jonas", "My rent is now £950 a month, but the flat is bigger."),
    ("Mia", "Worth it."),
    ("Jonas", "My favourite food is ramen these days, there's a great place on my street."),
    ("Mia", "I like hiking too, we could walk the Brecon Beacons."),
    ("Jonas", "Yes! I visited Lisbon in June, and the hills there were steep."),
    ("Mia", "I like jazz more than ever, though."),
    ("Jonas", "I run 40 km a week now."),
    ("Mia", "I'm friends with Carl now as well."),
    ("Jonas", "Say hi to him."),
    ("Mia", "Will do. See you soon!"),
    ("Jonas", "See you!"),
]

DAY = 86400.0


def turns() -> list[tuple[str, str, str, str, float]]:
    """(id, speaker, addressee, text, time) of every turn."""
    out = []
    for n, (speaker, text) in enumerate(CHAT):
        other = "Mia" if speaker == "Jonas" else "Jonas"
        out.append((f"t{n}", speaker, other, text, 1_700_000_000.0 + n * DAY))
    return out


def items() -> list[dict[str, str]]:
    """The chat as ``add_many`` takes it."""
    from datetime import UTC, datetime

    return [
        {
            "id": tid,
            "speaker": speaker,
            "text": text,
            "occurred_at": datetime.fromtimestamp(at, UTC).isoformat(),
        }
        for tid, speaker, _, text, at in turns()
    ]


#: (turn superseded, turn superseding) of the chat: home, instrument (ended by a
#: negation), employer (said only as "my new boss at"), rent, favourite food, distance
CHANGES = {
    ("t1", "t11"),
    ("t1", "t13"),
    ("t3", "t15"),
    ("t3", "t19"),
    ("t5", "t21"),
    ("t9", "t25"),
}


def superseded(records: list) -> set[tuple[str, str]]:  # type: ignore[type-arg]
    """(turn, turn) of every supersession among ``records`` (facts or triplets): the
    superseded record's turns against its replacement's."""
    by_id = {r.id: r for r in records}
    out: set[tuple[str, str]] = set()
    for r in records:
        for new in r.replaced_by:
            for a in {s.episode for s in r.sources}:
                for b in {s.episode for s in by_id[new].sources}:
                    out.add((a, b))
    return out
