"""``memstrata bench qa``: every recipe side by side on a question-answering set.

Readers turn LoCoMo, LongMemEval and the generic QA-set JSON into one shape
(:mod:`.formats`); a run imports each sample into its own namespace, builds every recipe,
searches, answers, scores and judges each question (:mod:`.run`), and writes a run
directory with per-question rows, ``summary.json`` and Markdown and HTML reports
(:mod:`.report`).
"""
