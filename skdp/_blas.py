"""BLAS threads for small products.

OpenBLAS starts its threads for products far smaller than the ones where they
pay. The sufficient statistics ``X^T X`` are accumulated block by block
(:meth:`skdp.bounds.BoundedDesign.gram`, ``4096 x p`` blocks), and for a
small ``p`` each block's product is a few million flops: too little work to
amortise waking and synchronising the threads, and a threaded pass leaves
the next small ``eigh`` slower too. On one
BLAS thread, OpenBLAS's ``syrk`` of a narrow block, which computes only half
of ``B^T B``, is still slower than the full product. So skdp sums such
products on one BLAS thread per half of the blocks, the second half on a
worker thread (the timings behind this choice: :doc:`/user_guide/defaults`).

:func:`blas_threads_for` runs such work on one BLAS thread. It uses
threadpoolctl (a dependency of scikit-learn); without it the context does
nothing.
"""

import contextlib
import os
import threading

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - scikit-learn depends on threadpoolctl
    ThreadpoolController = None

__all__ = ["SMALL_GRAM_COLUMNS", "blas_threads_for", "cpus"]

#: products whose Gram matrix has at most this many columns run on one BLAS thread
SMALL_GRAM_COLUMNS = 96

_controller = None
_limiter = None  # the limit in force while _inside > 0
_inside = 0  # depth of the main thread's one-thread contexts


def blas_threads_for(columns):
    """A context in which BLAS runs on one thread when ``columns <= SMALL_GRAM_COLUMNS`` (else unchanged).

    Only in the main thread. The limit is process-wide, and OpenBLAS may
    ignore a change of its thread count made from another thread once one has
    been made (threadpoolctl supports limits set from the main thread), so a
    fit run in another thread (a thread-based parallel backend) keeps BLAS's
    threads as they are: a matter of speed only.
    """
    if (ThreadpoolController is None or columns > SMALL_GRAM_COLUMNS
            or threading.current_thread() is not threading.main_thread()):
        return contextlib.nullcontext()
    return _one_blas_thread()


@contextlib.contextmanager
def _one_blas_thread():
    """BLAS on one thread (main thread only): set on the outermost entry, restored on its exit."""
    global _controller, _limiter, _inside
    if _inside == 0:
        if _controller is None:
            _controller = ThreadpoolController()
        _limiter = _controller.limit(limits=1, user_api="blas")
    _inside += 1
    try:
        yield
    finally:
        _inside -= 1
        if _inside == 0:
            _limiter.restore_original_limits()
            _limiter = None


def cpus():
    """The number of CPUs this process may run on (skdp starts a worker thread only when it is 2 or more)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1
