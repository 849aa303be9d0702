"""Preprocessing that keeps a pipeline's guarantee: transformers whose ``fit`` reads nothing off
the data (needs the ``sklearn`` extra; also importable from :mod:`dpjax.sklearn`).

scikit-learn's ``MinMaxScaler``, ``StandardScaler`` or a ``OneHotEncoder`` without declared
categories learn the private minimum, maximum, mean or category list of the data they are
fitted on: in ``make_pipeline(MinMaxScaler(), DPRandomTreesClassifier(...))`` the scaler has
released those statistics with no noise and no ledger entry, and the estimator cannot see it.
These two take what they need as public inputs instead:

* :class:`DPMinMaxScaler`: ``(x − lo)/(hi − lo)`` mapped to ``feature_range`` with the declared
  bounds, values outside clipped (no warning: a warning would depend on a record);
* :class:`DPOneHotEncoder`: one column per declared category, unknown values all zeros.

Their ``fit`` only checks the input's shape and column names, so fitting them on private data
spends nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.validation import check_is_fitted


def _columns(X: Any) -> tuple[int, np.ndarray | None]:
    """``X``'s column count and names (a DataFrame's), read off its shape only."""
    if isinstance(X, pd.DataFrame):
        return X.shape[1], np.asarray([str(c) for c in X.columns], dtype=object)
    shape = np.shape(X)
    if len(shape) != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {shape}")
    return shape[1], None


class _DeclaredTransformer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """What the two transformers share: the fitted column count and names, and the check that
    a transformed ``X`` has those columns."""

    def _remember_columns(self, n: int, names: np.ndarray | None) -> None:
        self.n_features_in_ = n
        if names is not None:
            self.feature_names_in_ = names

    def _checked(self, values: np.ndarray) -> np.ndarray:
        if values.ndim != 2 or values.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} columns; got shape "
                             f"{values.shape}")
        return values


class DPMinMaxScaler(_DeclaredTransformer):
    """Min-max scaling with **declared** bounds: ``bounds=(lower, upper)`` (scalars, or arrays
    of one value per column), ``feature_range`` (``(0, 1)``). Values outside the bounds are
    clipped to them; missing values stay missing. ``fit`` reads the column count only."""

    def __init__(self, bounds: Any = None, feature_range: tuple[float, float] = (0.0, 1.0)):
        self.bounds = bounds
        self.feature_range = feature_range

    def fit(self, X: Any, y: Any = None) -> DPMinMaxScaler:
        if self.bounds is None or isinstance(self.bounds, str):
            raise ValueError("DPMinMaxScaler needs bounds=(lower, upper), the public range of "
                             "every column: reading them off the data is not private")
        n, names = _columns(X)
        lower, upper = (np.broadcast_to(np.asarray(b, np.float64), (n,)).copy()
                        for b in self.bounds)
        if not np.all(np.isfinite(lower) & np.isfinite(upper)) or np.any(upper <= lower):
            raise ValueError("bounds must be finite with lower < upper for every column")
        low, high = self.feature_range
        if not high > low:
            raise ValueError(f"feature_range must be increasing; got {self.feature_range!r}")
        self._remember_columns(n, names)
        self.lower_, self.upper_ = lower, upper
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "lower_")
        if scipy.sparse.issparse(X):
            X = X.toarray()
        values = self._checked(np.asarray(X, np.float64))
        scaled = np.clip((values - self.lower_) / (self.upper_ - self.lower_), 0.0, 1.0)
        low, high = self.feature_range
        return low + scaled * (high - low)


class DPOneHotEncoder(_DeclaredTransformer):
    """One-hot encoding with **declared** categories (``categories``: one list per column, as
    scikit-learn's ``OneHotEncoder`` takes them); a value outside its column's list encodes as
    all zeros, with no error or warning (either would depend on a record). ``sparse_output``
    as scikit-learn's. ``fit`` reads the column count and names only."""

    def __init__(self, categories: Sequence[Sequence[Any]] | None = None,
                 sparse_output: bool = True):
        self.categories = categories
        self.sparse_output = sparse_output

    def fit(self, X: Any, y: Any = None) -> DPOneHotEncoder:
        if self.categories is None or isinstance(self.categories, str):
            raise ValueError("DPOneHotEncoder needs categories=[[...], ...], the public list of "
                             "every column: reading them off the data is not private")
        n, names = _columns(X)
        if len(self.categories) != n:
            raise ValueError(f"categories lists {len(self.categories)} column(s); X has {n}")
        lists = [list(c) for c in self.categories]
        if any(len(c) == 0 for c in lists):
            raise ValueError("every column needs at least one declared category")
        # fitted on a frame of the declared categories alone: the data is never read
        rows = max(len(c) for c in lists)
        public = pd.DataFrame({j: [c[min(i, len(c) - 1)] for i in range(rows)]
                               for j, c in enumerate(lists)})
        encoder = OneHotEncoder(categories=lists, handle_unknown="ignore",
                                sparse_output=self.sparse_output)
        self.encoder_ = encoder.fit(public.to_numpy(dtype=object))
        self._remember_columns(n, names)
        return self

    def transform(self, X: Any) -> Any:
        check_is_fitted(self, "encoder_")
        values = X.to_numpy(dtype=object) if isinstance(X, pd.DataFrame) else np.asarray(
            X, dtype=object)
        return self.encoder_.transform(self._checked(values))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        check_is_fitted(self, "encoder_")
        names = getattr(self, "feature_names_in_", None)
        if input_features is None:
            input_features = names if names is not None else [
                f"x{j}" for j in range(self.n_features_in_)]
        return self.encoder_.get_feature_names_out(input_features)


__all__ = ["DPMinMaxScaler", "DPOneHotEncoder"]
