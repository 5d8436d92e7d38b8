"""The route's refinements, each checked on a small real store (SQLite + MiniLM)."""

from datetime import datetime
from pathlib import Path

import pytest

from memstrata.config import Config
from memstrata.embed import MiniLMEmbedder
from memstrata.memory import Memory
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1, EpisodeRoute
from memstrata.store import SearchFilters, SQLiteStore

TURNS = [
    {
        "id": "a1",
        "text": "Hi Nora, how was your weekend?",
        "speaker": "Felix",
        "session": "s1",
        "occurred_at": datetime(2023, 5, 6, 10, 0),
    },
    {
        "id": "a2",
        "text": "Great, I went kayaking on the river with my cousin.",
        "speaker": "Nora",
        "session": "s1",
        "occurred_at": datetime(2023, 5, 6, 10, 1),
    },
    {
        "id": "a3",
        "text": "I went kayaking too, a cold lake trip in March.",
        "speaker": "Felix",
        "session": "s1",
        "occurred_at": datetime(2023, 5, 6, 10, 2),
    },
    {
        "id": "b1",
        "text": "Guess what I finally bought?",
        "speaker": "Nora",
        "session": "s2",
        "occurred_at": datetime(2024, 2, 1, 9, 0),
    },
    {
        "id": "b2",
        "text": "An electric piano! I practise scales every evening.",
        "speaker": "Nora",
        "session": "s2",
        "occurred_at": datetime(2024, 2, 1, 9, 1),
    },
    {
        "id": "b3",
        "text": "Nora, that's wonderful news.",
        "speaker": "Felix",
        "session": "s2",
        "occurred_at": datetime(2024, 2, 1, 9, 2),
    },
    {
        "id": "c1",
        "text": "Our team shipped the new billing service.",
        "speaker": "Felix",
        "session": "s3",
        "occurred_at": datetime(2024, 7, 9, 15, 0),
    },
]


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Memory:
    m = Memory.open(tmp_path / "r.db", embedder=embedder)
    m.add_many(TURNS, namespace="ns")
    yield m
    m.close()


def ids(memory: Memory, query: str, recipe: str = "default", **kw: object) -> list[str]:
    return [h.id for h in memory.search(query, namespace="ns", recipe=recipe, k=7, **kw).hits]


def test_speaker_matching_prefers_the_named_persons_own_turns(memory: Memory) -> None:
    ranked = ids(memory, "Where did Nora go kayaking?")
    assert ranked.index("a2") < ranked.index("a3")


def test_names_do_not_pull_greetings_up(memory: Memory) -> None:
    # "Nora, that's wonderful news" only shares the name with the question.
    ranked = ids(memory, "What did Nora buy?")
    assert ranked.index("b3") > ranked.index("b1")


def test_session_context_lifts_the_answer_after_a_question(memory: Memory) -> None:
    default = ids(memory, "What did Nora finally buy?")
    assert "b2" in default[:3]


def test_dates_in_questions_raise_turns_of_that_period(
    memory: Memory, embedder: MiniLMEmbedder
) -> None:
    question = "What did Felix do in July 2024?"
    with_dates = ids(memory, question)
    cfg = Config(store=memory.store.url, retrieval={"date_boost": 0.0, "period_weight": 0.0})
    with Memory.open(config=cfg, embedder=embedder) as without:
        no_dates = [h.id for h in without.search(question, namespace="ns", k=7).hits]
    assert with_dates.index("c1") < no_dates.index("c1")


def test_filters_apply_to_every_route(memory: Memory) -> None:
    only_felix = ids(memory, "kayaking", filters=SearchFilters(speakers=["Felix"]))
    assert set(only_felix) <= {"a1", "a3", "b3", "c1"} and "a3" in only_felix
    in_2024 = ids(memory, "piano", filters=SearchFilters(since=datetime(2024, 1, 1)))
    assert set(in_2024) <= {"b1", "b2", "b3", "c1"}
    s2 = ids(memory, "piano", filters=SearchFilters(sessions=["s2"]))
    assert set(s2) == {"b1", "b2", "b3"}


