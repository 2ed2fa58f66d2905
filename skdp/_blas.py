"""BLAS threads for small products.

OpenBLAS starts its threads for products far smaller than the ones where they
pay. The sufficient statistics ``X^T X`` are accumulated block by block
(:meth:`skdp.bounds.BoundedDesign.gram`, ``4096 x p`` blocks), and for a
small ``p`` each block's product is a few million flops: on the 2-core
machine behind the README's speed table, two threads made that pass two to
three times slower than one, and left threads spinning into the next LAPACK
call (a ``51 x 51`` ``eigh`` took 40 ms instead of 0.5).
:func:`blas_threads_for` runs such work on one thread (and on one thread,
OpenBLAS's general product ``B^T B`` of a narrow block took half the time of
its ``syrk``, which computes only one triangle: measured at ``p = 52`` and
``p = 97``, ``4096``-row blocks, 31 against 68 ms and 28 against 42 ms per
pass). It uses threadpoolctl (a dependency of scikit-learn); without it the
context does nothing.
"""

import contextlib
import os

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - scikit-learn depends on threadpoolctl
    ThreadpoolController = None

__all__ = ["SMALL_GRAM_COLUMNS", "blas_threads_for", "cpus"]

#: products whose Gram matrix has at most this many columns run on one BLAS thread
SMALL_GRAM_COLUMNS = 96

_controller = None


def blas_threads_for(columns):
    """A context in which BLAS runs on one thread when ``columns <= SMALL_GRAM_COLUMNS`` (else unchanged)."""
    global _controller
    if ThreadpoolController is None or columns > SMALL_GRAM_COLUMNS:
        return contextlib.nullcontext()
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")


def cpus():
    """The number of CPUs this process may run on (skdp starts a worker thread only when it is 2 or more)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1
