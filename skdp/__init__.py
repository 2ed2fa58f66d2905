"""skdp: differentially private linear models with a scikit-learn interface.

Every estimator reports the privacy it spent in ``privacy_spent_``, an
(epsilon, delta) guarantee for **replace-one** neighbouring datasets (one row
swapped, number of rows public), computed by one shared accountant from what
the solver actually released.
"""

from .exceptions import (BudgetExceededError, PrivacyLeakWarning, SpentFitError, UncertifiedSolutionError,
                         WeakDeltaWarning)
from . import datasets
from .diagnostics import fit_diagnostics
from ._encoders import DPOneHotEncoder
from .linear_model import DPLasso, DPLinearSVC, DPLogisticRegression, DPRidge, DPSparseLinearRegression, DPSparseLogisticRegression
from .preprocessing import DPMinMaxScaler, DPSimpleImputer, DPStandardScaler, pipeline_privacy_spent, set_pipeline_budget
from .privacy import PrivacyBudget, PrivacyLedger
from .solvers import list_solvers

__version__ = "0.1.0.dev0"

__all__ = [
    "DPLasso",
    "DPLinearSVC",
    "DPLogisticRegression",
    "DPRidge",
    "DPSparseLinearRegression",
    "DPSparseLogisticRegression",
    "datasets",
    "fit_diagnostics",
    "DPMinMaxScaler",
    "DPOneHotEncoder",
    "DPSimpleImputer",
    "DPStandardScaler",
    "pipeline_privacy_spent",
    "set_pipeline_budget",
    "PrivacyBudget",
    "PrivacyLedger",
    "BudgetExceededError",
    "SpentFitError",
    "UncertifiedSolutionError",
    "PrivacyLeakWarning",
    "WeakDeltaWarning",
    "list_solvers",
    "__version__",
]
