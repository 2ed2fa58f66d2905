"""sklearn's estimator checks for every estimator x solver pair."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import DPLogisticRegression, DPRidge

SOLVERS = ["dp_gd", "output_pert", "obj_pert", "dp_svrg"]

# Defaults include data_norm="auto" (the private bound path).
ESTIMATORS = [DPLogisticRegression(solver=s, random_state=0) for s in SOLVERS] + [
    DPRidge(solver=s, random_state=0) for s in SOLVERS
]


# No check is expected to fail: sklearn's score thresholds are skipped through the
# documented ``poor_score`` tag, which exists for estimators like these.
@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# The issue-4 solvers, on every estimator whose loss they support.
from skdp import DPLasso, DPLinearSVC  # noqa: E402

NEW_ESTIMATORS = (
    [DPLogisticRegression(solver=s, random_state=0) for s in
     ["noisy_sfw", "noisy_sfw_lp", "dp_accmd", "phased_sgd", "noisy_sgd", "dp_svrg_pp", "obj_pert_svrg"]]
    + [DPRidge(solver=s, random_state=0) for s in
       ["noisy_sfw", "noisy_sfw_lp", "dp_accmd", "phased_sgd", "noisy_sgd", "dp_svrg_pp"]]
    + [DPLasso(solver=s, label_bound=5.0, random_state=0) for s in ["noisy_sfw", "dp_accmd"]]
    + [DPLinearSVC(solver=s, random_state=0) for s in ["nsgd_moreau", "noisy_sgd"]]
)
NONCONVEX = ["dp_lssgd", "rrpsgd", "dp_srm"]
# max_iter=30 keeps the checks fast (the defaults run up to 2000 Poisson steps); every code path is the same
NONCONVEX_ESTIMATORS = ([DPLogisticRegression(solver=s, max_iter=30, random_state=0) for s in NONCONVEX]
                        + [DPRidge(solver=s, max_iter=30, random_state=0) for s in NONCONVEX]
                        + [DPLogisticRegression(solver=s, penalty="nonconvex", max_iter=30, random_state=0)
                           for s in ["dp_gd", "dp_srm"]])


@parametrize_with_checks(NEW_ESTIMATORS)
def test_sklearn_compatible_new_solvers(estimator, check):
    check(estimator)


@parametrize_with_checks(NONCONVEX_ESTIMATORS)
def test_sklearn_compatible_nonconvex_solvers(estimator, check):
    check(estimator)
