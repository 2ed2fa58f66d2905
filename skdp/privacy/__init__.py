"""Privacy core: budgets, mechanism descriptions (events), one accountant, samplers.

Every formula used here is from a published result, cited where it is used;
the skdp documentation page :doc:`/user_guide/accounting` collects them.
"""

from .calibration import (
    calibrate,
    calibrate_bounded_range,
    calibrate_gaussian,
    generalized_gaussian_sigma,
    gumbel_scale,
    pure_noise_scale,
    weight_coordinate_scale,
)
from .accounting import (
    DEFAULT_RDP_ORDERS,
    PrivacyReport,
    classic_gaussian_sigma,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    gdp_pure_epsilon,
    price,
    rdp_gaussian,
    rdp_laplace_1d,
    rdp_poisson_gaussian,
    rdp_pure,
    rdp_to_epsilon,
    supports,
    zcdp_epsilon,
    zcdp_rho,
)
from .budget import PrivacyBudget
from .events import (
    ApproxDPEvent,
    BoundedRangeEvent,
    GaussianEvent,
    L2LaplaceEvent,
    LaplaceEvent,
    PoissonGaussianEvent,
    PureDPEvent,
    ZCDPEvent,
)
from .objective import objective_perturbation_gaussian, objective_perturbation_pure
from .ledger import PrivacyLedger, active_ledger
from .quantile import private_feature_ranges, private_quantile, range_quantile_level, signed_geometric_grid
from .label_set import label_set_delta, label_set_threshold, private_label_set
from .mechanisms import (GaussianNoiseSteps, generalized_gaussian_noise, gaussian_noise, gaussian_noise_steps,
                         l2_laplace_noise, laplace_noise, report_noisy_max)

__all__ = [
    "PrivacyBudget",
    "PrivacyReport",
    "PrivacyLedger",
    "active_ledger",
    "GaussianEvent",
    "PoissonGaussianEvent",
    "LaplaceEvent",
    "L2LaplaceEvent",
    "PureDPEvent",
    "BoundedRangeEvent",
    "ZCDPEvent",
    "ApproxDPEvent",
    "price",
    "calibrate",
    "calibrate_bounded_range",
    "calibrate_gaussian",
    "pure_noise_scale",
    "weight_coordinate_scale",
    "gumbel_scale",
    "generalized_gaussian_sigma",
    "generalized_gaussian_noise",
    "private_quantile",
    "private_feature_ranges",
    "range_quantile_level",
    "signed_geometric_grid",
    "private_label_set",
    "label_set_threshold",
    "label_set_delta",
    "report_noisy_max",
    "objective_perturbation_gaussian",
    "objective_perturbation_pure",
    "classic_gaussian_sigma",
    "supports",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gdp_pure_epsilon",
    "zcdp_epsilon",
    "zcdp_rho",
    "rdp_to_epsilon",
    "rdp_gaussian",
    "rdp_poisson_gaussian",
    "rdp_pure",
    "rdp_laplace_1d",
    "DEFAULT_RDP_ORDERS",
    "gaussian_noise",
    "gaussian_noise_steps",
    "GaussianNoiseSteps",
    "laplace_noise",
    "l2_laplace_noise",
]
