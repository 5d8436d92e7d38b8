"""One BLAS thread per process, unless the process chose its own count.

memstrata's vector math is many small products (a query against a few thousand rows
takes well under a millisecond), run from several threads at once: the embedder's pool,
the event loop's, a build worker. A threaded BLAS (the OpenBLAS that numpy ships) splits
each product across the cores and then keeps its helper threads spinning for a while in
case another product follows; on a small machine those spinning threads take the cores
that the embedder and the next request need. Measured on a 2-core machine, searches of
a served store (REST) interleaved with searches of the same store in a second process:
p50 28.0 ms with the threaded BLAS, 13.6 ms with one thread; in-process 24.3 against
12.4 ms. A single-threaded product is not slower at these sizes either (100,000 x 384:
7.3 ms on one thread, 11.7 ms split over two).

The limit is set when a memory opens and by the ``memstrata`` command. A process that
states a count itself (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` or
``MKL_NUM_THREADS``) keeps it.
"""

from __future__ import annotations

import os
import threading

#: variables through which a process states its own BLAS thread count
USER_SET = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

_done = False
_lock = threading.Lock()


def limit_blas_threads() -> bool:
    """Set every loaded BLAS to one thread, once per process; False when the process
    stated its own count (or the limit was set before)."""
    global _done
    with _lock:
        if _done:
            return False
        _done = True
        if any(os.environ.get(name) for name in USER_SET):
            return False
        import numpy  # noqa: F401  (its BLAS must be loaded to be found)
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        return True


__all__ = ["USER_SET", "limit_blas_threads"]
