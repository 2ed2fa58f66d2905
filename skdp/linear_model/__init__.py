"""Differentially private linear models."""

from ._logistic import DPLogisticRegression
from ._lasso import DPLasso
from ._ridge import DPRidge
from ._svc import DPLinearSVC
from ._sparse import DPSparseLinearRegression, DPSparseLogisticRegression

__all__ = ["DPLasso", "DPLinearSVC", "DPLogisticRegression", "DPRidge", "DPSparseLinearRegression", "DPSparseLogisticRegression"]
