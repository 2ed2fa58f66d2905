"""Private selection of a classifier's label set (``classes="auto"``).

A classifier needs its label set ``classes_`` before it can fit, and reading it
from the data publishes, for instance, that some rare label occurs at all. Here
the set is chosen by **Laplace thresholding** (partition selection; Korolova,
Kenthapadi, Mishra and Ntoulas 2009; Wilson et al. 2020; Desfontaines, Voss,
Gipson and Mandayam 2022): every label present in ``y`` with count ``c`` is
kept iff ``c + Laplace(b) > tau``, and only the sorted set of kept labels is
released (never the counts). A label absent from ``y`` is never output.

Replace-one analysis (n public). A replacement turns one label ``a`` into
``b``: ``c_a`` drops by 1, ``c_b`` grows by 1, nothing else moves. The
published analyses are for add/remove of one row; under replace-one two counts
move, so **both the noise scale and the threshold's margin double** against the
add/remove calibration: with ``b = 2 / epsilon`` and
``tau = 1 + b ln(1 / (2 delta))`` the release is ``(epsilon, delta)``-DP.
Where both labels stay present the two Laplace releases compose to
``2 / b = epsilon``; where a label is created (or destroyed) the extra
outcome "it is kept" has probability ``p1 = P[1 + Z > tau] = delta``; and a
relabelled singleton gives ``delta = p1`` exactly. :func:`label_set_delta`
evaluates the exact replace-one ``delta(epsilon)`` of any keep-probability
function, and the tests check that this calibration is tight (``delta`` exactly).
The condition ``delta <= 1 - exp(-epsilon / 2)`` of the analysis is checked.

It is priced as :class:`~skdp.privacy.events.ApproxDPEvent`
``(epsilon, delta)``, which the accountant composes with the rest of a fit by
basic composition (the solver is calibrated to what is left).

**Gaussian thresholding** (what the classifiers use): ``c + N(0, sigma^2) >
tau`` with ``tau = 1 + sigma z`` and ``z = Phi^{-1}(1 - delta_sel)``. Under
replace-one, call a label *common* when it is present in both neighbours;
at most one label is present only in ``D`` (count 1) and at most one only in
``D'``. Let ``E`` be the event that ``D``'s release holds no label
absent from ``D'`` (and ``E'`` symmetrically): ``P[not E] = P[1 + N(0,
sigma^2) > tau] = delta_sel``. Given ``E`` and ``E'`` both releases are the
thresholded common-label counts, whose vectors differ by at most 1 in at most
two labels: post-processing of a Gaussian release with L2 sensitivity
``sqrt(2)``, and the labels' noises are independent, so conditioning changes
nothing else. Hence for every set ``S`` of outcomes of the selection and of
everything fitted after it (adaptively, on the released set)
``P_D[S] <= P_D[S | E] + delta_sel`` and
``P_D'[S | E'] <= P_D'[S] / (1 - delta_sel)``: the whole fit is
``(epsilon' + ln(1/(1 - delta_sel)), delta' + delta_sel)``-DP where
``(epsilon', delta')`` is the accountant's price of the composition with a
``GaussianEvent(sqrt(2), sigma)`` in the selection's place (the decomposition
of approximate zCDP, Bun and Steinke 2016, Definition 8.1). So the selection is
priced as that ``GaussianEvent`` plus ``ApproxDPEvent(ln(1/(1 - delta_sel)),
delta_sel)``, which the accountant composes exactly as this argument does
(the rest at ``delta - delta_sel``, then the two added). Unlike the Laplace
version, its cost composes with the Gaussian solvers by GDP / RDP rather
than by adding epsilons: at (1, 1e-5) the solver keeps about 0.9 of the
noise budget instead of 0.75 of epsilon.

References
----------
.. [1] A. Korolova, K. Kenthapadi, N. Mishra and A. Ntoulas, "Releasing search queries and
   clicks privately", WWW 2009.
.. [2] R. J. Wilson, C. Y. Zhang, W. Lam, D. Desfontaines, D. Simmons-Marengo and B. Gipson,
   "Differentially private SQL with bounded user contribution", Proceedings on Privacy Enhancing
   Technologies 2020.
.. [3] D. Desfontaines, J. Voss, B. Gipson and C. Mandayam, "Differentially private partition
   selection", Proceedings on Privacy Enhancing Technologies 2022.
.. [4] M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions,
   and lower bounds", TCC 2016. <https://arxiv.org/abs/1605.02065>
"""

import math

import numpy as np
from scipy import stats

from .events import ApproxDPEvent, GaussianEvent
from .mechanisms import gaussian_noise, laplace_noise

