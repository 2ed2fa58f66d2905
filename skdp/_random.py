"""Where a fit's noise comes from.

Every skdp release draws its noise from one generator made here:

* ``random_state=None`` (the default): a fresh ``numpy.random.SeedSequence()``,
  i.e. 128 bits of OS entropy per fit, never numpy's global generator. Two such
  fits never share noise, and nobody can regenerate it.
* a user-given ``int`` or ``RandomState``: sklearn's reproducibility. The
  guarantee then assumes the seed is **secret and used for one release**. The
  fit records a digest of the generator state it started from in
  ``noise_source_``; skdp's composition tools (:class:`~skdp.PrivacyLedger`,
  :func:`~skdp.pipeline_privacy_spent`, :func:`~skdp.model_selection.search_privacy_cost`)
  treat two releases with the same digest as sharing their noise and report
  ``epsilon=inf`` (or refuse) instead of composing them as independent.
  A seed is weaker than fresh entropy in two ways the digest cannot fix: an
  ``int`` seed has at most 32 bits (sklearn's convention), so whoever can
  rerun the fit can enumerate the seeds and regenerate the noise; and a seed
  given as a parameter travels with the pickled model (``get_params``; a
  ``RandomState``'s state can even be rewound to the draws it made). Seeds are
  for tests and reproducible experiments; publish models fitted with
  ``random_state=None``.
* where skdp itself fans out (the candidates of
  :class:`~skdp.model_selection.DPGridSearchCV`, every DP step of a candidate
  Pipeline), it derives independent children of one root with
  ``SeedSequence.spawn`` and hands each fit its child through a private
  attribute that the fit consumes; the child never becomes a parameter, so it
  does not travel with a pickled model.
"""

import hashlib

import numpy as np
from sklearn.utils import check_random_state

from . import diagnostics

__all__ = ["ENTROPY", "fit_randomness", "noise_source", "root_seed", "assign_child_seed", "shared_sources", "generator",
           "child_source"]

#: ``noise_source_`` of a fit whose noise came from fresh OS entropy (never shared).
ENTROPY = "os-entropy"
_CHILD_ATTR = "_skdp_child_seed"


def _digest(*parts):
    h = hashlib.sha256(b"skdp-noise-source")
    for p in parts:
        h.update(np.asarray(p).tobytes() if not isinstance(p, (bytes, str)) else
                 (p.encode() if isinstance(p, str) else p))
    return "seed:" + h.hexdigest()[:32]


def _state_digest(rng):
    state = rng.get_state(legacy=False)
    inner = state["state"]
    parts = [state["bit_generator"]]
    for key in sorted(inner):
        parts += [key, np.atleast_1d(np.asarray(inner[key]))]
    parts += [np.asarray([state.get("has_gauss", 0)]), np.asarray([state.get("gauss", 0.0)])]
    return _digest(*parts)


def root_seed(random_state):
    """``(SeedSequence, source)`` for a fan-out: children of it are independent releases.

    ``None`` takes 128 bits of OS entropy; an ``int`` is used as the entropy (reproducible);
    a ``RandomState`` contributes 128 bits drawn from it (so it advances, as sklearn expects).
    """
    if random_state is None:
        return np.random.SeedSequence(), ENTROPY
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return np.random.SeedSequence(int(random_state)), _digest("int", str(int(random_state)))
    rng = check_random_state(random_state)
    source = _state_digest(rng)
    words = rng.randint(0, 2**32, size=4, dtype=np.uint64)
    return np.random.SeedSequence([int(w) for w in words]), source


def generator(seed_sequence):
    """The legacy-API generator (what every skdp noise function takes) for one ``SeedSequence``."""
    return np.random.RandomState(np.random.MT19937(seed_sequence))


def assign_child_seed(estimator, seed_sequence, source):
    """Make ``estimator``'s next fit draw its noise from ``seed_sequence`` (consumed by that fit)."""
    setattr(estimator, _CHILD_ATTR, (seed_sequence, source))


def noise_source(estimator):
    """The ``noise_source_`` that ``estimator``'s next fit will record, without drawing anything."""
    child = getattr(estimator, _CHILD_ATTR, None)
    if child is not None:
        return child[1]
    random_state = estimator.random_state
    if random_state is None:
        return ENTROPY
    return _state_digest(check_random_state(random_state))


def fit_randomness(estimator):
    """The one generator of a fit; records ``estimator.noise_source_``.

    A child seed assigned by :func:`assign_child_seed` takes precedence over
    ``random_state`` and is removed, so it is used for one fit only. Called
    once at the start of every fit, it also clears the estimator's previous
    :mod:`~skdp.diagnostics`.
    """
    diagnostics.reset(estimator)
    child = estimator.__dict__.pop(_CHILD_ATTR, None)
    if child is not None:
        seq, source = child
        rng = generator(seq)
    elif estimator.random_state is None:
        rng, source = generator(np.random.SeedSequence()), ENTROPY
    else:
        rng = check_random_state(estimator.random_state)
        source = _state_digest(rng)
    estimator.noise_source_ = source
    return rng


def child_source(root_source, index):
    """Source label of the ``index``-th child of a root (entropy stays entropy)."""
    if root_source == ENTROPY:
        return ENTROPY
    return _digest(root_source, str(int(index)))


def shared_sources(sources):
    """The seeded sources that occur more than once in ``sources`` (fresh entropy never collides)."""
    seen, shared = set(), []
    for s in sources:
        if s is None or s == ENTROPY:
            continue
        if s in seen and s not in shared:
            shared.append(s)
        seen.add(s)
    return shared
