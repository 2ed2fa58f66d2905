"""Multi-party private ERM (Wang 2021, dissertation, ch. 6; see :doc:`/papers/wang2021`), simulated in process.

Each party holds its own rows (sizes public); vectors are combined only through additive secret sharing
over a fixed-point ring, with the DP noise drawn once inside the aggregate. A ``dask.array`` input runs each
row chunk as a party on Dask (optional extra ``skdp[dask]``; imported only then).

References
----------
.. [1] L. Wang, "Towards efficient and effective privacy-preserving machine learning", PhD
   dissertation, University of California, Los Angeles, 2021.
   <https://escholarship.org/uc/item/3t58b68j>
.. [2] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
"""

from ._estimators import MultiPartyDPLogisticRegression, split_parties
from ._mpc import FixedPointRing, SecureAggregator, reconstruct, secret_share

__all__ = ["FixedPointRing", "MultiPartyDPLogisticRegression", "SecureAggregator", "reconstruct", "secret_share",
           "split_parties"]