__all__ = ["private_label_set", "private_label_set_from_counts", "label_set_threshold", "label_set_delta",
           "laplace_keep_probability", "gaussian_label_set_threshold", "gaussian_keep_probability",
           "gaussian_label_set_events", "private_label_set_gaussian", "private_label_set_gaussian_from_counts"]


def label_set_threshold(epsilon, delta):
    """``(b, tau)``: Laplace scale and threshold of an ``(epsilon, delta)``-DP label set under replace-one.

    ``b = 2 / epsilon`` and ``tau = 1 + b ln(1 / (2 delta))``.

    Examples
    --------
    >>> b, tau = label_set_threshold(1.0, 1e-5)
    >>> b, round(tau, 6)
    (2.0, 22.639557)
    """
    epsilon, delta = float(epsilon), float(delta)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"The label-set selection needs a finite epsilon > 0, got {epsilon!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"The label-set selection needs delta in (0, 1) (a label seen once must have a "
                         f"positive chance of being released), got {delta!r}.")
    if delta > -math.expm1(-epsilon / 2):
        raise ValueError(f"The label-set selection's analysis needs delta <= 1 - exp(-epsilon/2) = "
                         f"{-math.expm1(-epsilon / 2):.3g}; got delta={delta!r} at epsilon={epsilon!r}.")
    b = 2.0 / epsilon
    return b, 1.0 + b * math.log(1.0 / (2.0 * delta))


def laplace_keep_probability(counts, b, tau):
    """``(P[keep], P[drop])`` of labels with these counts: ``P[c + Laplace(b) > tau]``; 0 for ``c = 0``.

    Both computed directly (no ``1 - p`` cancellation).
    """
    c = np.asarray(counts, dtype=float)
    keep = np.where(c > 0, stats.laplace.sf(tau - c, scale=b), 0.0)
    drop = np.where(c > 0, stats.laplace.cdf(tau - c, scale=b), 1.0)
    return keep, drop


def label_set_delta(epsilon, keep_probability, max_count):
    """Exact replace-one ``delta(epsilon)`` of a thresholded label-set release.

    The maximum, over counts ``1 <= c_a <= max_count`` of the label that loses a
    row, ``0 <= c_b < max_count`` of the one that gains it, and both
    directions, of the hockey-stick divergence between
    ``Bern(pi(c_a)) x Bern(pi(c_b))`` and ``Bern(pi(c_a - 1)) x Bern(pi(c_b + 1))``
    (the other labels' releases are identical and cancel).

    Parameters
    ----------
    epsilon : float
    keep_probability : callable
        ``counts -> (P[keep], P[drop])`` (e.g. :func:`laplace_keep_probability`
        with its ``b`` and ``tau`` bound), 0 / 1 at count 0.
    max_count : int
        Largest count examined; beyond ``tau`` plus a few dozen scales both
        releases are certain and nothing changes.

    Returns
    -------
    delta : float
    """
    c = np.arange(int(max_count) + 2)
    keep, drop = keep_probability(c)
    ca = np.arange(1, int(max_count) + 1)[:, None]
    cb = np.arange(0, int(max_count))[None, :]
    e = math.exp(float(epsilon))
    worst = 0.0
    # outcome probabilities of (a kept?, b kept?) under D (counts ca, cb) and D' (ca - 1, cb + 1)
    P = [(keep[ca], keep[cb]), (keep[ca], drop[cb]), (drop[ca], keep[cb]), (drop[ca], drop[cb])]
    Q = [(keep[ca - 1], keep[cb + 1]), (keep[ca - 1], drop[cb + 1]), (drop[ca - 1], keep[cb + 1]),
         (drop[ca - 1], drop[cb + 1])]
    for first, second in ((P, Q), (Q, P)):
        total = np.zeros((ca.shape[0], cb.shape[1]))
        for (p_a, p_b), (q_a, q_b) in zip(first, second):
            total += np.maximum(p_a * p_b - e * q_a * q_b, 0.0)
        worst = max(worst, float(total.max()))
    return worst


def private_label_set(y, epsilon, delta, rng):
    """Release the labels of ``y`` whose noisy count clears the threshold, ``(epsilon, delta)``-DP.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        One label per row (any sortable labels).
    epsilon, delta : float
        The selection's budget (``delta > 0`` is required: a pure-epsilon
        mechanism cannot release a label that may be unique to one row).
    rng : numpy RandomState / Generator
        The fit's generator; the Laplace draws are made by
        :func:`skdp.privacy.mechanisms.laplace_noise`.

    Returns
    -------
    labels : ndarray
        The kept labels, sorted (a public order; noisy counts are not released).
    event : ApproxDPEvent
        ``ApproxDPEvent(epsilon, delta)``.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.repeat(["cat", "dog", "eel"], [500, 400, 1])
    >>> labels, event = private_label_set(y, 1.0, 1e-5, np.random.RandomState(0))
    >>> labels.tolist(), event
    (['cat', 'dog'], ApproxDPEvent(epsilon=1.0, delta=1e-05, count=1))
    """
    labels, counts = np.unique(np.asarray(y), return_counts=True)
    return private_label_set_from_counts(labels, counts, epsilon, delta, rng)