def test_rag_recipe_is_plain_fusion(memory: Memory) -> None:
    hits = memory.search("electric piano", namespace="ns", recipe="rag", k=3).hits
    assert hits[0].id == "b2"
    assert set(hits[0].routes) == {"bm25", "dense"}


def test_unknown_recipe_is_a_config_error(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    from memstrata.errors import ConfigError

    with Memory.open(tmp_path / "x.db", embedder=embedder, config=Config()) as m:
        m.add("hello there", namespace="ns")
        with pytest.raises(ConfigError, match="unknown recipe"):
            m.search("hello", namespace="ns", recipe="nope")


BAKING = [
    ("d1", "I baked sourdough bread this morning.", datetime(2023, 6, 3, 9)),
    ("d2", "I baked banana bread for the neighbours.", datetime(2023, 6, 10, 9)),
    ("d3", "Last Saturday I baked a cherry pie.", datetime(2023, 6, 21, 12)),  # the 17th
    ("d4", "I baked rye bread today.", datetime(2023, 6, 24, 18)),
]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What did I bake on 10 June 2023?", "d2"),  # said that day
        ("What did I bake on June 17th, 2023?", "d3"),  # said later, naming the day
        ("What did I bake three days ago?", "d3"),  # from the newest turn, 24 June
    ],
)
def test_dates_pick_the_turn_about_the_day(
    tmp_path: Path, embedder: MiniLMEmbedder, question: str, answer: str
) -> None:
    turns = [
        {"id": i, "text": t, "speaker": "Ada", "session": i, "occurred_at": at}
        for i, t, at in BAKING
    ]
    with Memory.open(tmp_path / "d.db", embedder=embedder) as memory:
        memory.add_many(turns, namespace="days")
        assert memory.search(question, namespace="days", k=4).hits[0].id == answer
    cfg = Config(store=str(tmp_path / "d.db"), retrieval={"date_boost": 0.0, "period_weight": 0.0})
    with Memory.open(config=cfg, embedder=embedder) as without:
        assert without.search(question, namespace="days", k=4).hits[0].id != answer


