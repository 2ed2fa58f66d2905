"""What a solver releases, described as immutable data.

A solver never computes epsilon itself. It returns a list of events; the
accountant (:mod:`skdp.privacy.accounting`) prices any list of them. Each event
states its mathematics completely, so that it can be priced without knowing
which solver emitted it. Sensitivities are always those of the neighbouring
relation the accountant is asked about; skdp's solvers compute them for
**replace-one** neighbours with public ``n``: one swapped row moves a sum of
per-row vectors bounded by ``C`` by ``2C``, not ``C``.

Reference: the skdp documentation page :doc:`/user_guide/accounting`.

References
----------
.. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
.. [2] I. Mironov, K. Talwar and L. Zhang, "Rényi differential privacy of the sampled Gaussian
   mechanism", arXiv preprint, 2019. <https://arxiv.org/abs/1908.10530>
.. [3] K. Chaudhuri, C. Monteleoni and A. D. Sarwate, "Differentially private empirical risk
   minimization", Journal of Machine Learning Research 12, 2011.
   <https://arxiv.org/abs/0912.0071>
.. [4] C. Dwork and A. Roth, "The algorithmic foundations of differential privacy", Foundations
   and Trends in Theoretical Computer Science 9(3-4), 2014. <https://doi.org/10.1561/0400000042>
.. [5] D. Kifer, A. Smith and A. Thakurta, "Private convex empirical risk minimization and
   high-dimensional regression", COLT 2012, PMLR 23.
   <https://proceedings.mlr.press/v23/kifer12.html>
.. [6] I. Mironov, "Rényi differential privacy", IEEE CSF 2017.
   <https://arxiv.org/abs/1702.07476>
.. [7] M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions,
   and lower bounds", TCC 2016. <https://arxiv.org/abs/1605.02065>
.. [8] D. Durfee and R. Rogers, "Practical differentially private top-k selection with
   pay-what-you-get composition", NeurIPS 2019.
   <https://papers.nips.cc/paper/2019/hash/b139e104214a08ae3f2ebcce149cdf6e-Abstract.html>
.. [9] M. Cesar and R. Rogers, "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT 2021. <https://arxiv.org/abs/2004.07223>
"""

import math
from dataclasses import dataclass

__all__ = [
    "GaussianEvent",
    "PoissonGaussianEvent",
    "LaplaceEvent",
    "L2LaplaceEvent",
    "PureDPEvent",
    "BoundedRangeEvent",
    "ZCDPEvent",
    "ApproxDPEvent",
    "scale_event_count",
]


