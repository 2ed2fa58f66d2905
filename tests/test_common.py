"""sklearn's estimator checks for every estimator x solver pair."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import DPLogisticRegression, DPRidge

SOLVERS = ["dp_gd", "output_pert", "obj_pert", "dp_svrg"]

ESTIMATORS = [DPLogisticRegression(solver=s, random_state=0) for s in SOLVERS] + [
    DPRidge(solver=s, random_state=0) for s in SOLVERS
]


def _expected_failed_checks(estimator):
    # No check is expected to fail. Score thresholds are handled by the
    # documented ``poor_score`` tag, which sklearn provides for exactly this case.
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