def test_a_period_placed_from_an_event(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    turns = [
        {"id": i, "text": t, "speaker": "Ada", "session": i, "occurred_at": at}
        for i, t, at in [
            ("w", "Our wedding was beautiful, we danced all night.", datetime(2023, 7, 1, 22)),
            ("e1", "I baked a plum cake for my aunt.", datetime(2023, 5, 20, 9)),
            (
                "e2",
                "I baked a lemon tart for the neighbours.",
                datetime(2023, 6, 18, 9),
            ),  # 2 weeks before
            ("e3", "I baked a lemon cake with my mother.", datetime(2023, 7, 20, 9)),
        ]
    ]
    question = "What did I bake two weeks before the wedding?"
    with Memory.open(tmp_path / "w.db", embedder=embedder) as memory:
        memory.add_many(turns, namespace="w")
        assert memory.search(question, namespace="w", k=4).hits[0].id == "e2"
    cfg = Config(store=str(tmp_path / "w.db"), retrieval={"date_boost": 0.0})
    with Memory.open(config=cfg, embedder=embedder) as without:
        assert without.search(question, namespace="w", k=4).hits[0].id != "e2"


def test_a_question_about_a_dislike_finds_the_turn_that_states_one(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    turns = [
        {"id": i, "text": t, "speaker": "Ana", "session": "s", "occurred_at": datetime(2023, 5, n)}
        for n, (i, t) in enumerate(
            [
                ("t1", "We talked about music at dinner with my cousins."),
                ("t2", "Honestly, I can't stand country songs."),
                ("t3", "My cousin plays music in a band downtown."),
                ("t4", "The weather was lovely all week."),
            ],
            start=1,
        )
    ]
    question = "What music does Ana dislike?"
    path = str(tmp_path / "s.db")
    with Memory.open(
        config=Config(store=path, retrieval={"stance_boost": 1.0}), embedder=embedder
    ) as on:
        on.add_many(turns, namespace="s")
        assert on.search(question, namespace="s", k=4).hits[0].id == "t2"
    with Memory.open(
        config=Config(store=path, retrieval={"stance_boost": 0.0}), embedder=embedder
    ) as off:
        assert off.search(question, namespace="s", k=4).hits[0].id != "t2"


PASSAGES = [
    (
        "leland",
        "Leland is a town in Brunswick County, North Carolina. The horror film Maximum "
        "Overdrive was shot in and around Leland in 1986.",
    ),
    (
        "overdrive",
        "Maximum Overdrive is a horror film written and directed by Stephen King, starring "
        "Emilio Estevez. Overdrive was King's only film as a director.",
    ),
    (
        "wilmington",
        "Blue Velvet, a film directed by David Lynch, was shot in Wilmington, North Carolina "
        "in 1986.",
    ),
    ("rowland", "Chuck Rowland directed short films around North Carolina."),
    ("guild", "The guild honours the directors of the best films shot each year."),
    ("stanford", "Leland Stanford was a businessman and politician."),
    ("tarheels", "The 1986 North Carolina Tar Heels played football in Chapel Hill."),
    ("estevez", "Emilio Estevez directed the film Wisdom in 1986."),
]


def passage_store(tmp_path: Path, embedder: MiniLMEmbedder, passages: list[tuple[str, str]]) -> str:
    path = str(tmp_path / "p.db")
    with Memory.open(path, embedder=embedder) as memory:
        memory.add_many([{"id": i, "text": t} for i, t in passages], namespace="p")
    return path


def search_ids(
    path: str, embedder: MiniLMEmbedder, question: str, namespace: str = "p", **knobs: float | bool
) -> list[str]:
    """The first 8 hits of ``default``, with System-1 knobs overridden."""
    with Memory.open(config=Config(store=path, retrieval=knobs), embedder=embedder) as m:
        return [h.id for h in m.search(question, namespace=namespace, k=8).hits]


def test_a_name_in_the_best_passage_finds_the_second_step(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    question = "Who directed the film that was shot in or around Leland, North Carolina in 1986?"
    path = passage_store(tmp_path, embedder, PASSAGES)
    assert search_ids(path, embedder, question)[:2] == ["leland", "overdrive"]
    without = search_ids(path, embedder, question, link_boost=0.0)
    assert without[0] == "leland" and without.index("overdrive") > 2


SINGERS = [
    (
        "hexum",
        "Nick Hexum is an American singer and guitarist, the lead vocalist of the rock band "
        "311 from Omaha, Nebraska.",
    ),
    (
        "zack",
        "Zack Hexum is an American musician and producer, the younger brother of Nick Hexum "
        "of 311.",
    ),
    (
        "amber",
        "Amber is a song by the American rock band 311, written by Nick Hexum and released "
        "in 2001.",
    ),
    (
        "here",
        "I'll Be Here Awhile is a song by 311, sung by Nick Hexum, from their album From Chaos.",
    ),
    (
        "king",
        "Mark King is an English musician, the bassist and singer of the band Level 42, known "
        "for slap bass.",
    ),
    ("level", "Level 42 is an English pop and jazz-funk band formed on the Isle of Wight in 1979."),
    ("singers", "Many singers in rock bands also play an instrument on stage."),
    ("pop", "The King of Pop was a title given to an American singer."),
]


def test_the_second_name_of_a_comparison_is_covered(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    question = "Which singer is American, Mark King or Nick Hexum?"
    path = passage_store(tmp_path, embedder, SINGERS)
    assert search_ids(path, embedder, question)[:2] == ["hexum", "king"]
    # without the cover, what Nick Hexum's passage links to comes before Mark King
    without = search_ids(path, embedder, question, cover_boost=0.0)
    assert without[0] == "hexum" and without.index("king") > 1


CHAT = [
    (
        "u1",
        "user",
        "I need to plan my week: a dentist visit, two client calls and the school play.",
    ),
    ("a1", "assistant", "Happy to help you plan your week around those commitments."),
    ("u2", "user", "Always format dates as MM/DD/YYYY when I ask about scheduling details."),
    ("a2", "assistant", "Understood, I will use that date format from now on."),
    ("u3", "user", "I prefer audiobooks under ten hours, narrated by the author if possible."),
    ("a3", "assistant", "Noted. Shorter audiobooks read by their authors it is."),
    ("u4", "user", "The meeting with the studio moved to Thursday afternoon."),
    ("a4", "assistant", "Thursday afternoon works; the studio meeting is set."),
    ("u5", "user", "My sister recommended a long fantasy audiobook series for the car."),
    ("a5", "assistant", "Fantasy series make long drives pass quickly."),
    ("u6", "user", "Our studio meeting on Thursday covers the sound mix and the final cut."),
    ("a6", "assistant", "Bring notes on the sound mix to the studio meeting."),
    ("u7", "user", "I listen to podcasts and audiobooks on my commute every morning."),
    ("a7", "assistant", "A commute is a good time for audiobooks and podcasts."),
]


def chat_store(
    path: str, embedder: MiniLMEmbedder, chat: list[tuple[str, str, str]], ns: str
) -> str:
    """A store at ``path`` holding ``chat`` (id, speaker, text) as one session of ``ns``."""
    with Memory.open(path, embedder=embedder) as memory:
        turns = [{"id": i, "text": t, "speaker": s, "session": "s1"} for i, s, t in chat]
        memory.add_many(turns, namespace=ns)
    return path


@pytest.fixture
def chat_path(tmp_path: Path, embedder: MiniLMEmbedder) -> str:
    return chat_store(str(tmp_path / "r.db"), embedder, CHAT, "r")


def test_a_standing_instruction_comes_with_a_question_on_its_topic(
    chat_path: str, embedder: MiniLMEmbedder
) -> None:
    # the rule on dates shares no word with the question it governs
    question = "When is my meeting at the studio?"
    # (the user's own turns are not raised here, and in this one short session every
    # turn is near the meeting's, so the session's list is off too: only the rule moves)
    knobs = {"asker_boost": 0.0, "session_weight": 0.0}
    assert "u2" in search_ids(chat_path, embedder, question, "r", **knobs)[:3]
    assert "u2" not in search_ids(chat_path, embedder, question, "r", rule_boost=0, **knobs)


def test_a_request_for_advice_finds_the_stated_preference(
    chat_path: str, embedder: MiniLMEmbedder
) -> None:
    question = "Can you suggest some good audiobooks for me?"
    assert search_ids(chat_path, embedder, question, "r", asker_boost=0.0)[0] == "u3"
    assert search_ids(chat_path, embedder, question, "r", advice_boost=0, asker_boost=0)[0] != "u3"


def test_a_question_in_the_first_person_prefers_the_users_own_turns(
    chat_path: str, embedder: MiniLMEmbedder
) -> None:
    question = "When is my meeting at the studio?"
    kept = search_ids(chat_path, embedder, question, "r", rule_boost=0.0)
    without = search_ids(chat_path, embedder, question, "r", rule_boost=0.0, asker_boost=0.0)
    # the assistant's echo ("the studio meeting is set") came first; the user's report wins
    assert without[0] == "a4"
    assert kept[0] in {"u4", "u6"} and kept.index("u6") < without.index("u6")
    # a question about someone else leaves the turns as they were
    other = "When is Nora's meeting at the studio?"
    assert search_ids(chat_path, embedder, other, "r") == search_ids(
        chat_path, embedder, other, "r", asker_boost=0.0
    )


NICKNAMED = [
    ("f1", "Felix", "Hey Kit! How was your weekend?"),
    ("s1", "Samantha", "Lovely, I went kayaking on the river with my cousin."),
    ("f2", "Felix", "Kit, did you go kayaking? Kit, kayaking is the best."),
    ("s2", "Samantha", "Haha, I'm Kit to my friends, by the way."),
    ("f3", "Felix", "Thanks, Kit!"),
    ("s3", "Samantha", "Guess what I bought? An electric piano."),
]


def test_a_speaker_is_found_by_the_name_the_other_calls_them(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    path = chat_store(str(tmp_path / "n.db"), embedder, NICKNAMED, "n")
    question = "Where did Kit go kayaking?"
    # "Kit" is Samantha: her own kayaking comes first, not Felix's turn that says "Kit"
    # (s1 also answers Felix's question f1; the answers to questions are off in the
    # controls, which are about the name alone)
    assert search_ids(path, embedder, question, "n")[0] == "s1"
    no_reply = {"reply_weight": 0.0}
    assert search_ids(path, embedder, question, "n", speaker_aliases=False, **no_reply)[0] == "f2"
    # a third person in the chat leaves the address ambiguous: nothing is learned
    with Memory.open(path, embedder=embedder) as memory:
        memory.add_many([{"id": "x1", "text": "Hello all", "speaker": "Ines"}], namespace="n")
    assert search_ids(path, embedder, question, "n", **no_reply)[0] == "f2"


def test_a_brief_turn_gives_way_to_one_that_says_something(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    path = str(tmp_path / "b.db")
    chat = [
        ("n1", "Nora", "Do you like to cook?"),
        ("f1", "Felix", "Yes! I bake sourdough bread and slow-roast vegetables every Sunday."),
        ("n2", "Nora", "Cooking sounds fun!"),
        ("f2", "Felix", "We went hiking in the hills near the lake yesterday."),
    ]
    chat_store(path, embedder, chat, "b")
    question = "What does Felix cook?"
    # the two short turns hold "cook" and say nothing of what Felix cooks (his own voice,
    # "What do I cook?", the session's list, where f1 sits between them, f1 being the
    # answer to n1's question and f1 being Felix's turn next to the best one would find
    # f1 as well: they are off here)
    off = {"voice_weight": 0.0, "session_weight": 0.0, "reply_weight": 0.0, "thread_weight": 0.0}
    assert search_ids(path, embedder, question, "b", brief_penalty=0.0, **off)[0] in {"n1", "n2"}
    assert search_ids(path, embedder, question, "b", **off)[0] == "f1"


VOICES = [
    ("k1", "Kate", "Elise, which country would you most like to live in one day?"),
    ("e1", "Elise", "Honestly? I'm from Houston, Texas, and I'd never move away from it."),
    ("k2", "Kate", "Elise told me the country she lives in has great barbecue."),
    ("e2", "Elise", "My brother just adopted a puppy, she is adorable."),
    ("k3", "Kate", "I live in a small flat in Lisbon with two cats."),
]


def test_a_question_about_a_speaker_finds_her_own_words(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    path = chat_store(str(tmp_path / "v.db"), embedder, VOICES, "v")
    question = "What country does Elise live in?"
    # (the session's list is off: in this one short session it lends every turn the
    # same evidence; so are the answer to k1's question, e1, and Elise's turns around the
    # best one; and k1, a turn that asks, keeps its full score: the test is about the voice)
    off = {"session_weight": 0.0, "reply_weight": 0.0, "thread_weight": 0.0}
    off["question_penalty"] = 0.0
    voiced = search_ids(path, embedder, question, "v", **off)
    without = search_ids(path, embedder, question, "v", voice_weight=0.0, **off)
    # Kate's turns that name Elise came first; Elise's "I'm from Houston" wins in her voice
    assert without[:2] == ["k1", "k2"]
    assert voiced[0] == "e1"
    # a question that names no speaker has no voice to read it in
    other = "Which country has great barbecue?"
    assert search_ids(path, embedder, other, "v") == search_ids(
        path, embedder, other, "v", voice_weight=0.0
    )


def test_a_question_about_a_pair_is_read_in_both_voices(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    path = chat_store(str(tmp_path / "v.db"), embedder, VOICES, "v")
    store = SQLiteStore(path)

    def scores(question: str, voice: float) -> dict[str, float]:
        params = DEFAULT_SYSTEM1.model_copy(update={"voice_weight": voice})
        (hits,) = EpisodeRoute(store, embedder, params).search("v", [question], 8)
        return {h.id: h.score for h in hits}

    pair = "What country do Elise and Kate live in?"
    before = scores(pair, 0.0)
    gain = {i: s - before[i] for i, s in scores(pair, 1.0).items()}
    # each one's turns were searched in her own voice: every turn of both gains
    assert min(gain[i] for i in ("k1", "k2", "k3")) > 0
    assert min(gain[i] for i in ("e1", "e2")) > 0
    # two names that are no pair are read in no voice
    told = "Did Kate tell Elise about the country?"
    assert scores(told, 1.0) == scores(told, 0.0)
    store.close()


def sessions_store(
    path: str,
    embedder: MiniLMEmbedder,
    chat: list[tuple[str, str, str, str]],
    ns: str,
    speakers: dict[str, str] | None = None,
) -> str:
    """A store at ``path`` holding ``chat`` (session, id, speaker, text) in ``ns``, each
    speaker renamed by ``speakers``."""
    names = speakers or {}
    with Memory.open(path, embedder=embedder) as memory:
        turns = [
            {"id": i, "text": t, "speaker": names.get(s, s), "session": ss} for ss, i, s, t in chat
        ]
        memory.add_many(turns, namespace=ns)
    return path


BOAT = [
    ("s1", "n1", "Nora", "We rented a boat for our week in Crete."),
    ("s1", "f1", "Felix", "Oh nice, what kind of boat was it?"),
    ("s1", "n2", "Nora", "A small red catamaran with two cabins, it sailed beautifully."),
    ("s1", "n3", "Nora", "Nine hundred euros for the seven days, fuel included."),
    ("s2", "f2", "Felix", "The concert tickets were ninety euros each."),
    ("s2", "n4", "Nora", "I cooked a big pot of lentil soup for dinner."),
    ("s3", "n5", "Nora", "The food on the island was the best part of the holiday."),
    ("s3", "f3", "Felix", "What kind of music do you like?"),
    ("s4", "f4", "Felix", "My uncle sold his old car for two thousand dollars."),
]


def test_a_reply_is_found_by_the_words_said_around_it(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    # n3 answers the question and shares no word with it; the turns around it in its
    # session do ("boat", "Crete"), and the session's list lifts it past the question
    # Felix asked there (f1), which holds "boat" itself
    path = sessions_store(str(tmp_path / "s.db"), embedder, BOAT, "s")
    question = "How much did the boat in Crete cost?"
    # (f1 asks, and a turn that asks gives way by itself: that rule is off here)
    keep = {"question_penalty": 0.0}
    ranked = search_ids(path, embedder, question, "s", **keep)
    assert ranked.index("n3") < ranked.index("f1")
    without = search_ids(path, embedder, question, "s", session_weight=0.0, **keep)
    assert without.index("n3") > without.index("f1")


SUMMER = [
    ("s1", "m1", "Maya", "I finally finished the thesis draft last night."),
    (
        "s1",
        "t1",
        "Theo",
        "Congratulations, that was a long road! What are your plans for the summer?",
    ),
    ("s1", "m2", "Maya", "Volunteering at an animal rescue near the coast."),
    ("s1", "t2", "Theo", "That sounds lovely, they always need help."),
    ("s2", "m3", "Maya", "My sister keeps changing her summer wedding plans."),
    ("s2", "t3", "Theo", "Weddings bring drama every summer."),
    ("s3", "m4", "Maya", "Our plans at work changed, the launch moved to autumn."),
    ("s3", "t4", "Theo", "I planted tomatoes in the garden this spring."),
    ("s4", "m5", "Maya", "The summer heat makes my commute miserable."),
    ("s4", "t5", "Theo", "Do you have any plans to buy a fan?"),
    ("s4", "m6", "Maya", "No, I'll just open the windows."),
    ("s5", "t6", "Theo", "The summer festival plans were announced today."),
]


def test_the_answer_to_a_question_is_found_by_the_question(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    # m2 answers Theo's question (t1) and shares no word with the question asked of the
    # memory; t1 does. The replies to questions (m2 to t1, m6 to t5) borrow part of
    # their question's score, and nothing else moves
    path = sessions_store(str(tmp_path / "q.db"), embedder, SUMMER, "q")
    store = SQLiteStore(path)
    question = "What are Maya's plans for the summer?"

    def scores(**knobs: float) -> dict[str, float]:
        params = DEFAULT_SYSTEM1.model_copy(update=knobs)
        (hits,) = EpisodeRoute(store, embedder, params).search("q", [question], 12)
        return {h.id: h.score for h in hits}

    before, after = scores(reply_weight=0.0), scores()
    assert {i for i in after if after[i] != pytest.approx(before[i])} == {"m2", "m6"}
    assert after["m2"] > before["m2"] and after["m6"] > before["m6"]
    strong = scores(reply_weight=1.0)
    assert max(strong, key=strong.__getitem__) == "m2"
    assert max(before, key=before.__getitem__) == "m3"
    # with few candidates the reply is none of them: it joins them through its question
    few = {"candidates": 3, "session_weight": 0.0, "neighbour_weight": 0.0}
    assert "m2" in scores(**few)
    assert "m2" not in scores(reply_weight=0.0, **few)
    store.close()


def test_a_pair_with_an_assistant_in_it_is_no_question_and_answer(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    # the same chat between a user and an assistant: the rule leaves it as it was
    roles = {"Maya": "user", "Theo": "assistant"}
    path = sessions_store(str(tmp_path / "a.db"), embedder, SUMMER, "q", roles)
    question = "What are my plans for the summer?"
    with_rule = search_ids(path, embedder, question, "q")
    assert with_rule == search_ids(path, embedder, question, "q", reply_weight=0.0)


READING = [
    ("c1", "Caro", "I went to a poetry reading last Friday, it was powerful."),
    ("m1", "Mel", "Nope, never been to something like that. What was it about?"),
    ("c2", "Caro", "People shared their stories through poems."),
    ("m2", "Mel", "Wow. How did it make you feel?"),
    ("m3", "Mel", "We hiked up the hill yesterday, the kids loved it after the long drive."),
    ("c3", "Caro", "Glad you got some rest after the drive."),
]


def _route_scores(path: str, embedder: MiniLMEmbedder, ns: str, **knobs: float) -> dict[str, float]:
    store = SQLiteStore(path)
    try:
        params = DEFAULT_SYSTEM1.model_copy(update=knobs)
        question = "How did Mel feel about the poetry reading?"
        (hits,) = EpisodeRoute(store, embedder, params).search(ns, [question], 10)
    finally:
        store.close()
    return {h.id: h.score for h in hits}


def test_a_turn_that_asks_gives_way_to_one_that_states(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    path = chat_store(str(tmp_path / "q.db"), embedder, READING, "q")
    without = _route_scores(path, embedder, "q", question_penalty=0.0)
    with_it = _route_scores(path, embedder, "q")
    # Mel's "What was it about?" is read close to the question and says nothing of the
    # reading; Caro's account of it comes before it once questions give way
    assert without["m1"] > without["c1"]
    assert with_it["c1"] > with_it["m1"]
    # only the two turns that ask lose; the others keep their scores
    lost = {i for i in without if with_it[i] < without[i] - 1e-6}
    assert lost == {"m1", "m2"}
    assert all(with_it[i] == pytest.approx(without[i]) for i in without if i not in lost)


def test_a_users_and_an_assistants_questions_keep_their_scores(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    roles = {"Mel": "user", "Caro": "assistant"}
    chat = [(i, roles[s], t) for i, s, t in READING]
    path = chat_store(str(tmp_path / "qa.db"), embedder, chat, "qa")
    without = _route_scores(path, embedder, "qa", question_penalty=0.0)
    assert _route_scores(path, embedder, "qa") == pytest.approx(without)
