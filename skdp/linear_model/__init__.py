"""Differentially private linear models."""

from ._logistic import DPLogisticRegression
from ._ridge import DPRidge
from ._sparse import DPSparseLinearRegression, DPSparseLogisticRegression

__all__ = ["DPLogisticRegression", "DPRidge", "DPSparseLinearRegression", "DPSparseLogisticRegression"]
