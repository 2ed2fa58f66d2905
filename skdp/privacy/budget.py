"""The (epsilon, delta) value type shared by every skdp estimator."""

import math
from dataclasses import dataclass
from numbers import Real

__all__ = ["PrivacyBudget", "NEIGHBOURING_RELATIONS"]

NEIGHBOURING_RELATIONS = ("replace_one", "add_remove")


def _round_up(x, digits=10):
    """``x`` rounded up (towards +inf) to ``digits`` significant digits; 0 and inf unchanged."""
    if x == 0 or not math.isfinite(x):
        return x
    shown = float(f"{x:.{digits}g}")
    if shown >= x:
        return shown
    # the nearest 10-digit value is below x: take the next one up (x's last shown digit + 1)
    step = 10.0 ** (math.floor(math.log10(abs(x))) - digits + 1)
    up = float(f"{shown + step:.{digits}g}")
    return up if up >= x else x


@dataclass(frozen=True, eq=True, repr=False)
class PrivacyBudget:
    """An (epsilon, delta) differential-privacy guarantee or target.

    A mechanism ``M`` is (epsilon, delta)-DP under a neighbouring relation if
    for every pair of neighbouring datasets ``D ~ D'`` and every event ``S``,
    ``P[M(D) in S] <= exp(epsilon) P[M(D') in S] + delta``.

    skdp states every guarantee for **replace-one** neighbours with the number
    of rows ``n`` public: ``D'`` is ``D`` with one row swapped for an arbitrary
    other row (``relation="replace_one"``). ``"add_remove"`` exists only so that
    numbers computed under the other common convention can be labelled and are
    never compared with replace-one numbers by accident.

    Parameters
    ----------
    epsilon : float
        Non-negative privacy-loss bound; ``inf`` means "no guarantee".
    delta : float
        Failure probability in ``[0, 1)``.
    relation : {"replace_one", "add_remove"}, default="replace_one"
        The neighbouring relation the guarantee is stated for.

    Notes
    -----
    Budgets are ordered component-wise: ``a <= b`` holds when ``a`` is at
    least as private as ``b`` (both epsilon and delta no larger) under the same
    relation. Budgets under different relations are not comparable and raise
    ``TypeError``.

    Examples
    --------
    >>> from skdp import PrivacyBudget
    >>> PrivacyBudget(1.0, 1e-5)
    PrivacyBudget(epsilon=1.0, delta=1e-05, relation='replace_one')
    >>> PrivacyBudget(0.5, 1e-6) <= PrivacyBudget(1.0, 1e-5)
    True
    """

    epsilon: float
    delta: float = 0.0
    relation: str = "replace_one"

    def __post_init__(self):
        eps, delta = self.epsilon, self.delta
        if isinstance(eps, bool) or not isinstance(eps, Real):
            raise TypeError(f"epsilon must be a real number, got {eps!r}.")
        if isinstance(delta, bool) or not isinstance(delta, Real):
            raise TypeError(f"delta must be a real number, got {delta!r}.")
        if math.isnan(eps) or eps < 0:
            raise ValueError(f"epsilon must be >= 0, got {eps!r}.")
        if math.isnan(delta) or not 0 <= delta < 1:
            raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
        if self.relation not in NEIGHBOURING_RELATIONS:
            raise ValueError(
                f"relation must be one of {NEIGHBOURING_RELATIONS}, got {self.relation!r}."
            )
        object.__setattr__(self, "epsilon", float(eps))
        object.__setattr__(self, "delta", float(delta))

    @property
    def is_pure(self):
        """True when ``delta == 0``."""
        return self.delta == 0.0

    @property
    def is_finite(self):
        """True when epsilon is finite (a real guarantee)."""
        return math.isfinite(self.epsilon)

    def __str__(self):
        return f"(epsilon={self.epsilon:.6g}, delta={self.delta:.3g}) [{self.relation}]"

    def __repr__(self):
        # epsilon and delta rounded *up* to 10 significant digits: an accountant's
        # 0.9999999999989 reads as 1.0, and no shown value is below the true one.
        return (f"PrivacyBudget(epsilon={_round_up(self.epsilon)!r}, delta={_round_up(self.delta)!r}, "
                f"relation={self.relation!r})")

    def __iter__(self):
        # Allows ``eps, delta = est.privacy_spent_``.
        yield self.epsilon
        yield self.delta

    def _check_comparable(self, other):
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        if other.relation != self.relation:
            raise TypeError(
                "Cannot compare privacy budgets stated for different neighbouring "
                f"relations ({self.relation!r} vs {other.relation!r})."
            )
        return True

    def __le__(self, other):
        ok = self._check_comparable(other)
        if ok is NotImplemented:
            return ok
        return self.epsilon <= other.epsilon and self.delta <= other.delta

    def __ge__(self, other):
        ok = self._check_comparable(other)
        if ok is NotImplemented:
            return ok
        return self.epsilon >= other.epsilon and self.delta >= other.delta

    def __lt__(self, other):
        ok = self._check_comparable(other)
        if ok is NotImplemented:
            return ok
        return self <= other and self != other

    def __gt__(self, other):
        ok = self._check_comparable(other)
        if ok is NotImplemented:
            return ok
        return self >= other and self != other
