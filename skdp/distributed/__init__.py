"""Multi-party private ERM (Wang 2021, dissertation, ch. 6; see :doc:`/papers/seed004`), simulated in process.

Each party holds its own rows (sizes public); vectors are combined only through additive secret sharing
over a fixed-point ring, with the DP noise drawn once inside the aggregate. A ``dask.array`` input runs each
row chunk as a party on Dask (optional extra ``skdp[dask]``; imported only then).
"""

from ._estimators import MultiPartyDPLogisticRegression, split_parties
from ._mpc import FixedPointRing, SecureAggregator, reconstruct, secret_share

__all__ = ["FixedPointRing", "MultiPartyDPLogisticRegression", "SecureAggregator", "reconstruct", "secret_share",
           "split_parties"]
