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

Their ``fit`` checks the input as scikit-learn's ``validate_data`` does (2-D, not empty, not
complex, numbers for the scaler; ``n_features_in_`` and ``feature_names_in_`` set, and checked
again by ``transform``), so fitting them on private data spends nothing: what it reads is the
data's schema (column count, column names, dtype), and that it holds at least one record. Their
messages name ``X`` and its columns and never a value or a row count (a shape in a message
leaves its row count out). Both pass scikit-learn's ``check_estimator`` but for the checks
listed, with the DP reason, in :data:`EXPECTED_FAILED_CHECKS` (:func:`expected_failed_checks`).
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

try:                                  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:                   # pragma: no cover - scikit-learn < 1.6
    def _validate_data(estimator: Any, X: Any, **kwargs: Any) -> Any:
        return estimator._validate_data(X, **kwargs)

EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "DPMinMaxScaler": {
        "check_dtype_object": (
            "the check fits an object array of numbers, which the scaler refuses by its dtype: "
            "converting it cell by cell would raise or not according to one record's cell, a "
            "refusal that tells neighbouring datasets apart (convert X to numbers first)"),
    },
    "DPOneHotEncoder": {},
}
"""scikit-learn's estimator checks that each transformer fails by design, with the reason (the
encoder passes every check of ``check_estimator``)."""


def expected_failed_checks(estimator: BaseEstimator) -> dict[str, str]:
    """The transformer's entry of :data:`EXPECTED_FAILED_CHECKS`, for ``check_estimator(...,
    expected_failed_checks=expected_failed_checks(est))``."""
    return dict(EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {}))


_RESHAPE = ("Reshape your data either using array.reshape(-1, 1) if your data has a single "
            "feature or array.reshape(1, -1) if it contains a single sample.")
_NOT_NUMERIC = ("{name} needs numeric X: X is typed as text or objects; convert it to numbers "
                "first (e.g. pd.to_numeric(column, errors='coerce'): a cell that is not a number "
                "becomes missing, which the scaler keeps missing)")


def _is_list(value: Any) -> bool:
    return hasattr(value, "__iter__") and not isinstance(value, (str, bytes))


def _is_complex(dtype: Any) -> bool:
    return isinstance(dtype, np.dtype) and dtype.kind == "c"


def _numeric(X: np.ndarray | pd.DataFrame, name: str) -> np.ndarray:
    """``X`` (an array or a DataFrame) as float64, with missing values as NaN, when its dtypes
    are numbers (booleans, integers, floats, pandas' nullable numbers); anything typed as text
    or objects is refused by its dtype, never cell by cell (whether a cell converts is a fact
    of one record: a refusal it could cause would tell neighbouring datasets apart)."""
    dtypes = list(X.dtypes) if isinstance(X, pd.DataFrame) else [X.dtype]
    if not all(pd.api.types.is_numeric_dtype(dtype) for dtype in dtypes):
        raise TypeError(_NOT_NUMERIC.format(name=name))
    if isinstance(X, pd.DataFrame):
        return X.to_numpy(dtype=np.float64, na_value=np.nan)
    return X.astype(np.float64)


def _as_array(X: Any, name: str, *, numeric: bool, accept_sparse: bool) -> Any:
    """``X`` as a 2-D array (float64 when ``numeric``, else as its values are; a sparse matrix
    as it is, its dtype checked), checked the way ``check_array`` checks it: not sparse unless
    ``accept_sparse``, not complex, 2-D, at least one sample and one feature."""
    if scipy.sparse.issparse(X):
        if not accept_sparse:
            raise TypeError(f"{name} does not take sparse X: pass it dense (X.toarray())")
        values = X
        if _is_complex(values.dtype):
            raise ValueError(f"Complex data not supported: {name} needs real X")
        if values.dtype.kind not in "biuf":
            raise TypeError(_NOT_NUMERIC.format(name=name))
    elif isinstance(X, pd.DataFrame):
        if any(_is_complex(dtype) for dtype in X.dtypes):
            raise ValueError(f"Complex data not supported: {name} needs real X")
        values = _numeric(X, name) if numeric else X.to_numpy(dtype=object)
    else:
        try:
            values = X if isinstance(X, np.ndarray) else np.asarray(
                X, dtype=None if numeric else object)
        except ValueError:            # numpy's message would show the rows' shape
            raise ValueError(f"{name} could not read X as a 2-D array: its rows differ in "
                             "length or hold sequences") from None
        if _is_complex(values.dtype):
            raise ValueError(f"Complex data not supported: {name} needs real X")
        if numeric:
            values = _numeric(values, name)
    if values.ndim != 2:
        got = "a scalar" if values.ndim == 0 else f"a {values.ndim}-D array"
        raise ValueError(f"{name} needs a 2-D X (n_samples, n_features); got {got}."
                         + (" " + _RESHAPE if values.ndim == 1 else ""))
    if values.shape[0] == 0:
        raise ValueError(f"X is empty: {name} needs at least 1 sample")
    if values.shape[1] == 0:
        # the shape as scikit-learn writes it, with the row count left out (it is private)
        raise ValueError(f"X has 0 feature(s) (shape=(, 0)) while a minimum of 1 is required "
                         f"by {name} (the row count is not shown: X is private)")
    return values


