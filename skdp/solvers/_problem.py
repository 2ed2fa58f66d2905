"""The bounded problem a solver reads: the rows behind their bounds, the loss, the penalty, and what is public.

:class:`PublicProblem` is what a plan may read: ``n``, ``p``, the loss, the
penalty and the public bounds every sensitivity is built on, and no data
attribute at all. :class:`Problem` extends it with a fit's bounded design and
labels; :func:`public_view` gives a problem's :class:`PublicProblem`, the only
thing a plan reads. The mini-batch machinery (row gathering ahead of use,
progress reports) lives here too.
"""

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields

import numpy as np
from scipy import sparse

from .._blas import cpus
from ..bounds import BoundedDesign
from ..losses import ScreenedSquaredGradient, clip_derivatives, clipped_mean_gradient, take_rows, weigh

__all__ = ["PublicProblem", "Problem", "HasRows", "public_view", "Progress", "report_rows", "report_phase",
           "batch_rows", "RowPrefetch"]

#: the mini-batch rows of a dense float64 design of at least this many bytes are gathered ahead (:class:`RowPrefetch`)
PREFETCH_MIN_BYTES = 1 << 24
#: :class:`RowPrefetch` gathers whole steps in blocks of about this many bytes of rows (at least one step)
PREFETCH_BLOCK_BYTES = 1 << 22
#: :class:`RowPrefetch` keeps this many blocks gathered or being gathered ahead of the one in use
PREFETCH_DEPTH = 2

#: ``verbose >= 1``: progress lines are printed once a solver has run this many seconds
PROGRESS_AFTER = 1.0
#: ``verbose == 1``: at most one epoch line per this many seconds (``verbose >= 2``: every epoch)
PROGRESS_INTERVAL = 0.5


class Progress:
    """Progress lines of one solver run (``verbose``): one per epoch or phase, with the elapsed time.

    An epoch is ``n`` rows' worth of per-example gradients (one full-batch
    gradient, or mini-batches adding up to ``n`` rows). Nothing is printed
    with ``verbose=0``, nor before the run has lasted :data:`PROGRESS_AFTER`
    seconds, so short fits stay quiet; with ``verbose=1`` epoch lines come at
    most every :data:`PROGRESS_INTERVAL` seconds, with ``verbose >= 2`` every
    epoch. Only public quantities are printed (phases and times, and epoch
    counts of a public schedule): with ``counts=False`` (a solver whose number
    of gradient evaluations depends on the data) only the end of the run is.
    """

    def __init__(self, name, verbose, n, counts=True):
        self.name, self.verbose, self.n = name, int(verbose or 0), max(int(n), 1)
        self.counts = bool(counts)
        self.start = self.last = time.perf_counter()
        self.rows, self.epochs = 0, 0

    def _print(self, text, force=False):
        now = time.perf_counter()
        elapsed = now - self.start
        if elapsed < PROGRESS_AFTER or not (force or self.verbose >= 2 or now - self.last >= PROGRESS_INTERVAL):
            return
        self.last = now
        print(f"[{self.name}] {text}, elapsed {elapsed:.2f} s", flush=True)

    def rows_done(self, m):
        """``m`` more per-example gradients were computed."""
        if not (self.verbose and self.counts):
            return
        self.rows += int(m)
        epochs = self.rows // self.n
        if epochs > self.epochs:
            self.epochs = epochs
            self._print(f"epoch {epochs}")

    def phase(self, text):
        """A phase of the run ended (e.g. the sufficient statistics); not with ``counts=False``."""
        if self.verbose and self.counts:
            self._print(text, force=True)

    def done(self):
        if self.verbose:
            self._print(f"done ({self.rows / self.n:.1f} epochs)" if self.counts else "done", force=True)


def _batch_size(rows):
    rows = np.asarray(rows)
    return int(np.count_nonzero(rows)) if rows.dtype == bool else rows.size


def batch_rows(X, rows):
    """``X[rows]`` for one step's products: on a lazy design, a design over the gathered raw rows (no augmented copy)."""
    return X.gather(rows) if hasattr(X, "gather") else X[rows]


