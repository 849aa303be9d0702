"""scikit-learn estimators over :func:`dpjax.fit` (needs the ``sklearn`` extra).

    from dpjax.sklearn import DPRandomTreesClassifier
    clf = DPRandomTreesClassifier(epsilon=1.0, bounds=(lower, upper)).fit(X, y)
    clf.predict(X); clf.privacy_.epsilon

``get_params`` / ``set_params`` / ``clone`` work, so the estimators drop into pipelines and
grid searches. Note that tuning hyper-parameters on private data spends privacy that no ledger
sees (the paper's protocol does it too): tune on public or held-out data you may spend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
except ImportError as error:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError("dpjax.sklearn needs scikit-learn: pip install 'dpjax[sklearn]'") from error

from dpjax.api import Model, fit


class DPRandomTreesClassifier(ClassifierMixin, BaseEstimator):
    """Differentially private random decision-tree forest (Bojarski et al. 2014).

    Parameters are those of :func:`dpjax.fit` with ``method="random_trees"``;
    ``random_state`` is its ``key`` (``None``: fresh OS entropy).

    Attributes (after ``fit``): ``model_`` (:class:`dpjax.Model`), ``classes_``,
    ``n_features_in_``, ``privacy_`` (the privacy ledger).
    """

    def __init__(
        self,
        epsilon: float | None = 1.0,
        *,
        n_trees: int = 11,
        depth: int = 12,
        voting: str = "threshold",
        leaf_estimate: str = "smoothed",
        noise: str = "laplace",
        threshold_range: str = "global",
        bounds: Any = None,
        classes: Sequence[Any] | None = None,
        n_bins: int = 10,
        missing: str | Sequence[str] = "error",
        on_out_of_bounds: str = "error",
        neighbouring: str = "add_remove",
        random_state: int | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.n_trees = n_trees
        self.depth = depth
        self.voting = voting
        self.leaf_estimate = leaf_estimate
        self.noise = noise
        self.threshold_range = threshold_range
        self.bounds = bounds
        self.classes = classes
        self.n_bins = n_bins
        self.missing = missing
        self.on_out_of_bounds = on_out_of_bounds
        self.neighbouring = neighbouring
        self.random_state = random_state

    _METHOD = "random_trees"
    _HYPER = ("n_trees", "depth", "voting", "leaf_estimate", "noise", "threshold_range")

    def fit(self, X: Any, y: Any) -> DPRandomTreesClassifier:
        model: Model = fit(
            X, y, method=self._METHOD, epsilon=self.epsilon, key=self.random_state,
            bounds=self.bounds, classes=self.classes, n_bins=self.n_bins, missing=self.missing,
            on_out_of_bounds=self.on_out_of_bounds, neighbouring=self.neighbouring,
            **{name: getattr(self, name) for name in self._HYPER},
        )
        self.model_ = model
        self.classes_ = np.asarray(model.classes)
        self.n_features_in_ = model.spec.n_features
        self.privacy_ = model.privacy
        return self

    def predict(self, X: Any) -> np.ndarray:
        return self.model_.predict(X, key=self.random_state)

    def predict_proba(self, X: Any) -> np.ndarray:
        return self.model_.predict_proba(X)