def private_label_set_from_counts(labels, counts, epsilon, delta, rng):
    """:func:`private_label_set` from the sorted distinct labels of ``y`` and their counts.

    ``labels`` must be sorted and hold only labels that occur (``counts > 0``),
    as ``np.unique(y, return_counts=True)`` gives them: the counts are sums
    over rows, so a distributed fit adds up the counts of its row blocks and
    runs this one mechanism on the total. Returns ``(kept labels, event)``.
    """
    b, tau = label_set_threshold(epsilon, delta)
    labels, counts = np.asarray(labels), np.asarray(counts)
    noisy = counts + laplace_noise(rng, b, labels.size)
    return labels[noisy > tau], ApproxDPEvent(float(epsilon), float(delta))


def gaussian_label_set_threshold(sigma, delta):
    """Threshold ``tau = 1 + sigma Phi^{-1}(1 - delta)`` of the Gaussian label-set selection.

    A label carried by one row is released with probability exactly ``delta``.

    Examples
    --------
    >>> round(gaussian_label_set_threshold(15.0, 1e-6), 4)
    72.3014
    """
    sigma, delta = float(sigma), float(delta)
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"The label-set selection needs a finite noise scale sigma > 0, got {sigma!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"The label-set selection needs delta in (0, 1) (a label seen once must have a "
                         f"positive chance of being released), got {delta!r}.")
    return 1.0 + sigma * float(stats.norm.isf(delta))


def gaussian_keep_probability(counts, sigma, tau):
    """``(P[keep], P[drop])`` of labels with these counts: ``P[c + N(0, sigma^2) > tau]``; 0 for ``c = 0``."""
    c = np.asarray(counts, dtype=float)
    keep = np.where(c > 0, stats.norm.sf(tau - c, scale=sigma), 0.0)
    drop = np.where(c > 0, stats.norm.cdf(tau - c, scale=sigma), 1.0)
    return keep, drop


def gaussian_label_set_events(sigma, delta):
    """The events the Gaussian label-set selection is priced as (module docstring).

    ``[GaussianEvent(sqrt(2), sigma), ApproxDPEvent(ln(1/(1 - delta)), delta)]``:
    replace-one moves two counts by one (L2 sensitivity ``sqrt(2)``), and a
    label present in one neighbour only is released with probability ``delta``.
    """
    delta = float(delta)
    return [GaussianEvent(math.sqrt(2.0), float(sigma)), ApproxDPEvent(-math.log1p(-delta), delta)]


def private_label_set_gaussian(y, sigma, delta, rng):
    """Release the labels of ``y`` whose count plus ``N(0, sigma^2)`` clears ``1 + sigma Phi^{-1}(1 - delta)``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        One label per row (any sortable labels).
    sigma : float
        Standard deviation of the noise added to every present label's count.
    delta : float
        Probability that a label carried by a single row is released.
    rng : numpy RandomState / Generator
        The fit's generator; the draws are made by
        :func:`skdp.privacy.mechanisms.gaussian_noise`.

    Returns
    -------
    labels : ndarray
        The kept labels, sorted (a public order; noisy counts are not released).
    events : list
        :func:`gaussian_label_set_events` ``(sigma, delta)``.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.repeat(["cat", "dog", "eel"], [500, 400, 1])
    >>> labels, events = private_label_set_gaussian(y, 10.0, 1e-6, np.random.RandomState(0))
    >>> labels.tolist()
    ['cat', 'dog']
    """
    labels, counts = np.unique(np.asarray(y), return_counts=True)
    return private_label_set_gaussian_from_counts(labels, counts, sigma, delta, rng)


def private_label_set_gaussian_from_counts(labels, counts, sigma, delta, rng):
    """:func:`private_label_set_gaussian` from the sorted distinct labels of ``y`` and their counts.

    As :func:`private_label_set_from_counts`: a distributed fit adds up the
    counts of its row blocks and runs this one mechanism on the total.
    Returns ``(kept labels, events)``.
    """
    tau = gaussian_label_set_threshold(sigma, delta)
    labels, counts = np.asarray(labels), np.asarray(counts)
    noisy = counts + gaussian_noise(rng, sigma, labels.size)
    return labels[noisy > tau], gaussian_label_set_events(sigma, delta)
