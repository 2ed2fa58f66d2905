"""Differentially private linear models."""

from ._logistic import DPLogisticRegression
from ._ridge import DPRidge

__all__ = ["DPLogisticRegression", "DPRidge"]
