"""Predictions of the fitted linear models (``predict``, ``decision_function``, ``predict_proba``)."""

__all__ = ["linear_scores", "LinearRegressorMixin", "LinearClassifierMixin", "ProbabilisticClassifierMixin"]


import numpy as np
from scipy import sparse, special
from sklearn.utils.validation import check_is_fitted, validate_data

from .bounds import clip_features


def linear_scores(estimator, X):
    """``X @ coef_.T + intercept_`` of a fitted linear model (dense or CSR ``X``), validated like sklearn.

    A model fitted on features clipped to ``[-feature_clip_, feature_clip_]``
    (:class:`~skdp.DPLogisticRegression`) scores the same clipped features.
    """
    check_is_fitted(estimator)
    X = validate_data(estimator, X, reset=False, accept_sparse="csr", dtype=[np.float64, np.float32])
    box = getattr(estimator, "feature_box_", None)
    if box is not None:  # fitted with feature_scaling: the clip is a box per feature in the user's units
        X = clip_to_box(X, *box)
    elif getattr(estimator, "feature_clip_", None) is not None:
        X = clip_features(X, estimator.feature_clip_)[0]
    coef = np.asarray(estimator.coef_)
    return np.asarray(X @ coef.T) + estimator.intercept_


def clip_to_box(X, lower, upper):
    """A float64 copy of ``X`` with column ``j`` clipped to ``[lower_j, upper_j]`` (CSR stays CSR: its box holds 0)."""
    if sparse.issparse(X):
        Xc = X.astype(np.float64, copy=True).tocsr()
        cols = Xc.indices
        np.clip(Xc.data, lower[cols], upper[cols], out=Xc.data)
        return Xc
    return np.clip(np.asarray(X, dtype=np.float64), lower, upper)


class LinearRegressorMixin:
    """``predict`` of a linear regressor."""

    def predict(self, X):
        """Predicted targets."""
        return linear_scores(self, X)


class LinearClassifierMixin:
    """``decision_function`` and ``predict`` of a fitted linear classifier.

    ``coef_`` of shape (n_features,), (1, n_features) or (n_classes, n_features); binary
    scores are flattened to (n_samples,) as in scikit-learn.
    """

    def decision_function(self, X):
        """Signed scores: shape (n_samples,) for binary, (n_samples, n_classes) otherwise."""
        Z = linear_scores(self, X)
        return Z.ravel() if Z.ndim == 1 or Z.shape[1] == 1 else Z

    def predict(self, X):
        """Predicted class labels."""
        Z = self.decision_function(X)
        idx = (Z > 0).astype(int) if Z.ndim == 1 else np.argmax(Z, axis=1)
        return self.classes_[idx]


class ProbabilisticClassifierMixin(LinearClassifierMixin):
    """Adds ``predict_proba`` / ``predict_log_proba``: the sigmoid for binary, softmax for
    multinomial, normalised one-vs-rest sigmoids when ``multi_class_ == "ovr"``."""

    def _ovr(self):
        return getattr(self, "multi_class_", None) == "ovr"

    def predict_proba(self, X):
        """Class probabilities (sigmoid for binary, softmax for multinomial, normalised one-vs-rest).

        A probability is never exactly 0: one below the smallest normal double
        (a score beyond about 708) is reported as that double, so that
        ``log(predict_proba(X))`` stays finite, as :meth:`predict_log_proba` is.
        """
        Z = self.decision_function(X)
        if Z.ndim == 1:
            P = np.column_stack([special.expit(-Z), special.expit(Z)])
        elif self._ovr():
            P = special.expit(Z)
            P = P / P.sum(axis=1, keepdims=True)
        else:
            P = special.softmax(Z, axis=1)
        return np.maximum(P, np.finfo(np.float64).tiny)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed stably (finite for any finite score).

        Unlike ``np.log(predict_proba(X))``, which is ``-inf`` once a probability
        underflows (scores beyond about 745), this is the log-sigmoid / log-softmax.
        """
        Z = self.decision_function(X)
        if Z.ndim == 1:
            return np.column_stack([-np.logaddexp(0, Z), -np.logaddexp(0, -Z)])
        if self._ovr():
            P = special.expit(Z)
            return np.log(P) - np.log(P.sum(axis=1, keepdims=True))
        return Z - special.logsumexp(Z, axis=1, keepdims=True)
