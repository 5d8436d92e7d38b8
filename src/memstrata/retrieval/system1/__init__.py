"""System-1 route over episodes: dense and BM25 candidates fused by reciprocal rank fusion.

One module per group of rules: the knobs (:mod:`.params`), what a question is read for
(:mod:`.plan`), the candidate lists and their fusion (:mod:`.route`), the stages of the
re-ranking in their order (:mod:`.refine`), the factor's boosts and penalties
(:mod:`.factor`), multi-hop questions (:mod:`.hops`), the session rules (:mod:`.sessions`),
likes and dislikes (:mod:`.stance`), standing instructions (:mod:`.standing`), a
speaker's voice (:mod:`.voice`) and other names (:mod:`.aliases`), and what moved a hit
(:mod:`.moves`).

On top of plain RRF it applies LLM-free, data-set-independent refinements:

* **speaker matching** — when a question names a known speaker of the namespace, that
  person's own turns get a boost, and the name itself is dropped from the BM25 terms (every
  greeting addressed to a person contains the name, which otherwise crowds out evidence);
* **session context** — conversation turns lean on their neighbours ("yes, last week!"), so
  a candidate turn inherits part of the best score among the adjacent candidate turns of
  the same session; and the candidates ranked by the BM25 evidence of the turns around
  them in their session (``session_weight``, :func:`~.sessions.in_session`) join the fusion as a
  list of their own, so the second turn of a two-turn answer is found by the first;
* **answers to questions** (``reply_weight``) — a question one person asks the other
  ("What are your plans for the summer?") is answered by the next turn, which need share
  no word with it ("Researching adoption agencies"): the reply to a question among the
  best candidates borrows part of the question's score (:func:`~.sessions.replies`);
* **date handling** — the periods a question names ("on 7 May 2023", "in May 2023", "the
  week before August 3", "last spring", "three days ago"; :mod:`memstrata.retrieval.when`)
  raise the turns about them: said in one (or the day after), or naming one in their own
  text ("last Saturday", resolved against when the turn was said). Relative phrases count
  from the newest candidate turn; one placed from an event ("two weeks before the
  wedding") from the turn that best matches the event's words; and the turns said in a
  period the question names by date are searched alone, their two lists joining the
  fusion (``period_weight``), so the day's evidence is found even when the whole
  namespace ranks it low;
* **the speaker's thread** (``thread_weight``) — a question about what someone said
  raises her turns a few turns around the best candidate (:func:`~.sessions.thread`);
* **the question an answer was given to** (``ask_weight``) — when the best candidate
  answers someone else's question ("What got you into running?"), that question gains
  part of its score: evidence is marked on both turns (:func:`~.sessions.asked`);
* **likes and dislikes** (``stance_boost``) — a question about a preference ("her
  favourite dance", "what does he dislike") raises the turns that state one of that
  polarity ("I love salsa", "I can't stand crowds"; :mod:`.stance`);
* **links** (``link_boost``) — the second step of a two-step question shares no words
  with it, but the first step names it: candidates about a name that the best candidate
  mentions and the question does not are raised (:func:`~.hops.link_words`);
* **cover** (``cover_boost``) — a question about several things ("Mark King or Nick
  Hexum") finds one of them first: candidates about the names the best candidate leaves
  uncovered are raised (:func:`~.hops.cover_words`);
* **standing instructions and advice** (``rule_boost``, ``advice_boost``) — a rule on how
  to answer ("Always format dates as MM/DD/YYYY when I ask about scheduling") is raised
  for every question, and a request for advice raises the turns that state a preference
  (:mod:`.standing`);
* **words about the conversation** (``drop_meta_terms``) — "across our conversations",
  "what did I mention" are left out of the BM25 terms (``text.META_WORDS``), and so are
  the words of the present ("now", "these days": the question's time, which the engine's
  order reads, :mod:`memstrata.knowledge.present`);
* **the asker's own turns** (``asker_boost``) — a question in the first person ("When
  is my meeting?") to an assistant's memory is about the user, so the user's turns
  (role ``user``; without a role, a speaker called so) are raised like a named speaker's;
* **other names of the speakers** (``speaker_aliases``) — in a two-person chat, a name
  the question uses that is no speaker's label but that one speaker is called by
  ("Hey Kate!") counts as naming that speaker (:mod:`.aliases`);
* **turns that ask** (``question_penalty``) — a question is read close to other
  questions ("Nope, never been to one. What was it about?" to "When did Melanie go on
  a hike?") whatever it asks, and it states nothing: a turn whose last sentence asks
  something is multiplied by 1 - ``question_penalty``; not a user's or an assistant's,
  whose questions to each other carry the user's own facts ("I'm moving to Lisbon in
  May, what should I pack?");
* **brief turns** (``brief_words``, ``brief_penalty``) — a turn of at most
  ``brief_words`` content words ("What about you Kate?", "Hey!") states little and
  matches a question's words by chance; its score is multiplied by 1 - ``brief_penalty``;
* **the speaker's own voice** (``voice_weight``) — a question about one speaker ("What
  country does Elise live in?") is also read as she would say it ("What country do I
  live in?", :mod:`.voice`), and the dense hits of that reading among
  her own turns join the fusion as a third list; a question about two speakers as a pair
  ("Which cities have both Kate and Elise been to?") is read in each voice, a list each.
"""

from memstrata.retrieval.system1.params import DEFAULT_SYSTEM1, System1Params
from memstrata.retrieval.system1.plan import QueryPlan, name_parts, parse_period, plan_query
from memstrata.retrieval.system1.route import ALIAS_POOL, EpisodeRoute

__all__ = [
    "ALIAS_POOL",
    "DEFAULT_SYSTEM1",
    "EpisodeRoute",
    "QueryPlan",
    "System1Params",
    "name_parts",
    "parse_period",
    "plan_query",
]
