"""Secure aggregation by additive secret sharing over a fixed-point ring (simulated parties).

``seed004_nonconvex_lssgd_distributed.md`` chapter 6 and its "Distributed design": every party holds its own
rows (the sizes are public); a vector a party contributes is encoded in fixed point in the ring
``Z_{2^64}``, split into ``m`` additive shares that are uniform on the ring (any ``m - 1`` of them reveal
nothing), and only sums of shares are combined. :class:`SecureAggregator` is the ideal functionality of the
protocol: it takes every party's shares, reconstructs the **sum** inside, adds the DP noise drawn from
randomness to which every party contributed (the XOR of the parties' seeds), and reveals only the noisy
average. No party sees another's vector, and nobody sees the un-noised sum.
"""

import numpy as np

__all__ = ["FixedPointRing", "secret_share", "reconstruct", "SecureAggregator"]

_MASK = (1 << 64) - 1


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
    party_seeds : sequence of int
        Each party's contribution to the noise randomness; the noise generator is seeded with their XOR
        (uniform if any one party's seed is), as in the card's secure noise generation.
    """

    def __init__(self, ring, party_seeds):
        self.ring = ring
        seed = 0
        for s in party_seeds:
            seed ^= int(s) & 0xFFFFFFFF
        self._noise_rng = np.random.RandomState(seed)
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