class _DeclaredTransformer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """What the two transformers share: the check of ``X`` (its schema, as ``validate_data``
    checks it: :func:`_as_array`), which ``fit`` remembers (``n_features_in_``,
    ``feature_names_in_``) and ``transform`` checks again."""

    _NUMERIC: bool
    _SPARSE: bool

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # missing values are public behaviour, not an error: the scaler keeps them missing,
        # the encoder encodes them as unknown (all zeros) unless a category declares them
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = self._SPARSE
        return tags

    def _more_tags(self) -> dict[str, Any]:  # pragma: no cover - scikit-learn < 1.6
        return {"allow_nan": True, "X_types": ["2darray"] + (["sparse"] if self._SPARSE else []),
                "_xfail_checks": expected_failed_checks(self)}

    def _check_X(self, X: Any, *, reset: bool) -> Any:
        values = _as_array(X, type(self).__name__, numeric=self._NUMERIC,
                           accept_sparse=self._SPARSE)
        # n_features_in_ and feature_names_in_ set (reset) or checked, as scikit-learn does
        _validate_data(self, X if isinstance(X, pd.DataFrame) else values, reset=reset,
                       skip_check_array=True)
        return values


class DPMinMaxScaler(_DeclaredTransformer):
    """Min-max scaling with **declared** bounds: ``bounds=(lower, upper)`` (scalars, or arrays
    of one value per column), ``feature_range`` (``(0, 1)``). Values outside the bounds, ±inf
    included, are clipped to them; missing values (NaN) stay missing. ``X`` may be sparse
    (``transform`` returns it dense: a zero does not scale to zero). ``fit`` reads the schema
    only (module docstring)."""

    _NUMERIC = True
    _SPARSE = True

    def __init__(self, bounds: Any = None, feature_range: tuple[float, float] = (0.0, 1.0)):
        self.bounds = bounds
        self.feature_range = feature_range

    def fit(self, X: Any, y: Any = None) -> DPMinMaxScaler:
        if self.bounds is None or isinstance(self.bounds, str):
            raise ValueError("DPMinMaxScaler needs bounds=(lower, upper), the public range of "
                             "every column: reading them off the data is not private")
        if not _is_list(self.bounds) or len(list(self.bounds)) != 2:
            raise ValueError("bounds must be a pair (lower, upper), each a scalar or one value "
                             "per column")
        low, high = self.feature_range
        if not high > low:
            raise ValueError(f"feature_range must be increasing; got {self.feature_range!r}")
        n = self._check_X(X, reset=True).shape[1]
        try:
            lower, upper = (np.broadcast_to(np.asarray(b, np.float64), (n,)).copy()
                            for b in self.bounds)
        except ValueError:
            raise ValueError(f"bounds must give a scalar or {n} values (one per column of X) "
                             "for each of lower and upper") from None
        if not np.all(np.isfinite(lower) & np.isfinite(upper)) or np.any(upper <= lower):
            raise ValueError("bounds must be finite with lower < upper for every column")
        self.lower_, self.upper_ = lower, upper
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "lower_")
        values = self._check_X(X, reset=False)
        if scipy.sparse.issparse(values):
            values = values.toarray().astype(np.float64)
        scaled = np.clip((values - self.lower_) / (self.upper_ - self.lower_), 0.0, 1.0)
        low, high = self.feature_range
        return low + scaled * (high - low)


def _declared_lists(categories: Any, n: int) -> list[list[Any]]:
    """The declared categories, one list per column: ``categories`` lists one per column, or
    is one list of categories that every column shares."""
    items = list(categories)
    listed = [_is_list(c) for c in items]
    if items and not any(listed):
        return [items] * n
    if not all(listed):
        raise ValueError("categories must be one list of categories per column, or one list "
                         "that every column shares; not a mix of lists and categories")
    if len(items) != n:
        raise ValueError(f"categories lists {len(items)} column(s); X has {n}")
    lists = [list(c) for c in items]
    if any(len(c) == 0 for c in lists):
        raise ValueError("every column needs at least one declared category")
    return lists


class DPOneHotEncoder(_DeclaredTransformer):
    """One-hot encoding with **declared** categories: ``categories`` is one list per column (as
    scikit-learn's ``OneHotEncoder`` takes them), or one list of categories that every column
    shares (``categories=[0, 1]``). A value outside its column's list, a missing one included
    unless declared, encodes as all zeros, with no error or warning (either would depend on a
    record). ``sparse_output`` as scikit-learn's; ``X`` must be dense. ``fit`` reads the schema
    only (module docstring)."""

    _NUMERIC = False
    _SPARSE = False

    def __init__(self, categories: Sequence[Sequence[Any]] | Sequence[Any] | None = None,
                 sparse_output: bool = True):
        self.categories = categories
        self.sparse_output = sparse_output

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags

    def fit(self, X: Any, y: Any = None) -> DPOneHotEncoder:
        if self.categories is None or isinstance(self.categories, str):
            raise ValueError("DPOneHotEncoder needs categories=[[...], ...], the public list of "
                             "every column: reading them off the data is not private")
        lists = _declared_lists(self.categories, self._check_X(X, reset=True).shape[1])
        # fitted on a frame of the declared categories alone: the data is never read
        rows = max(len(c) for c in lists)
        public = pd.DataFrame({j: [c[min(i, len(c) - 1)] for i in range(rows)]
                               for j, c in enumerate(lists)})
        encoder = OneHotEncoder(categories=lists, handle_unknown="ignore",
                                sparse_output=self.sparse_output)
        self.encoder_ = encoder.fit(public.to_numpy(dtype=object))
        return self

    def transform(self, X: Any) -> Any:
        check_is_fitted(self, "encoder_")
        return self.encoder_.transform(self._check_X(X, reset=False).astype(object))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        check_is_fitted(self, "encoder_")
        names = getattr(self, "feature_names_in_", None)
        if input_features is None:
            input_features = names if names is not None else [
                f"x{j}" for j in range(self.n_features_in_)]
        return self.encoder_.get_feature_names_out(input_features)


__all__ = ["DPMinMaxScaler", "DPOneHotEncoder", "EXPECTED_FAILED_CHECKS",
           "expected_failed_checks"]