def report_rows(problem, m):
    """Count ``m`` per-example gradients towards ``problem``'s progress (a no-op without ``verbose``)."""
    progress = getattr(problem, "progress", None)
    if progress is not None:
        progress.rows_done(m)


def report_phase(problem, text):
    """Report the end of a phase of ``problem``'s run (a no-op without ``verbose``)."""
    progress = getattr(problem, "progress", None)
    if progress is not None:
        progress.phase(text)


def _gather(source, table, rows):
    """The worker's job: ``(source[rows], table[rows].T)``, the second one row per column of the table
    (copies that numpy runs without the GIL), so a step reads each of its columns contiguously."""
    return take_rows(source, rows), np.ascontiguousarray(take_rows(table, rows).T)


class RowPrefetch:
    """The rows of the coming mini-batch steps, gathered on one worker thread while a step computes.

    Poisson subsampling draws the batches before the data is read (they must
    not depend on it), so while one step computes, the rows of the next are
    known. Gathering a random row of a large array is a memory-bound copy
    (one cache miss after another) that numpy runs without holding the GIL,
    so one worker thread copies the raw rows (``source[rows]``) and the row
    table's entries of later steps, by blocks of whole steps of about
    :data:`PREFETCH_BLOCK_BYTES`, keeping :data:`PREFETCH_DEPTH` blocks ahead
    of the step being computed. The values are the same copies
    :meth:`Problem.batch_sum` makes without it, so a fit is bit-identical;
    only the time changes. Nothing random happens on the worker: it reads
    index arrays that the solver's generator has already drawn, in the order
    drawn.

    :meth:`add` registers one chunk of steps (their index arrays, in order),
    :meth:`get` returns ``(source[rows], table[rows].T)`` for one of those
    exact arrays (``None`` for any other), and :meth:`close` stops the
    worker (pending gathers are cancelled) and detaches it from its problem.
    """

    def __init__(self, source, table, owner=None):
        self._source, self._table, self._owner = source, table, owner
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skdp-rows")
        self._block_rows = max(1, PREFETCH_BLOCK_BYTES // max(source.itemsize * source.shape[1], 1))
        self._where = {}  # id(step's rows) -> (those rows, block number, start, end)
        self._blocks = []  # block number -> [its rows (the steps' concatenated), its future or None, its step ids]
        self._submitted = 0  # blocks before this one have been submitted
        self._released = 0  # blocks before this one have been freed

    def add(self, steps):
        """Register the index arrays of consecutive steps (kept alive here until their block is done)."""
        block, size = [], 0
        for rows in steps:
            block.append(rows)
            size += len(rows)
            if size >= self._block_rows:
                self._add_block(block)
                block, size = [], 0
        if block:
            self._add_block(block)
        self._submit_until(self._released + PREFETCH_DEPTH + 1)

    def _add_block(self, steps):
        number, start = len(self._blocks), 0
        for rows in steps:
            self._where[id(rows)] = (rows, number, start, start + len(rows))
            start += len(rows)
        rows = np.concatenate(steps) if len(steps) > 1 else np.asarray(steps[0])
        self._blocks.append([rows, None, [id(r) for r in steps]])

    def _submit_until(self, stop):
        while self._submitted < min(stop, len(self._blocks)):
            block = self._blocks[self._submitted]
            block[1] = self._pool.submit(_gather, self._source, self._table, block[0])
            self._submitted += 1

    def get(self, rows):
        """``(source[rows], table[rows].T)`` gathered ahead, for a registered step's own index array; else ``None``."""
        entry = self._where.get(id(rows))
        if entry is None or entry[0] is not rows:
            return None
        _, number, start, end = entry
        for old in range(self._released, number):  # blocks before this one are done with: free them
            for key in self._blocks[old][2]:
                self._where.pop(key, None)
            self._blocks[old] = None
        self._released = max(self._released, number)
        self._submit_until(number + PREFETCH_DEPTH + 1)
        source_rows, table_rows = self._blocks[number][1].result()
        return source_rows[start:end], table_rows[:, start:end]

    def close(self):
        # on the worker itself (a finaliser run there) it cannot wait for itself to end
        on_worker = threading.current_thread().name.startswith("skdp-rows")
        self._pool.shutdown(wait=not on_worker, cancel_futures=True)
        self._where.clear()
        self._blocks = []
        if self._owner is not None and self._owner._prefetch is self:
            self._owner._prefetch = None


@dataclass(kw_only=True)
class PublicProblem:
    """What a plan may read of a bounded GLM problem: ``n``, ``p``, the loss, the penalty, the bounds, the settings.

    The problem is ``min (1/n) sum phi(<w, x_i>, y_i) + (alpha/2)||w||^2`` over
    rows with ``||x_i|| <= data_norm`` (intercept column included);
    regression labels satisfy ``|y_i| <= label_bound`` (with ``n_outputs = k > 1``
    regression targets, ``||y_i||_2 <= label_bound``: the bound is on each
    row's label vector, so every per-example gradient and every sufficient
    statistic is bounded jointly over the targets); ``coef_norm`` is the
    radius ``M`` of the ball the coefficients are constrained to (Frobenius
    for ``(p, k)`` coefficients; ``None`` when unconstrained). Only ``n`` and
    the bounds enter any sensitivity.

    This type has no data attributes at all: reading ``X``, ``y``, ``norms``
    or ``sample_weight`` raises :class:`AttributeError`, so a solver's
    :meth:`~skdp.solvers.Solver.make_plan`, which receives one (see
    :func:`public_view`), cannot read a row. :class:`Problem` is the same
    problem with its rows. Every field is keyword-only.

    Weighted fits minimise ``(1/n) sum w_i phi(<w, x_i>, y_i) + penalty`` with
    ``0 <= w_i <= W`` (``max_sample_weight = W``, public): a row's weight
    multiplies its (clipped) per-example gradient, so
    :attr:`lipschitz_bound`, :attr:`gradient_bound`, :attr:`smoothness` and
    :attr:`hessian_bound` are ``W`` times the loss's and every sensitivity
    built on them scales with ``W``; :attr:`clip` stays the clip norm of the
    unweighted per-example gradient. ``n`` stays the public number of rows
    (not the sum of the weights).

    Parameters
    ----------
    loss : Loss
        The GLM loss ``phi`` (:mod:`skdp.losses`).
    penalty : Penalty
        The penalty (:mod:`skdp.penalties`).
    data_norm : float
        Public bound on every row's L2 norm, intercept column included.
    n_outputs : int, default=1
        Number of targets or classes ``k`` (coefficients ``(p, k)`` when ``k > 1``).
    label_bound : float, default=None
        Public bound on each row's label (vector) norm for regression.
    coef_norm : float, default=None
        Radius of the coefficient ball, ``None`` when unconstrained.
    max_iter : int, default=None
        The solver's number of iterations (``None``: its default).
    verbose : int, default=0
        Progress lines of the run (:class:`Progress`).
    options : dict, default={}
        The estimator's ``solver_options``.
    n_samples : int, default=None
        The public number of rows ``n``.
    n_features : int, default=None
        The number of columns ``p``, intercept column included (``None``: not given;
        :attr:`p` then raises for a solver whose noise depends on it).
    constraint : NormBall, default=None
        The constrained solvers' constraint set, else ``None``.
    inf_norm_bound : float, default=None
        Public bound on ``max_j |x_ij|`` when tighter than ``data_norm`` (coordinate clipping).
    intercept_index : int, default=None
        The row of ``coef`` that holds the intercept (its constant column), else ``None``.
    max_sample_weight : float, default=1.0
        Public bound ``W`` on the row weights.
    clip_norm : float, default=None
        Per-example gradient clip norm requested by the estimator (``None``: the loss's own bound).
    """

    loss: object
    penalty: object
    data_norm: float
    n_outputs: int = 1
    label_bound: float = None
    coef_norm: float = None
    max_iter: int = None
    verbose: int = 0
    options: dict = field(default_factory=dict)
    #: the public number of rows
    n_samples: int = None
    #: the number of columns (intercept included)
    n_features: int = None
    #: constraint set of the constrained solvers (a :class:`~skdp.penalties.NormBall`), else ``None``
    constraint: object = None
    #: public bound on ``max_j |x_ij|`` when tighter than ``data_norm`` (coordinate clipping)
    inf_norm_bound: float = None
    #: row of ``coef`` that holds the intercept (its constant column), else ``None``
    intercept_index: int = None
    #: public bound ``W`` on the row weights: every per-example bound is ``W`` times the loss's
    max_sample_weight: float = 1.0
    #: per-example gradient clip norm requested by the estimator (``None``: the loss's own bound)
    clip_norm: float = None

    @property
    def n(self):
        """The public number of rows."""
        return int(self.n_samples)

    @property
    def p(self):
        """Number of columns (intercept column included)."""
        if self.n_features is None:
            raise ValueError("This solver's noise depends on the number of features; pass n_features.")
        return int(self.n_features)

    @property
    def coef_shape(self):
        p = self.p
        return (p,) if self.n_outputs == 1 else (p, self.n_outputs)

    def dual_feature_bound(self, q):
        """Public bound on ``||x_i||_q`` (``q >= 2``) implied by the clipping.

        ``||x||_q <= ||x||_2 <= data_norm`` for ``q >= 2``; with a coordinate
        bound ``R`` also ``||x||_q <= R p^(1/q)`` (``R`` for ``q = inf``).
        """
        bound = float(self.data_norm)
        if self.inf_norm_bound is not None:
            r = float(self.inf_norm_bound)
            bound = min(bound, r if math.isinf(q) else r * self.p ** (1.0 / q))
        return bound

    @property
    def weight_bound(self):
        """The public bound ``W`` on the row weights (``max_sample_weight``) as a float."""
        return float(self.max_sample_weight)

    @property
    def lipschitz_bound(self):
        """Per-example gradient bound of the (unclipped, weighted) loss over the domain."""
        return self.weight_bound * self.loss.lipschitz(self.data_norm, self.label_bound, self.coef_norm)

    @property
    def unit_gradient_bound(self):
        """The per-example gradient bound of one row of weight 1 (the clip norm of the unweighted gradient)."""
        G = self.loss.lipschitz(self.data_norm, self.label_bound, self.coef_norm)
        return G if self.clip_norm is None else min(G, self.clip_norm)

    @property
    def gradient_bound(self):
        """Per-example gradient bound ``G`` that the gradient solvers' sensitivities use.

        Replace-one changes one per-example term by at most ``2G``. It is the
        loss's own bound, or the clip norm when per-example clipping to a
        smaller norm is requested, times the weight bound ``W``.
        """
        return self.weight_bound * self.unit_gradient_bound

    @property
    def clip(self):
        """Clip norm for (unweighted) per-example gradients; ``None`` when the loss is provably G-Lipschitz."""
        if self.loss.globally_lipschitz and self.clip_norm is None:
            return None
        return self.unit_gradient_bound

    @property
    def smoothness(self):
        """Smoothness of each weighted per-example loss, ``W`` times the loss's."""
        return self.weight_bound * self.loss.smoothness(self.data_norm)

    @property
    def hessian_bound(self):
        """Largest eigenvalue of one weighted per-example Hessian, ``W`` times the loss's."""
        return self.weight_bound * self.loss.hessian_bound(self.data_norm)


#: the data-free type :func:`public_view` gives for a :class:`PublicProblem` or any subclass (:class:`Problem`)
PublicProblem.public_type = PublicProblem


class HasRows:
    """What a problem with its rows adds to its public type: ``X`` is required, ``n`` and ``p`` are its shape.

    The base of :class:`Problem` and :class:`~skdp.solvers.SparseProblem` (before their public type, whose
    ``n`` and ``p`` are the public ``n_samples`` and ``n_features``).
    """

    def __post_init__(self):
        if self.X is None:
            raise TypeError(f"A {type(self).__name__} holds its rows (X=None given); a data-free problem is a "
                            f"{self.public_type.__name__} (see skdp.solvers.public_view).")

    @property
    def n(self):
        """Number of rows (of ``X``)."""
        return self.X.shape[0]

    @property
    def p(self):
        """Number of columns (of ``X``, intercept column included)."""
        return self.X.shape[1]


@dataclass(kw_only=True)
class Problem(HasRows, PublicProblem):
    """A bounded GLM problem with its rows: a :class:`PublicProblem` plus the bounded data a solver's run reads.

    ``X`` rows satisfy ``||x_i|| <= data_norm``, ``y`` the label bounds, and
    ``sample_weight`` (``None``: all 1) lies in ``[0, max_sample_weight]``: a
    row's weight multiplies its (clipped) per-example gradient
    (:meth:`weights`). :attr:`n` and :attr:`p` are read from ``X``'s shape
    (``n_samples`` and ``n_features`` are then not read). Plans are made on
    :func:`public_view` of a problem, never on the problem itself.

    Parameters
    ----------
    X : array-like, sparse matrix or bounded design of shape (n_samples, n_features)
        The bounded rows (never ``None``: a data-free problem is a :class:`PublicProblem`).
    y : ndarray
        The encoded labels, ``(n,)`` or ``(n, k)``.
    norms : ndarray of shape (n_samples,) or None
        The rows' L2 norms (``None`` where the solver does not clip by them).
    sample_weight : ndarray of shape (n_samples,), default=None
        The row weights in ``[0, max_sample_weight]``; ``None``: all 1.
    **public
        The fields of :class:`PublicProblem`.
    """

    X: object
    y: np.ndarray
    norms: np.ndarray
    #: row weights in ``[0, max_sample_weight]`` (data, hidden by :func:`public_view`); ``None``: all 1
    sample_weight: np.ndarray = None

    def weights(self, rows=None):
        """The row weights (of ``rows``), or ``None`` when every weight is 1."""
        if self.sample_weight is None:
            return None
        return self.sample_weight if rows is None else self.sample_weight[rows]

    def weigh(self, S, rows=None):
        """Per-example derivatives ``S`` (of ``rows``) times their weights, after clipping (:func:`~skdp.losses.weigh`)."""
        return weigh(S, self.weights(rows))

    #: the run's :class:`Progress` (set by :meth:`Solver.solve`)
    progress: object = field(default=None, repr=False, compare=False)
    #: the screened squared-loss gradient of this problem's data, made on first use (see :meth:`mean_gradient`)
    _screened: object = field(default=None, init=False, repr=False, compare=False)
    #: ``(names, table)``: the per-row values the mini-batch steps read, side by side (see :meth:`batch_terms`)
    _row_table: object = field(default=None, init=False, repr=False, compare=False)
    #: the :class:`RowPrefetch` of the mini-batch steps being run, if any (see :meth:`row_prefetch`)
    _prefetch: object = field(default=None, init=False, repr=False, compare=False)
    #: ``(dense rows, clip)`` of the mini-batch steps, made on first use (see :meth:`_batch_constants`)
    _batch: object = field(default=None, init=False, repr=False, compare=False)

    def mean_gradient(self, coef, rows=None, n_total=None, remaining=None):
        """Mean clipped per-example gradient at ``coef`` (over ``rows`` when given; see :func:`clipped_mean_gradient`).

        Full-batch gradients of the squared loss on a lazy design go through
        :class:`~skdp.losses.ScreenedSquaredGradient` (same values, mostly
        without a pass over the rows); ``remaining`` (public: the full
        gradients the schedule still computes, this one included) lets it skip
        building the sufficient statistics when few are left.
        """
        if self.progress is not None and self.progress.verbose:
            self.progress.rows_done(self.n if rows is None else _batch_size(rows))
        if (rows is None and self.loss.quadratic and self.clip is not None and np.ndim(coef) == 1
                and self.sample_weight is None and hasattr(self.X, "gram")):
            if self._screened is None:
                self._screened = ScreenedSquaredGradient(self.X, self.y, self.norms, self.clip)
            return self._screened(coef, n_total, remaining)
        return clipped_mean_gradient(
            self.loss, self.X, self.y, coef, self.norms, self.clip, n_total=n_total, rows=rows,
            sample_weight=self.sample_weight,
        )

    def mean_gradient_pair(self, coef1, coef0, rows, n_total=None):
        """``(mean_gradient(coef1, rows), mean_gradient(coef0, rows))`` from one gather of the rows.

        For a scalar loss both points go through one product (each point's
        per-example gradients clipped on their own, as in two calls).
        """
        if np.ndim(coef1) != 1:
            return (self.mean_gradient(coef1, rows=rows, n_total=n_total),
                    self.mean_gradient(coef0, rows=rows, n_total=n_total))
        if self.progress is not None and self.progress.verbose:
            self.progress.rows_done(2 * _batch_size(rows))
        loss, clip, y, norms = self.loss, self.clip, self.y, self.norms

        def derivative(Z, r):  # column j: the derivatives at point j, clipped column by column, then weighted
            S = loss.derivative(Z, take_rows(y, r)[:, None])
            S = S if clip is None else clip_derivatives(S, take_rows(norms, r), clip)
            return S if self.sample_weight is None else S * take_rows(self.sample_weight, r)[:, None]

        W = np.empty((len(coef1), 2))
        W[:, 0], W[:, 1] = coef1, coef0
        if hasattr(self.X, "gradient_sum"):
            G = self.X.gradient_sum(W, derivative, rows=rows)
        else:
            Xb = self.X[rows]
            G = np.asarray(Xb.T @ derivative(np.asarray(Xb @ W), rows))
        G = G / (_batch_size(rows) if n_total is None else n_total)
        return G[:, 0], G[:, 1]

    def _dense_rows(self):
        """The raw ``float64`` array whose gathered rows :meth:`batch_sum` multiplies directly, or ``None``.

        A lazy design without entry winsorising over a ``float64`` array, or a
        dense ``float64`` array; any other design goes through its own operators.
        """
        X = self.X
        if isinstance(X, BoundedDesign):
            raw = X.raw
            return raw if X.feature_clip is None and isinstance(raw, np.ndarray) and raw.dtype == np.float64 else None
        return X if isinstance(X, np.ndarray) and X.dtype == np.float64 else None

    def _row_values(self):
        """``(names, table)``: the per-row values a scalar loss's mini-batch step reads besides ``X``, side by side.

        ``table`` is ``(n, k)`` (``k <= 5``), made on first use, with a column
        per name among ``"y"``, ``"norms"``, ``"weights"``, and a lazy
        design's clipping factors ``"f"`` and per-row intercept values
        ``"c"``, each the array's own values.
        """
        if self._row_table is None:
            X = self.X
            design = isinstance(X, BoundedDesign)
            columns = {"y": self.y, "norms": self.norms,
                       "weights": self.sample_weight, "f": X.row_factors if design else None,
                       "c": X.intercept_column if design and isinstance(X.intercept_column, np.ndarray) else None}
            names = [name for name, col in columns.items() if col is not None]
            table = np.empty((self.n, len(names)))
            for j, name in enumerate(names):
                table[:, j] = columns[name]
            self._row_table = (names, table)
        return self._row_table

    def row_prefetch(self):
        """A :class:`RowPrefetch` for the mini-batch steps about to run, or ``None`` when it would not pay.

        Only for a scalar loss with one label per row, whose steps go through :meth:`batch_sum`'s
        direct products (see :meth:`_dense_rows`), with ``X`` of at least
        :data:`PREFETCH_MIN_BYTES` (smaller arrays stay in cache, and a gather
        costs little), when the process may run on more than one CPU, and when
        no other prefetch is running on this problem.
        While it runs, :meth:`batch_sum` takes the rows it has gathered.
        """
        scalar = self.loss is not None and self.loss.scalar and np.ndim(self.y) == 1
        source = self._batch_constants()[0] if scalar else None
        if source is None or source.nbytes < PREFETCH_MIN_BYTES or self._prefetch is not None or cpus() < 2:
            return None
        self._prefetch = RowPrefetch(source, self._row_values()[1], owner=self)
        return self._prefetch

    def batch_terms(self, rows, values=None):
        """What a scalar loss's mini-batch step reads of ``rows`` besides ``X``, from one gather.

        A dict of ``(m,)`` arrays: ``"y"``, ``"norms"`` (the row norms,
        ``None`` when the problem has none), ``"weights"`` (``None`` without sample weights), and a
        lazy design's clipping factors ``"f"`` and intercept values ``"c"``
        (``None``, or the design's constant for ``"c"``, when not per row).
        They are kept side by side in one ``(n, k)`` table (:meth:`_row_values`),
        so a step reads one short row per sampled row instead of one element
        of each array (each a cache miss at random rows); ``values``: those
        rows of the table already gathered, one row per column (``(k, m)``, by
        :class:`RowPrefetch`).
        """
        X = self.X
        design = isinstance(X, BoundedDesign)
        names, table = self._row_values()
        values = np.ascontiguousarray(take_rows(table, rows).T) if values is None else values
        terms = {"norms": None, "weights": None, "f": None, "c": X.intercept_column if design else None}
        terms.update(zip(names, values))
        return terms

    def _clipped(self, Z, terms):
        """The per-example derivatives at margins ``Z`` (scalar loss; ``(m, k)``, a column per point) of the rows
        of ``terms`` (:meth:`batch_terms`), clipped to :attr:`clip` column by column, then weighted (every column
        gets the same elementwise operations as one point alone)."""
        clip = self._batch_constants()[1]
        S = self.loss.derivative(Z, terms["y"][:, None])
        if clip is not None:
            S = clip_derivatives(S, terms["norms"], clip)
        weights = terms["weights"]
        return S if weights is None else weigh(S, weights)

    def _clipped_one(self, Z, terms):
        return self._clipped(Z, terms)[:, 0]

    def _clipped_difference(self, Z, terms):
        S = self._clipped(Z, terms)
        return S[:, 0] - S[:, 1]

    def _batch_constants(self):
        """``(dense rows, clip)`` of the mini-batch steps: :meth:`_dense_rows` and :attr:`clip`, made once."""
        if self._batch is None:
            self._batch = (self._dense_rows(), self.clip)
        return self._batch

    def batch_gradient(self, coef, rows, n_total):
        """``mean_gradient(coef, rows=rows, n_total=n_total)`` of a mini-batch (by :meth:`batch_sum` for a scalar loss)."""
        if not (self.loss.scalar and np.ndim(coef) == 1):
            return self.mean_gradient(coef, rows=rows, n_total=n_total)
        report_rows(self, len(rows))
        g = self.batch_sum((coef,), self._clipped_one, rows)
        g /= n_total
        return g

    def batch_gradient_difference(self, coef1, coef0, rows, n_total):
        """``mean_gradient(coef1, rows) - mean_gradient(coef0, rows)`` (each per-example gradient clipped on its own,
        as in two calls) from one gather of the rows and one product for the difference."""
        if not (self.loss.scalar and np.ndim(coef1) == 1):
            g1, g0 = self.mean_gradient_pair(coef1, coef0, rows, n_total=n_total)
            return g1 - g0
        report_rows(self, 2 * len(rows))
        g = self.batch_sum((coef1, coef0), self._clipped_difference, rows)
        g /= n_total
        return g

    def batch_sum(self, points, derivative, rows):
        """``sum_{i in rows} S_i a_i`` with ``S = derivative(Z, terms)``, ``Z`` the margins of the rows at the points.

        For a scalar loss with ``(p,)`` points (one or several): the rows are
        gathered once, ``Z`` is ``(m, k)`` with the margins ``A[rows] @ point``
        of point ``j`` in column ``j``, ``terms`` is :meth:`batch_terms` of the
        rows, and ``derivative`` combines them into one per-example
        coefficient ``S`` of shape ``(m,)`` (clipped and weighted as the caller
        wants), so the sum is one more product. On a dense float64 design (a
        lazy one included) each point's margins and the sum are matrix-vector
        products on the raw gathered rows: at a mini-batch's size two such
        products take less time than one of two columns. The result is
        ``(p,)``; not counted towards the progress (see :func:`report_rows`).
        """
        X = self.X
        source = self._batch_constants()[0]
        if source is not None:
            gathered = self._prefetch.get(rows) if self._prefetch is not None else None
            if gathered is None:
                rows = np.asarray(rows)
                B, terms = take_rows(source, rows), self.batch_terms(rows)
            else:
                B, terms = gathered[0], self.batch_terms(rows, gathered[1])
            f, c = terms["f"], terms["c"]
            d = B.shape[1]
            Z = np.empty((len(points), B.shape[0]))  # row j: the margins at point j (Z.T is (m, k))
            for z, w in zip(Z, points):
                np.dot(B, w[:d] if c is not None else w, out=z)
                if f is not None:
                    z *= f
                if c is not None:
                    z += c * w[d]
            S = derivative(Z.T, terms)
            out = np.empty(len(points[0]))
            if c is not None:  # the intercept column's sum, from the unscaled S
                out[d] = c @ S if isinstance(c, np.ndarray) else c * S.sum()
            if f is not None:
                S = S * f
            np.dot(S, B, out=out[:d])
            return out
        rows = np.asarray(rows)
        terms = self.batch_terms(rows)
        Xb = batch_rows(X, rows)  # any other design: one gather, products through its own operators
        S = derivative(np.column_stack([np.asarray(Xb @ w) for w in points]), terms)
        return np.asarray(Xb.T @ S).ravel()

    def gram(self):
        """``(X^T W X, X^T W y)`` of the bounded data as dense float arrays (``W`` the row weights, if any).

        The squared loss's sufficient statistics; ``X^T W y`` is ``(p,)``, or
        ``(p, k)`` for ``k`` targets. A lazy design gives both in one pass.
        """
        X, y, p = self.X, np.asarray(self.y, dtype=float), self.p
        if hasattr(X, "gram"):  # a lazy design: X^T W X and X^T W y in one pass over the rows
            G = X.gram(weights=self.sample_weight, extra=y)
            return G[:p, :p], (G[:p, p] if y.ndim == 1 else G[:p, p:])
        Xw = X
        if self.sample_weight is not None:
            Xw = (sparse.csr_matrix(sparse.diags(self.sample_weight) @ X) if sparse.issparse(X)
                  else X * self.sample_weight[:, None])
        XtX = Xw.T @ X
        XtX = XtX.toarray() if sparse.issparse(XtX) else np.asarray(XtX, dtype=float)
        Xty = np.asarray(Xw.T @ y, dtype=float)
        return XtX, (Xty.ravel() if y.ndim == 1 else Xty.reshape(p, y.shape[1]))

    def objective(self, coef):
        Z = self.X @ coef
        values = self.loss.value(Z, self.y)
        if self.sample_weight is not None:
            values = values * self.sample_weight
        return float(np.mean(values)) + self.penalty.value(coef)


def public_view(problem):
    """The data-free problem of ``problem``: only ``n``, ``p``, the bounds and the settings remain.

    Plans are made from this view, so a plan *cannot* read a row: the same
    function of the same public quantities gives the ledger's charge (before
    the data is touched) and the fit's schedule and noise.

    Parameters
    ----------
    problem : PublicProblem, Problem, PublicSparseProblem or SparseProblem
        A problem with or without its rows.

    Returns
    -------
    view : PublicProblem or PublicSparseProblem
        The problem's ``public_type`` with every public field of ``problem``,
        ``n_samples`` and ``n_features`` set to its :attr:`~PublicProblem.n` and
        :attr:`~PublicProblem.p`; a data-free problem of that very type is returned unchanged.
    """
    public = getattr(type(problem), "public_type", None)
    if public is None:
        raise TypeError(f"public_view needs a PublicProblem or a PublicSparseProblem, got {type(problem).__name__}.")
    if type(problem) is public:
        return problem
    values = {f.name: getattr(problem, f.name) for f in fields(public) if f.init}
    values.update(n_samples=problem.n, n_features=problem.p)
    return public(**values)
