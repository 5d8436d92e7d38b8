"""Should a long episode be found by the vector of each of its chunks? On a QA file::

    python -m studies.long_turns FILE --format qaset|locomo|longmemeval [--chunk-tokens 254]

The embedder reads the first 256 word pieces of a text; the rest of a long episode is
invisible to dense search (BM25 reads all of it). This study embeds every episode two
ways and ranks each question's episodes by cosine alone, no fusion:

* ``first``: the stored vector, the first window (what the store serves today);
* ``max``: the best of the episode's chunks (:func:`memstrata.retrieval.chunking.chunk_spans`,
  sentence-aware, ``--chunk-tokens`` word pieces), the usual multi-vector scoring;
* ``mean``: the normalised mean of the chunk vectors, one vector per episode.

It prints Recall@5/10/20 per scoring and, for evidence episodes longer than one chunk,
how many of them each scoring puts in the top 10. Figures: docs/scale.md, "Long
episodes".
"""

from __future__ import annotations

import argparse

import numpy as np

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.eval.metrics import recall_precision
from memstrata.eval.qa.formats import FORMATS, load
from memstrata.retrieval.chunking import chunk_spans
from memstrata.retrieval.documents import embed_text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--format", choices=list(FORMATS), default="qaset")
    parser.add_argument("--chunk-tokens", type=int, default=254)
    args = parser.parse_args(argv)

    embedder = MiniLMEmbedder()
    ks = (5, 10, 20)
    recall: dict[str, dict[int, list[float]]] = {}
    long_found: dict[str, int] = {}
    long_total = 0
    for sample in load(args.file, args.format):
        texts = [embed_text(t.text, t.speaker, t.metadata) for t in sample.turns]
        ids = [t.id for t in sample.turns]
        first = embedder.embed(texts)
        pieces, owner = [], []
        for i, text in enumerate(texts):
            spans = chunk_spans(text, args.chunk_tokens) or [(0, len(text))]
            pieces += [text[s:e] for s, e in spans]
            owner += [i] * len(spans)
        chunk_vecs = embedder.embed(pieces)
        owners = np.array(owner)
        n_chunks = np.bincount(owners, minlength=len(texts))
        mean = np.zeros_like(first)
        np.add.at(mean, owners, chunk_vecs)
        mean /= np.linalg.norm(mean, axis=1, keepdims=True)

        questions = [qa for qa in sample.qa if qa.evidence]
        if not questions:
            continue
        query_vecs = embedder.embed([qa.question for qa in questions])
        index = {tid: i for i, tid in enumerate(ids)}
        long_total += sum(
            n_chunks[index[e]] > 1 for qa in questions for e in qa.evidence if e in index
        )
        for qa, q in zip(questions, query_vecs, strict=True):
            best_chunk = np.full(len(texts), -np.inf)
            np.maximum.at(best_chunk, owners, chunk_vecs @ q)
            scores = {"first": first @ q, "max": best_chunk, "mean": mean @ q}
            for name, score in scores.items():
                ranked = [ids[i] for i in np.argsort(-score, kind="stable")[: max(ks)]]
                for k in ks:
                    recall.setdefault(name, {}).setdefault(k, []).append(
                        recall_precision(ranked, qa.evidence, k)[0]
                    )
                top10 = set(ranked[:10])
                long_found[name] = long_found.get(name, 0) + sum(
                    e in top10 for e in qa.evidence if e in index and n_chunks[index[e]] > 1
                )
        print(f"{sample.id}: {len(texts)} episodes, {len(pieces)} chunks", flush=True)

    print(f"\nscoring | R@5 | R@10 | R@20 | long evidence in top 10 (of {long_total})")
    for name, by_k in recall.items():
        cells = " | ".join(f"{np.mean(by_k[k]):.3f}" for k in ks)
        print(f"{name} | {cells} | {long_found[name]}")


if __name__ == "__main__":
    main()
