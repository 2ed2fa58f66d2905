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
