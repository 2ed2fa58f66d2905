"""Fixtures shared by the test files: small datasets and the one under-noise hook of the positive controls.

Two tiers: by default an expensive statistical check runs in a reduced form (fewer seeded fits, the
same assertion); ``--full`` adds its full-size form (marked ``@pytest.mark.full``)::

    python -m pytest -q -n 2 --full
"""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp.privacy.mechanisms import scaled_noise


# ------------------------------------------------------------------------------------------
# tiers
# ------------------------------------------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="also run the full tier: the expensive statistical checks at their full size")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--full"):
        return
    skip = pytest.mark.skip(reason="full tier: python -m pytest -q -n 2 --full")
    for item in items:
        if item.get_closest_marker("full") is not None:
            item.add_marker(skip)


# ------------------------------------------------------------------------------------------
# positive controls
# ------------------------------------------------------------------------------------------
@pytest.fixture
def under_noise():
    """``with under_noise(1 / 50): ...`` fits everything inside with every noise scale times 1/50.

    The one hook every positive control uses: a privacy test that passes on a
    mechanism must fail on the same mechanism with less noise, or it has no
    power. It is :func:`skdp.privacy.mechanisms.scaled_noise` (honoured by every
    sampler in skdp, so it under-noises any solver the same way, without
    patching module internals), restricted to multipliers below 1.
    """

    def factory(multiplier):
        if not 0.0 < multiplier < 1.0:
            raise ValueError(f"an under-noise multiplier is in (0, 1), got {multiplier!r}")
        return scaled_noise(multiplier)

    return factory


# ------------------------------------------------------------------------------------------
# datasets (fresh arrays for every test: a test may modify what it gets)
# ------------------------------------------------------------------------------------------
@pytest.fixture
def clf_data():
    """Binary classification: 400 x 5 standard normal rows, labels from a noisy linear rule."""
    rng = np.random.RandomState(0)
    X = rng.randn(400, 5)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.randn(400) > 0).astype(int)
    return X, y


@pytest.fixture
def reg_data():
    """Regression: 400 x 4 rows uniform on [-1, 1], a sparse linear signal plus noise 0.1."""
    rng = np.random.RandomState(1)
    X = rng.uniform(-1, 1, size=(400, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0] + 0.1 * rng.randn(400)
    return X, y


@pytest.fixture
def breast_cancer():
    """Breast cancer (569 x 30, binary), standardised."""
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture
def breast_cancer_split():
    """Breast cancer, stratified 70/30 split (random_state=0), standardised on the training part."""
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


@pytest.fixture(scope="module")
def clf_data_600():
    """Binary classification: 600 x 4 standard normal rows, labels from a noisy linear rule (module-scoped)."""
    rng = np.random.RandomState(0)
    X = rng.randn(600, 4)
    y = (X[:, 0] - X[:, 1] + 0.5 * rng.randn(600) > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def tabular():
    """Binary classification: 400 x 4 rows uniform on [-2, 2], labels from feature 0 plus noise (module-scoped)."""
    rng = np.random.RandomState(2)
    X = rng.uniform(-2, 2, size=(400, 4))
    y = (X[:, 0] + 0.5 * rng.randn(400) > 0).astype(int)
    return X, y


@pytest.fixture
def diabetes():
    """Diabetes (442 x 10, real labels in [25, 346]), standardised."""
    X, y = load_diabetes(return_X_y=True)
    return StandardScaler().fit_transform(X), y