def _check_positive(name, value, *, allow_inf=False, allow_zero=False):
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if math.isnan(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>=' if allow_zero else '>'} 0, got {value!r}.")
    if math.isinf(value) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {value!r}.")
    return value


def _check_count(count):
    if isinstance(count, bool) or int(count) != count or count < 1:
        raise ValueError(f"count must be a positive integer, got {count!r}.")
    return int(count)


def _validate(event, *, zero_ok=(), inf_ok=()):
    """Check and normalise an event's fields: ``zero_ok`` ones are >= 0 and finite, ``inf_ok`` ones are
    > 0 and may be infinite (no noise), and ``count`` (when the event has one) is a positive integer."""
    for name in zero_ok:
        object.__setattr__(event, name, _check_positive(name, getattr(event, name), allow_zero=True))
    for name in inf_ok:
        object.__setattr__(event, name, _check_positive(name, getattr(event, name), allow_inf=True))
    if hasattr(event, "count"):
        object.__setattr__(event, "count", _check_count(event.count))


@dataclass(frozen=True)
class GaussianEvent:
    """``count`` adaptive releases of ``q(D) + N(0, sigma^2 I)``.

    ``sensitivity`` is the L2 sensitivity of the query ``q`` under the relation
    being priced: ``sup ||q(D) - q(D')||_2`` over neighbours (for a mean of
    per-row vectors bounded by ``C`` under replace-one with public ``n``, that is
    ``2C/n``). Each release is ``(sensitivity/sigma)``-GDP (Dong, Roth, Su 2022,
    Thm 2.7) and ``count`` of them compose exactly (Cor. 3.3).
    """

    sensitivity: float
    sigma: float
    count: int = 1

    def __post_init__(self):
        _validate(self, zero_ok=("sensitivity",), inf_ok=("sigma",))

    @property
    def mu_squared(self):
        """The squared GDP parameter ``count * (sensitivity/sigma)^2``."""
        return self.count * (self.sensitivity / self.sigma) ** 2


@dataclass(frozen=True)
class PoissonGaussianEvent:
    """``count`` Poisson-subsampled Gaussian steps (the DP-SGD step).

    Each step includes every row independently with probability
    ``sampling_rate`` (``q``), sums a per-row vector of L2 norm at most ``C``
    over the sampled rows, and adds ``N(0, (noise_multiplier * C)^2 I)``.
    ``noise_multiplier`` is ``z = sigma / C`` with ``C`` the **per-row** bound of
    the summed vector (not a sensitivity): dividing the noisy sum by a public
    constant (the expected batch size ``q n``) is post-processing; dividing by
    the realised batch size is not allowed.

    Under replace-one the worst pair of one step is
    ``(1-q) N(0, z^2) + q N(+1, z^2)`` against ``(1-q) N(0, z^2) + q N(-1, z^2)``
    (derived for skdp, see :doc:`/user_guide/accounting`); under add/remove it is
    the mixture against ``N(0, z^2)`` (Mironov-Talwar-Zhang 2019, section 3.3). The
    accountant chooses by its ``relation``.
    """

    sampling_rate: float
    noise_multiplier: float
    count: int = 1

    def __post_init__(self):
        q = _check_positive("sampling_rate", self.sampling_rate)
        if q > 1:
            raise ValueError(f"sampling_rate must be in (0, 1], got {q!r}.")
        object.__setattr__(self, "sampling_rate", q)
        _validate(self, inf_ok=("noise_multiplier",))


@dataclass(frozen=True)
class PureDPEvent:
    """``count`` releases, each ``epsilon``-DP (delta = 0) by its own proof.

    Priced by basic composition when ``delta = 0``, and through the tight RDP
    curve of a generic epsilon-DP mechanism (Bun-Steinke 2016, proof of Prop. 3.3)
    when ``delta > 0``.
    """

    epsilon: float
    count: int = 1

    def __post_init__(self):
        _validate(self, zero_ok=("epsilon",))

    @property
    def one_dimensional_laplace(self):
        return False


@dataclass(frozen=True)
class LaplaceEvent:
    """``count`` releases of ``q(D) + Lap(scale)^k`` (i.i.d. coordinates).

    ``sensitivity`` is the **L1** sensitivity of ``q``; each release is
    ``sensitivity/scale``-DP (Dwork & Roth 2014, Thm 3.6). When
    ``one_dimensional`` is true (a scalar query) the exact Laplace RDP curve
    (Mironov 2017, Prop. 6) is used; otherwise the generic pure-DP curve.
    """

    sensitivity: float
    scale: float
    count: int = 1
    one_dimensional: bool = False

    def __post_init__(self):
        _validate(self, zero_ok=("sensitivity",), inf_ok=("scale",))

    @property
    def epsilon(self):
        return self.sensitivity / self.scale

    @property
    def one_dimensional_laplace(self):
        return bool(self.one_dimensional)


@dataclass(frozen=True)
class L2LaplaceEvent:
    """``count`` releases of ``q(D) + b`` with density of ``b`` prop. to ``exp(-||b||_2/scale)``.

    The "Gamma-norm" / L2-Laplace mechanism (Chaudhuri, Monteleoni, Sarwate 2011,
    Alg. 1): ``||b|| ~ Gamma(d, scale)`` with a uniform direction. With L2
    sensitivity ``sensitivity`` it is ``sensitivity/scale``-DP by the triangle
    inequality (Chaudhuri-Monteleoni-Sarwate 2011, Alg. 1). This covers **output**
    perturbation only; objective perturbation uses :class:`ApproxDPEvent`.
    """

    sensitivity: float
    scale: float
    count: int = 1

    def __post_init__(self):
        _validate(self, zero_ok=("sensitivity",), inf_ok=("scale",))

    @property
    def epsilon(self):
        return self.sensitivity / self.scale

    @property
    def one_dimensional_laplace(self):
        return False


@dataclass(frozen=True)
class BoundedRangeEvent:
    """``count`` epsilon-bounded-range selections (exponential mechanism, Gumbel report-noisy-max).

    With score sensitivity ``s`` and Gumbel scale ``beta`` the selection is
    ``epsilon = 2 s / beta`` bounded range (Durfee-Rogers 2019); it is
    ``epsilon^2/8``-zCDP (Cesar-Rogers 2021) and epsilon-DP.
    """

    epsilon: float
    count: int = 1

    def __post_init__(self):
        _validate(self, zero_ok=("epsilon",))


@dataclass(frozen=True)
class ZCDPEvent:
    """``count`` releases, each ``rho``-zCDP (RDP curve ``alpha * rho``)."""

    rho: float
    count: int = 1

    def __post_init__(self):
        _validate(self, zero_ok=("rho",))


@dataclass(frozen=True)
class ApproxDPEvent:
    """``count`` releases, each (epsilon, delta)-DP by a theorem of its own.

    Used for mechanisms that are not additive-noise releases and therefore have
    no RDP curve we can vouch for, e.g. objective perturbation, whose guarantee
    comes from a change-of-variables argument (Kifer-Smith-Thakurta 2012;
    recalibrated for replace-one, see :doc:`/papers/bassily_feldman_talwar_thakurta2019`). They are
    composed with everything else by basic composition: epsilons add, deltas
    add.
    """

    epsilon: float
    delta: float
    count: int = 1

    def __post_init__(self):
        _validate(self, zero_ok=("epsilon",))
        delta = float(self.delta)
        if math.isnan(delta) or not 0 <= delta < 1:
            raise ValueError(f"delta must be in [0, 1), got {self.delta!r}.")
        object.__setattr__(self, "delta", delta)


def scale_event_count(event, factor):
    """Return ``event`` composed ``factor`` more times (its ``count`` multiplied)."""
    from dataclasses import replace

    return replace(event, count=event.count * _check_count(factor))
