"""DP preprocessing: the scalers, the encoder and the imputer, and the pipeline tools, each from its own module.

References
----------
.. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
.. [2] M. Cesar and R. Rogers, "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT 2021. <https://arxiv.org/abs/2004.07223>
"""

from ._encoders import DPOneHotEncoder
from ._imputer import DPSimpleImputer
from ._minmax_scaler import DPMinMaxScaler
from ._pipeline import pipeline_privacy_spent, set_pipeline_budget
from ._standard_scaler import DPStandardScaler

__all__ = ["DPMinMaxScaler", "DPOneHotEncoder", "DPSimpleImputer", "DPStandardScaler", "pipeline_privacy_spent",
           "set_pipeline_budget"]
