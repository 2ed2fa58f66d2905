"""Secure aggregation by additive secret sharing over a fixed-point ring (simulated parties).

Wang 2021 (dissertation), ch. 6 (see :doc:`/papers/wang2021`): every party holds its own
rows (the sizes are public); a vector a party contributes is encoded in fixed point in the ring
``Z_{2^64}``, split into ``m`` additive shares that are uniform on the ring (any ``m - 1`` of them reveal
nothing), and only sums of shares are combined. :class:`SecureAggregator` is the ideal functionality of the
protocol: it takes every party's shares, reconstructs the **sum** inside, adds the DP noise drawn from
randomness to which every party contributed (the XOR of the parties' 128-bit seeds), and reveals only the
noisy average. No party sees another's vector, and nobody sees the un-noised sum.

Every generator here has at least 128 bits of seed: a party's contribution is a 128-bit integer (or a
``numpy.random.SeedSequence``, of which 128 bits are taken), and the noise generator is an MT19937 seeded
through ``SeedSequence`` with their XOR. (Seeding with a 31- or 32-bit integer would leave at most ``2^32``
noise streams, few enough to enumerate and so recover the un-noised aggregate.)
"""

import numpy as np

__all__ = ["FixedPointRing", "secret_share", "reconstruct", "SecureAggregator"]

_MASK = (1 << 64) - 1
#: bits of every party's contribution to the noise seed
SEED_BITS = 128
_SEED_MASK = (1 << SEED_BITS) - 1


def party_seed(seed):
    """A party's contribution as a non-negative 128-bit integer.

    ``seed`` is an ``int`` (its low 128 bits are used; negative ones are refused) or a
    ``numpy.random.SeedSequence`` (128 bits of its output, ``generate_state(4, uint32)``).
    """
    if isinstance(seed, np.random.SeedSequence):
        words = seed.generate_state(SEED_BITS // 32, dtype=np.uint32)
        return sum(int(w) << (32 * i) for i, w in enumerate(words))
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"a party seed must be an int or a numpy.random.SeedSequence, got {type(seed).__name__}.")
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"a party seed must be non-negative, got {seed!r}.")
    return seed & _SEED_MASK


def seeded_generator(seed_sequence):
    """A ``RandomState``-compatible generator (MT19937) seeded from a ``SeedSequence`` (all its entropy)."""
    return np.random.RandomState(np.random.MT19937(seed_sequence))


class FixedPointRing:
    """Fixed-point encoding of reals in ``Z_{2^64}`` with ``frac_bits`` fractional bits (two's complement).

    ``|x| < 2^(63 - frac_bits)`` is required (checked; the values shared here are clipped averages, so a
    public bound exists). Encoding rounds to the nearest multiple of ``2^-frac_bits``.
    """

    def __init__(self, frac_bits=32):
        if not 0 < int(frac_bits) < 62:
            raise ValueError(f"frac_bits must be in (0, 62), got {frac_bits!r}.")
        self.frac_bits = int(frac_bits)
        self.scale = float(2**self.frac_bits)
        self.limit = float(2 ** (62 - self.frac_bits))

    def encode(self, x):
        x = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(x)) or np.any(np.abs(x) >= self.limit):
            raise ValueError(f"values must be finite with |x| < {self.limit:g} to fit the ring.")
        return np.rint(x * self.scale).astype(np.int64).view(np.uint64)

    def decode(self, r):
        return np.asarray(r, dtype=np.uint64).view(np.int64).astype(np.float64) / self.scale


def secret_share(rng, encoded, n_shares):
    """Split ``encoded`` (uint64) into ``n_shares`` arrays, uniform on the ring, summing to it mod ``2^64``."""
    encoded = np.asarray(encoded, dtype=np.uint64)
    if n_shares < 1:
        raise ValueError(f"n_shares must be >= 1, got {n_shares!r}.")
    shares = [rng.randint(0, 2**63, size=encoded.shape, dtype=np.int64).view(np.uint64) * np.uint64(2)
              + rng.randint(0, 2, size=encoded.shape, dtype=np.int64).view(np.uint64)
              for _ in range(n_shares - 1)]
    last = encoded.copy()
    for s in shares:
        last = last - s  # uint64 arithmetic wraps mod 2^64
    return shares + [last]


def reconstruct(shares):
    """Sum of shares mod ``2^64``."""
    total = np.zeros_like(np.asarray(shares[0], dtype=np.uint64))
    for s in shares:
        total = total + np.asarray(s, dtype=np.uint64)
    return total


class SecureAggregator:
    """Ideal functionality: noisy average of the parties' secret-shared vectors.

    Parameters
    ----------
    ring : FixedPointRing
    party_seeds : sequence of int or numpy.random.SeedSequence
        Each party's contribution to the noise randomness: a non-negative 128-bit integer (only the low
        128 bits count) or a ``SeedSequence`` (128 bits of its output are taken). The noise generator
        (MT19937 behind a ``RandomState`` interface) is seeded through ``numpy.random.SeedSequence`` with
        their 128-bit XOR, which is uniform on ``[0, 2^128)`` if any one party's seed is (and independent of
        the others), as in the dissertation's noise generation inside the MPC (Sec. 6.2.2). An honest party draws its seed from at least
        128 bits of entropy.
    """

    def __init__(self, ring, party_seeds):
        self.ring = ring
        party_seeds = list(party_seeds)
        if not party_seeds:
            raise ValueError("SecureAggregator needs at least one party seed.")
        seed = 0
        for s in party_seeds:
            seed ^= party_seed(s)
        self._noise_seed = np.random.SeedSequence(seed)
        self._noise_rng = seeded_generator(self._noise_seed)
        self.n_rounds = 0

    def noisy_average(self, shares_by_party, noise):
        """``(1/m) sum_j v_j + noise(rng, shape)`` from every party's shares; the plain sum never leaves.

        ``shares_by_party[j][k]`` is the ``k``-th share of party ``j``'s encoded vector (share ``k`` is held
        by party ``k``); each party ``k`` first adds up the shares it holds, then the functionality combines
        those partial sums.
        """
        m = len(shares_by_party)
        partial = [reconstruct([shares_by_party[j][k] for j in range(m)]) for k in range(m)]
        total = self.ring.decode(reconstruct(partial))
        self.n_rounds += 1
        return total / m + noise(self._noise_rng, total.shape)
