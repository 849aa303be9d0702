"""Public binning of tabular features into uint8 codes (``docs/design.md``, "Data flow").

Numeric features are cut into ``n_bins`` equal-width bins inside *public* bounds; categorical
features are coded by their position in a *declared* category list, plus one "other" code for
values outside it; a feature declared to have missing values gets one extra code (the last) for
them. The :class:`FeatureSpec` holding bounds, categories and bin counts is public: it must come
from the user, not the data. Taking it from the data is an explicit opt-in (``bounds="data"``)
that warns with :class:`DataDependentWarning` and is recorded as a non-private release in the
model's ledger. A pandas ``category`` dtype is not a declaration under DP (``astype("category")``
lists exactly the values present): its categories count as read off the data unless ``bounds``
declares them.

Values inside the declared domain never raise: by default (``on_out_of_bounds="clip"``) values
outside the bounds are clipped and unknown categories coded "other", with a warning that prints
no value (an exception, or a message, that depends on a record's value would leak it).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

MAX_CODES = 256
OUT_OF_BOUNDS = ("error", "clip")


class DataDependentWarning(UserWarning):
    """A public input (bounds, categories, classes) was taken from the private data."""


class OutOfBoundsWarning(UserWarning):
    """Values outside the declared bounds were clipped into them."""


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
    """Public description of the features: how raw values become codes.

    Attributes:
      names: column names.
      lower, upper: numeric bounds per feature (``nan`` for categorical features).
      categories: declared categories per feature (``None`` for numeric features); their codes
        are ``0..c-1`` and code ``c`` is "other" (a value outside the declared list).
      n_bins: equal-width bins of each numeric feature.
      missing: whether each feature has a code (its last) for missing values.
      from_data: names of features whose bounds or categories were taken from the data.
    """

    names: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    categories: tuple[tuple[Any, ...] | None, ...]
    n_bins: int
    missing: tuple[bool, ...]
    from_data: tuple[str, ...] = ()

    @property
    def n_features(self) -> int:
        return len(self.names)

    @property
    def n_values(self) -> np.ndarray:
        """Codes for non-missing values of each feature (int32 ``[n_features]``): the bins, or
        the categories and "other"."""
        counts = [
            len(cats) + 1 if cats is not None else (1 if lo == hi else self.n_bins)
            for cats, lo, hi in zip(self.categories, self.lower, self.upper, strict=True)
        ]
        return np.asarray(counts, np.int32)

    @property
    def n_codes(self) -> np.ndarray:
        """All codes of each feature, the missing code included (int32 ``[n_features]``)."""
        return self.n_values + np.asarray(self.missing, np.int32)

    @property
    def max_codes(self) -> int:
        """Static histogram width: the largest ``n_codes``."""
        return int(self.n_codes.max())

    def bin_edges(self, j: int) -> np.ndarray:
        """Inner bin edges of numeric feature ``j`` (code ``c`` means ``edges[c-1] <= x <
        edges[c]``)."""
        if self.categories[j] is not None:
            raise ValueError(f"feature {self.names[j]!r} is categorical: it has no bin edges")
        lo, hi = self.lower[j], self.upper[j]
        return np.linspace(lo, hi, self.n_bins + 1)[1:-1] if hi > lo else np.empty(0)


def as_frame(X: Any) -> pd.DataFrame:
    """``X`` as a DataFrame with string column names; rejects anything but a 2-D table."""
    if isinstance(X, pd.DataFrame):
        frame = X
    else:
        if isinstance(X, pd.Series):
            raise ValueError("X must be 2-D (n_samples, n_features); got a pandas Series")
        array = np.asarray(X)
        if array.ndim != 2:
            raise ValueError(
                f"X must be 2-D (n_samples, n_features); got a {array.ndim}-D array of shape "
                f"{array.shape}. Use X.reshape(-1, 1) for a single feature."
            )
        frame = pd.DataFrame(array, columns=[f"x{j}" for j in range(array.shape[1])])
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise ValueError(f"X must have at least one row and one column; got shape {frame.shape}")
    frame = frame.copy(deep=False)
    frame.columns = [str(c) for c in frame.columns]
    if len(set(frame.columns)) != frame.shape[1]:
        raise ValueError("X has duplicate column names")
    complex_columns = [c for c in frame.columns
                       if pd.api.types.is_complex_dtype(frame[c].dtype)]
    if complex_columns:
        raise ValueError(f"X has complex-valued columns {complex_columns[:5]}: features must be "
                         "real numbers, booleans or categories")
    return frame


def _is_categorical(column: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(
        column.dtype
    )


def _declared(bounds: Any, name: str, j: int) -> Any:
    """What ``bounds`` declares for column ``name`` (index ``j``), or ``None``."""
    if bounds is None or isinstance(bounds, str):
        return None
    if isinstance(bounds, Mapping):
        return bounds.get(name, bounds.get(j))
    lower, upper = bounds
    return (float(np.asarray(lower, float).reshape(-1)[j]),
            float(np.asarray(upper, float).reshape(-1)[j]))


def _check_bounds_arg(bounds: Any, n_features: int, names: Sequence[str]) -> None:
    if bounds is None or isinstance(bounds, Mapping):
        if isinstance(bounds, Mapping):
            unknown = [k for k in bounds if k not in names and not
                       (isinstance(k, int) and 0 <= k < n_features)]
            if unknown:
                raise ValueError(f"bounds name unknown columns {unknown}; X has {list(names)}")
        return
    if isinstance(bounds, str):
        if bounds != "data":
            raise ValueError(f"bounds must be (lower, upper), a dict, None or 'data'; "
                             f"got {bounds!r}")
        return
    if not (isinstance(bounds, Sequence) and len(bounds) == 2):
        raise ValueError("bounds must be a pair (lower, upper) of per-feature arrays, a dict "
                         "column -> (lo, hi) | category list, None or 'data'")
    for side in bounds:
        arr = np.asarray(side, float).reshape(-1)
        if arr.size not in (1, n_features):
            raise ValueError(f"bounds arrays must have one entry per feature ({n_features}); "
                             f"got {arr.size}")
    if np.asarray(bounds[0]).size == 1:
        raise ValueError("bounds=(lower, upper) needs per-feature arrays; use "
                         "([lo] * n_features, [hi] * n_features) for equal bounds")


def _missing_columns(missing: str | Sequence[str], names: Sequence[str]) -> set[str]:
    if isinstance(missing, str):
        if missing not in ("error", "code"):
            raise ValueError(f"missing must be 'error', 'code' or a list of columns; "
                             f"got {missing!r}")
        return set(names) if missing == "code" else set()
    unknown = [c for c in missing if c not in names]
    if unknown:
        raise ValueError(f"missing names unknown columns {unknown}")
    return set(missing)


def make_feature_spec(
    X: Any,
    bounds: Any = None,
    *,
    n_bins: int = 10,
    missing: str | Sequence[str] = "error",
    private: bool = True,
) -> FeatureSpec:
    """Build the public :class:`FeatureSpec` of ``X``.

    Args:
      X: 2-D table (DataFrame, numpy or JAX array). Only its column names and dtypes are read,
        unless bounds are taken from the data.
      bounds: public feature bounds: a pair ``(lower, upper)`` of per-feature arrays (as
        diffprivlib takes them); or a dict column -> ``(lo, hi)`` tuple for a numeric feature or
        a *list* of categories for a categorical one; or ``"data"`` to take every bound from the
        data (warns; not private). Pandas ``category`` columns use their dtype's categories and
        ``bool`` columns ``[False, True]`` unless the dict says otherwise. Under DP a
        ``category`` dtype's categories are *not* a declaration: undeclared, they count as read
        off the data (warned, not private).
      n_bins: equal-width bins per numeric feature, 1..255 (codes are uint8).
      missing: ``"error"`` (missing values are rejected), ``"code"`` (every feature gets a code
        for them) or a list of the columns that may be missing (a public declaration).
      private: with ``False`` (non-private fit) undeclared bounds are taken from the data
        without warning; with ``True`` they are an error.
    """
    frame = as_frame(X)
    names = tuple(frame.columns)
    if not 1 <= int(n_bins) <= MAX_CODES - 1:
        raise ValueError(f"n_bins must be in 1..{MAX_CODES - 1}, got {n_bins}")
    _check_bounds_arg(bounds, len(names), names)
    missing_cols = _missing_columns(missing, names)
    lower, upper, categories, from_data = [], [], [], []
    for j, name in enumerate(names):
        column = frame[name]
        declared = _declared(bounds, name, j)
        categorical = _is_categorical(column)
        if isinstance(declared, (list, np.ndarray, pd.Index)) or (
            categorical and declared is None
        ):
            cats = _categories(column, declared, bounds, private, name)
            if cats is None:
                cats = (tuple(column.dtype.categories)
                        if isinstance(column.dtype, pd.CategoricalDtype)
                        else tuple(sorted(pd.unique(column.dropna()), key=str)))
                from_data.append(name)
            lower.append(np.nan)
            upper.append(np.nan)
            categories.append(cats)
            continue
        if categorical:
            raise ValueError(f"column {name!r} is categorical: declare a list of categories, "
                             f"not {declared!r}")
        if declared is None:
            if bounds == "data" or not private:
                values = pd.to_numeric(column, errors="coerce").to_numpy(float)
                finite = values[np.isfinite(values)]
                if finite.size == 0:
                    raise ValueError(f"column {name!r} has no finite value to take bounds from")
                declared = (float(finite.min()), float(finite.max()))
                from_data.append(name)
            else:
                raise ValueError(
                    f"no public bounds for numeric column {name!r}. Feature bounds are public "
                    "inputs: pass bounds=(lower, upper) or bounds={column: (lo, hi)}, or "
                    "bounds='data' to take them from the data (NOT differentially private)."
                )
        lo, hi = (float(v) for v in declared)
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
            raise ValueError(f"bounds of column {name!r} must be finite with lo <= hi; "
                             f"got ({lo}, {hi})")
        lower.append(lo)
        upper.append(hi)
        categories.append(None)
    spec = FeatureSpec(names, tuple(lower), tuple(upper), tuple(categories), int(n_bins),
                       tuple(n in missing_cols for n in names), tuple(from_data))
    if spec.max_codes > MAX_CODES:
        too_many = [n for n, c in zip(names, spec.n_codes, strict=True) if c > MAX_CODES]
        raise ValueError(f"columns {too_many} need more than {MAX_CODES} codes (uint8)")
    if from_data and private:
        warnings.warn(
            f"bounds/categories of {len(from_data)} column(s) were taken from the training data "
            f"({', '.join(from_data[:5])}{', ...' if len(from_data) > 5 else ''}): the model is "
            "NOT differentially private. Declare them as public inputs instead.",
            DataDependentWarning,
            stacklevel=3,
        )
    return spec


def _categories(
    column: pd.Series, declared: Any, bounds: Any, private: bool, name: str
) -> tuple[Any, ...] | None:
    """Declared categories of a column, or ``None`` when they must come from the data."""
    if declared is not None:
        cats = tuple(declared)
    elif pd.api.types.is_bool_dtype(column.dtype):
        cats = (False, True)
    elif isinstance(column.dtype, pd.CategoricalDtype) and not private:
        cats = tuple(column.dtype.categories)
    elif isinstance(column.dtype, pd.CategoricalDtype) or bounds == "data" or not private:
        return None
    else:
        raise ValueError(
            f"no declared categories for categorical column {name!r}. Categories are public "
            f"inputs: pass bounds={{{name!r}: [...categories...]}}, or bounds='data' (NOT "
            "differentially private)."
        )
    if len(cats) == 0 or len(set(cats)) != len(cats):
        raise ValueError(f"categories of column {name!r} must be non-empty and distinct")
    return cats


def category_index(values: Any, categories: Sequence[Any]) -> np.ndarray:
    """Position of each value in ``categories`` (int64), ``-1`` for missing or unknown ones."""
    index = pd.Index(list(categories), dtype=object)
    return index.get_indexer(pd.Index(np.asarray(values, dtype=object))).astype(np.int64)


def encode(spec: FeatureSpec, X: Any, *, on_out_of_bounds: str = "clip") -> np.ndarray:
    """Codes ``uint8 [n_samples, n_features]`` of ``X`` under the public ``spec``.

    NaN is a missing value: it gets the feature's missing code if it has one, else an error (a
    schema error). Infinite values are always an error. With ``on_out_of_bounds="clip"``
    (default) numeric values outside the declared bounds are clipped into them and values
    outside a feature's declared categories get its "other" code, with an
    :class:`OutOfBoundsWarning`; with ``"error"`` they raise. Neither message prints a value.
    """
    if on_out_of_bounds not in OUT_OF_BOUNDS:
        raise ValueError(f"on_out_of_bounds must be one of {OUT_OF_BOUNDS}, "
                         f"got {on_out_of_bounds!r}")
    frame = _aligned(spec, X)
    codes = np.empty(frame.shape, np.uint8)
    n_values = spec.n_values
    for j, name in enumerate(spec.names):
        column = frame[name]
        missing_code = int(n_values[j]) if spec.missing[j] else None
        if spec.categories[j] is None:
            codes[:, j] = _encode_numeric(spec, j, column, missing_code, on_out_of_bounds)
        else:
            codes[:, j] = _encode_categorical(spec, j, column, missing_code, on_out_of_bounds)
    return codes


def _aligned(spec: FeatureSpec, X: Any) -> pd.DataFrame:
    frame = as_frame(X)
    if isinstance(X, pd.DataFrame):
        absent = [n for n in spec.names if n not in frame.columns]
        if absent:
            raise ValueError(f"X lacks the columns {absent} the model was fitted on")
        return frame[list(spec.names)]
    if frame.shape[1] != spec.n_features:
        raise ValueError(f"X has {frame.shape[1]} features, the model expects "
                         f"{spec.n_features}")
    frame.columns = list(spec.names)
    return frame


def _missing_error(name: str) -> ValueError:
    return ValueError(
        f"column {name!r} has missing (NaN) values. Drop or impute them, or declare "
        f"missing=[{name!r}] (or missing='code') to give missing values their own code."
    )


def _outside(name: str, what: str, policy: str, action: str) -> None:
    """Raise (``policy="error"``) or warn that column ``name`` has values outside its declared
    ``what``; no value or count is printed (they are the private data)."""
    message = f"column {name!r} has values outside its declared {what}"
    if policy == "error":
        raise ValueError(message + "; widen them, or pass on_out_of_bounds='clip' to clip")
    warnings.warn(f"{message}; {action}", OutOfBoundsWarning, stacklevel=5)


def _encode_numeric(
    spec: FeatureSpec, j: int, column: pd.Series, missing_code: int | None, policy: str
) -> np.ndarray:
    name, lo, hi = spec.names[j], spec.lower[j], spec.upper[j]
    try:
        values = column.to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError):
        raise ValueError(f"column {name!r} is declared numeric but holds non-numeric "
                         "values") from None
    nan = np.isnan(values)
    if np.isinf(values).any():
        raise ValueError(f"column {name!r} contains infinite values")
    if nan.any() and missing_code is None:
        raise _missing_error(name)
    if (~nan & ((values < lo) | (values > hi))).any():
        _outside(name, f"bounds [{lo:g}, {hi:g}]", policy, "clipped into the bounds")
    # Bin c holds edges[c-1] <= x < edges[c] (the last bin also holds hi), exactly as
    # FeatureSpec.bin_edges declares them.
    codes = np.searchsorted(spec.bin_edges(j), np.clip(values, lo, hi), side="right")
    if missing_code is not None:
        codes = np.where(nan, missing_code, codes)
    return codes.astype(np.uint8)


def _encode_categorical(
    spec: FeatureSpec, j: int, column: pd.Series, missing_code: int | None, policy: str
) -> np.ndarray:
    name, cats = spec.names[j], spec.categories[j]
    values = column.astype(object) if isinstance(column.dtype, pd.CategoricalDtype) else column
    nan = pd.isna(values).to_numpy()
    codes = category_index(values, cats)
    unknown = (codes < 0) & ~nan
    if nan.any() and missing_code is None:
        raise _missing_error(name)
    if unknown.any():
        _outside(name, "categories", policy, 'coded "other"')
    codes = np.where(unknown, len(cats), codes)          # the "other" code
    if missing_code is not None:
        codes = np.where(nan, missing_code, codes)
    return codes.astype(np.uint8)
