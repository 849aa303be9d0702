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
import functools
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from dpjax.data.caller import warn

MAX_CODES = 256
OUT_OF_BOUNDS = ("error", "clip")


class DataDependentWarning(UserWarning):
    """A public input (bounds, categories, classes) was taken from the private data."""


class OutOfBoundsWarning(UserWarning):
    """Values outside the declared bounds were clipped into them."""


class ImplausibleBoundsWarning(UserWarning):
    """Privately released bounds came out implausibly wide (``bounds="private"`` on too few
    rows for its budget)."""


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
      released: names of features whose bounds were released privately (``bounds="private"``:
        a tenth of the values lie outside them by design, so values outside are clipped
        without a warning, at the fit and at prediction).
    """

    names: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    categories: tuple[tuple[Any, ...] | None, ...]
    n_bins: int
    missing: tuple[bool, ...]
    from_data: tuple[str, ...] = ()
    released: tuple[str, ...] = ()

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
    def n_ordered(self) -> np.ndarray:
        """Ordered codes of each feature (int32 ``[n_features]``): a numeric feature's
        ``n_bins`` equal-width bins (codes ``0..n_bins-1``, in order of value); 0 for
        categorical and constant features."""
        counts = [0 if cats is not None or lo == hi else self.n_bins
                  for cats, lo, hi in zip(self.categories, self.lower, self.upper, strict=True)]
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
        return _inner_edges(lo, hi, self.n_bins).copy() if hi > lo else np.empty(0)


@functools.lru_cache(maxsize=4096)
def _inner_edges(lo: float, hi: float, n_bins: int) -> np.ndarray:
    """``np.linspace(lo, hi, n_bins + 1)[1:-1]``, the inner bin edges of bounds ``lo < hi``
    (cached, read-only: features and fits share bounds)."""
    edges = np.linspace(lo, hi, n_bins + 1)[1:-1]
    edges.flags.writeable = False
    return edges


def _as_array(X: Any) -> np.ndarray:
    """A non-pandas ``X`` as a 2-D numpy array (no copy when it is one); a scipy sparse matrix
    (a one-hot encoder's output, say) is made dense: its implicit entries are zeros, not
    missing values, and the fit reads dense codes anyway."""
    if isinstance(X, pd.Series):
        raise ValueError("X must be 2-D (n_samples, n_features); got a pandas Series")
    sparse = sys.modules.get("scipy.sparse")      # a sparse matrix means scipy is loaded
    if sparse is not None and sparse.issparse(X):
        X = X.toarray()
    array = np.asarray(X)
    if array.ndim != 2:
        raise ValueError(
            f"X must be 2-D (n_samples, n_features); got a {array.ndim}-D array. Use "
            "X.reshape(-1, 1) for a single feature."
        )
    return array


def _check_not_empty(shape: tuple[int, ...]) -> None:
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError("X must have at least one row and one column")


def as_frame(X: Any) -> pd.DataFrame:
    """``X`` as a DataFrame with string column names; rejects anything but a 2-D table."""
    if isinstance(X, pd.DataFrame):
        frame = X
    else:
        array = _as_array(X)
        frame = pd.DataFrame(array, columns=list(array_names(array.shape[1])))
    _check_not_empty(frame.shape)
    frame = frame.copy(deep=False)
    frame.columns = [str(c) for c in frame.columns]
    if len(set(frame.columns)) != frame.shape[1]:
        raise ValueError("X has duplicate column names")
    complex_columns = [c for c, dtype in zip(frame.columns, frame.dtypes, strict=True)
                       if pd.api.types.is_complex_dtype(dtype)]
    if complex_columns:
        raise ValueError(f"X has complex-valued columns {complex_columns[:5]}: features must be "
                         "real numbers, booleans or categories")
    return frame


EXACT_INTEGERS = frozenset({"int8", "uint8", "int16", "uint16"})
"""Integer dtypes whose every value float32 holds exactly (a device table's, binned as float32
on its device); wider integers take the host path."""


def on_device(X: Any) -> bool:
    """Whether ``X`` is a *device table*: a 2-D ``jax.Array`` of floats or of
    :data:`EXACT_INTEGERS`, whose numeric features are binned on its device
    (:mod:`dpjax.data.device`; booleans are categories, coded on the host)."""
    return _device_array(X) and X.ndim == 2 and device_dtype(X.dtype)


def device_dtype(dtype: Any) -> bool:
    """Whether values of ``dtype`` are binned on their device: floats and
    :data:`EXACT_INTEGERS`."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype.name in EXACT_INTEGERS or (
        dtype.kind == "V" and dtype.name == "bfloat16")


def _device_array(X: Any) -> bool:
    """Whether ``X`` is a ``jax.Array`` (JAX not imported: it cannot be one)."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(X, jax.Array)


def as_table(X: Any) -> np.ndarray | pd.DataFrame:
    """``X`` checked as :func:`as_frame` checks it: a 2-D numpy array of integers or floats
    (columns ``x0, x1, ...``, not copied) when ``X`` is a numeric array-like, a device table
    (:func:`on_device`) as it is, else the DataFrame of :func:`as_frame`."""
    if isinstance(X, pd.DataFrame):
        return as_frame(X)
    if on_device(X):
        _check_not_empty(X.shape)
        return X
    array = _as_array(X)
    if array.dtype.kind not in "iuf":
        return as_frame(array)
    _check_not_empty(array.shape)
    return array


def array_names(n: int) -> tuple[str, ...]:
    """The column names of an array's ``n`` columns: ``x0, x1, ...``."""
    return tuple(f"x{j}" for j in range(n))


def _names(table: np.ndarray | pd.DataFrame) -> tuple[str, ...]:
    """Column names of an :func:`as_table` table."""
    if isinstance(table, pd.DataFrame):
        return tuple(table.columns)
    return array_names(table.shape[1])


def _column(table: np.ndarray | pd.DataFrame, j: int) -> pd.Series:
    """Column ``j`` of an :func:`as_table` table (of a device table: copied to the host, as
    float32 or wider)."""
    if isinstance(table, pd.DataFrame):
        return table.iloc[:, j]
    if on_device(table):
        column = table[:, j]
        return pd.Series(np.asarray(column, np.result_type(np.float32, column.dtype)
                                    if column.dtype.kind != "V" else np.float32))
    return pd.Series(table[:, j])


def is_categorical(dtype: Any) -> bool:
    """Whether a column of ``dtype`` is coded by categories (non-numeric, or boolean)."""
    return not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


def _declarations(bounds: Any, names: Sequence[str]) -> list[Any]:
    """What ``bounds`` declares for each column (by name, else by index), or ``None``."""
    if bounds is None or isinstance(bounds, str):
        return [None] * len(names)
    if isinstance(bounds, Mapping):
        return [bounds.get(name, bounds.get(j)) for j, name in enumerate(names)]
    lower, upper = (np.broadcast_to(np.asarray(side, float).reshape(-1), len(names)).tolist()
                    for side in bounds)
    return list(zip(lower, upper, strict=True))


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
            raise ValueError(f"bounds must be (lower, upper), a dict, None, 'data' or "
                             f"'private' (dpjax.fit only); got {bounds!r}")
        return
    if not (isinstance(bounds, Sequence) and len(bounds) == 2):
        raise ValueError("bounds must be a pair (lower, upper) of per-feature arrays, a dict "
                         "column -> (lo, hi) | category list, None or 'data'")
    for side in bounds:
        arr = np.asarray(side, float).reshape(-1)
        if arr.size not in (1, n_features):
            raise ValueError(f"bounds arrays must have one entry per feature ({n_features}); "
                             f"got {arr.size}")



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
    released: Sequence[str] = (),
) -> FeatureSpec:
    """Build the public :class:`FeatureSpec` of ``X``.

    Args:
      X: 2-D table (DataFrame, numpy or JAX array). Only its column names and dtypes are read,
        unless bounds are taken from the data.
      bounds: public feature bounds: a pair ``(lower, upper)`` of per-feature arrays or of
        scalars that hold for every feature (as diffprivlib takes them); or a dict column ->
        ``(lo, hi)`` tuple for a numeric feature or a *list* of categories for a categorical
        one; or ``"data"`` to take every bound from the data (warns; not private). Pandas
        ``category`` columns use their dtype's categories and ``bool`` columns ``[False,
        True]`` unless the dict says otherwise. Under DP a ``category`` dtype's categories are
        *not* a declaration: undeclared, they count as read off the data (warned, not
        private).
      n_bins: equal-width bins per numeric feature, 1..255 (codes are uint8).
      missing: ``"error"`` (missing values are rejected), ``"code"`` (every feature gets a code
        for them) or a list of the columns that may be missing (a public declaration).
      private: with ``False`` (non-private fit) undeclared bounds are taken from the data
        without warning; with ``True`` they are an error.
      released: the columns whose bounds (in ``bounds``) were released privately
        (:attr:`FeatureSpec.released`: values outside them clipped without a warning).
    """
    table = as_table(X)
    names = _names(table)
    if not 1 <= int(n_bins) <= MAX_CODES - 1:
        raise ValueError(f"n_bins must be in 1..{MAX_CODES - 1}, got {n_bins}")
    _check_bounds_arg(bounds, len(names), names)
    missing_cols = _missing_columns(missing, names)
    dtypes = (list(table.dtypes) if isinstance(table, pd.DataFrame)
              else [np.dtype(np.float32) if on_device(table) else table.dtype] * len(names))
    categorical_dtypes = {dtype: is_categorical(dtype) for dtype in set(dtypes)}
    lower, upper, categories, from_data = [], [], [], []
    for j, (name, dtype, declared) in enumerate(
            zip(names, dtypes, _declarations(bounds, names), strict=True)):
        categorical = categorical_dtypes[dtype]
        if isinstance(declared, (list, np.ndarray, pd.Index)) or (
            categorical and declared is None
        ):
            cats = _categories(dtype, declared, bounds, private, name)
            if cats is None:
                cats = (tuple(dtype.categories) if isinstance(dtype, pd.CategoricalDtype)
                        else tuple(sorted(pd.unique(_column(table, j).dropna()), key=str)))
                from_data.append(name)
            lower.append(np.nan)
            upper.append(np.nan)
            categories.append(cats)
            continue
        if categorical:
            if (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
                    ) and not isinstance(dtype, pd.CategoricalDtype):
                # text cells in a column declared numeric (pandas typed it object on one stray
                # "?", or it is a text column): name the fixes, never a cell or their number
                raise ValueError(
                    f"column {name!r} is declared numeric (bounds {declared!r}) but is typed as "
                    f"text (object/string dtype). If it is numeric, convert it, e.g. X[{name!r}] = "
                    f"pd.to_numeric(X[{name!r}], errors='coerce') to make them missing, and "
                    f"pass missing=[{name!r}] (or missing='code'); if it is categorical, "
                    f"declare its categories: bounds={{{name!r}: [...categories...]}}")
            raise ValueError(f"column {name!r} is categorical: declare a list of categories, "
                             f"not {declared!r}")
        if declared is None:
            if bounds == "data" or not private:
                values = pd.to_numeric(_column(table, j), errors="coerce").to_numpy(float)
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
                       tuple(n in missing_cols for n in names), tuple(from_data),
                       tuple(released))
    if spec.max_codes > MAX_CODES:
        too_many = [n for n, c in zip(names, spec.n_codes, strict=True) if c > MAX_CODES]
        raise ValueError(f"columns {too_many} need more than {MAX_CODES} codes (uint8)")
    if from_data and private:
        warn(
            f"bounds/categories of {len(from_data)} column(s) were taken from the training data "
            f"({', '.join(from_data[:5])}{', ...' if len(from_data) > 5 else ''}): the model is "
            "NOT differentially private. Declare them as public inputs instead.",
            DataDependentWarning,
        )
    return spec


def _categories(
    dtype: Any, declared: Any, bounds: Any, private: bool, name: str
) -> tuple[Any, ...] | None:
    """Declared categories of a column of ``dtype``, or ``None`` when they must come from the
    data."""
    if declared is not None:
        cats = tuple(declared)
    elif pd.api.types.is_bool_dtype(dtype):
        cats = (False, True)
    elif isinstance(dtype, pd.CategoricalDtype) and not private:
        cats = tuple(dtype.categories)
    elif isinstance(dtype, pd.CategoricalDtype) or bounds == "data" or not private:
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
    array, cats = np.asarray(values), np.asarray(list(categories))
    integers = (array.dtype.kind in "iu" and cats.dtype.kind in "iu"
                and np.can_cast(array.dtype, np.int64) and np.can_cast(cats.dtype, np.int64))
    if cats.size and (integers or array.dtype.kind == cats.dtype.kind == "b"):
        # integers (or booleans) on both sides: a sorted lookup, exact
        order = np.argsort(cats, kind="stable")
        at = np.minimum(np.searchsorted(cats[order], array), len(cats) - 1)
        return np.where(cats[order][at] == array, order[at], -1).astype(np.int64)
    index = pd.Index(list(categories), dtype=object)
    return index.get_indexer(pd.Index(np.asarray(values, dtype=object))).astype(np.int64)


def check_on_out_of_bounds(on_out_of_bounds: str) -> None:
    """Refuse an ``on_out_of_bounds`` other than ``"clip"`` or ``"error"``."""
    if on_out_of_bounds not in OUT_OF_BOUNDS:
        raise ValueError(f"on_out_of_bounds must be one of {OUT_OF_BOUNDS}, "
                         f"got {on_out_of_bounds!r}")


def encode(spec: FeatureSpec, X: Any, *, on_out_of_bounds: str = "clip") -> np.ndarray:
    """Codes ``uint8 [n_samples, n_features]`` of ``X`` under the public ``spec``.

    NaN is a missing value: it gets the feature's missing code if it has one, else an error (a
    schema error). Infinite values are always an error. With ``on_out_of_bounds="clip"``
    (default) numeric values outside the declared bounds are clipped into them and values
    outside a feature's declared categories get its "other" code, with an
    :class:`OutOfBoundsWarning`; with ``"error"`` they raise. Neither message prints a value.
    Errors and warnings come column by column, in column order. Numeric features are binned
    all at once (:func:`_bin_numeric`).
    """
    check_on_out_of_bounds(on_out_of_bounds)
    table = _aligned(spec, X)
    missing_codes = [int(v) if m else None
                     for v, m in zip(spec.n_values, spec.missing, strict=True)]
    numeric = [j for j, cats in enumerate(spec.categories) if cats is None]
    values = _numeric_values(table, numeric)
    converted = numeric[:values.shape[1]]
    binned = _bin_numeric(spec, converted, values, [missing_codes[j] for j in converted])
    if len(converted) == spec.n_features:
        codes = binned.codes
    else:
        codes = np.empty(table.shape, np.uint8)
        codes[:, converted] = binned.codes
    flags = zip(binned.infinite.tolist(), binned.nan.tolist(), binned.outside.tolist(),
                strict=True)
    for j, name in enumerate(spec.names):
        if spec.categories[j] is not None:
            codes[:, j] = _encode_categorical(spec, j, _column(table, j), missing_codes[j],
                                              on_out_of_bounds)
            continue
        flag = next(flags, None)
        if flag is None:
            raise ValueError(f"column {name!r} is declared numeric but holds non-numeric "
                             "values")
        _check_numeric(spec, j, *flag, missing_codes[j], on_out_of_bounds)
    return codes


def _aligned(spec: FeatureSpec, X: Any) -> np.ndarray | pd.DataFrame:
    """``X`` as an :func:`as_table` table with the spec's columns in its order: a DataFrame's
    columns by name (columns the model was not fitted on are left out, with a warning that
    names them: the label, say), an array's by position, and a DataFrame's by position too
    when the model was fitted on an array (its columns named ``x0, x1, ...``) and none of the
    DataFrame's names is one of those (warned, as scikit-learn warns)."""
    table = as_table(X)
    if isinstance(X, pd.DataFrame):
        absent = [n for n in spec.names if n not in table.columns]
        if (absent and spec.names == array_names(spec.n_features)
                and not set(table.columns) & set(spec.names)):
            if table.shape[1] != spec.n_features:
                raise ValueError(f"X has {table.shape[1]} columns, the model (fitted on an "
                                 f"array) expects {spec.n_features}")
            warn("X has column names, but the model was fitted on an array: its "
                 "columns are taken by position", UserWarning)
            return table.set_axis(list(spec.names), axis=1)
        if absent:
            raise ValueError(f"X lacks the columns {absent[:5]} the model was fitted on")
        extra = [str(c) for c in table.columns if c not in spec.names]
        if extra:
            warn(f"X has column(s) {extra[:5]} the model was not fitted on: left out",
                 UserWarning)
        return table[list(spec.names)]
    if table.shape[1] != spec.n_features:
        raise ValueError(f"X has {table.shape[1]} features, the model expects "
                         f"{spec.n_features}")
    return table


def _numeric_values(table: np.ndarray | pd.DataFrame, numeric: list[int]) -> np.ndarray:
    """The numeric columns ``numeric`` of ``table`` as one 2-D array of numbers (the array
    itself, or float64), up to the first column that does not hold numbers."""
    if isinstance(table, np.ndarray):
        return table if len(numeric) == table.shape[1] else table[:, numeric]
    frame = table.iloc[:, numeric]
    if all(isinstance(dtype, np.dtype) and dtype.kind in "biuf" for dtype in frame.dtypes):
        return frame.to_numpy(dtype=np.float64)
    values = np.empty(frame.shape)
    for i in range(frame.shape[1]):
        try:
            values[:, i] = frame.iloc[:, i].to_numpy(dtype=float, na_value=np.nan)
        except (TypeError, ValueError):
            return values[:, :i]
    return values


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
    warn(f"{message}; {action}", OutOfBoundsWarning)


def _check_numeric(spec: FeatureSpec, j: int, infinite: bool, nan: bool, outside: bool,
                   missing_code: int | None, policy: str) -> None:
    """Raise for infinite values and for undeclared missing ones of numeric feature ``j``, then
    raise or warn (``policy``) if it has values outside its bounds."""
    name, lo, hi = spec.names[j], spec.lower[j], spec.upper[j]
    if infinite:
        raise ValueError(f"column {name!r} contains infinite values")
    if nan and missing_code is None:
        raise _missing_error(name)
    if outside and (policy == "error" or name not in spec.released):
        _outside(name, f"bounds [{lo:g}, {hi:g}]", policy, "clipped into the bounds")


class _Binned(NamedTuple):
    """Codes of numeric features and, per feature, whether it holds infinite values, NaN and
    values outside its bounds (NaN aside)."""

    codes: np.ndarray
    infinite: np.ndarray
    nan: np.ndarray
    outside: np.ndarray


CHUNK = 1 << 16
"""Values binned per numpy call in :func:`_bin_numeric`: blocks that stay in the CPU cache
between its passes."""
FOLD = 256
"""Row width (in values) of the column extrema's reductions: a narrow table is folded to it."""
_UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2


def _bin_numeric(spec: FeatureSpec, features: list[int], values: np.ndarray,
                 missing_codes: list[int | None]) -> _Binned:
    """Codes of the numeric ``features`` (``values[:, i]`` holds feature ``features[i]``): the
    bin ``searchsorted(spec.bin_edges(j), clip(x, lo, hi), side="right")`` of each value,
    missing codes for NaN; and the features' :class:`_Binned` flags.

    One pass over cache-sized blocks of the table, in its memory order (the codes take the
    same order): the extrema of every column (they give the flags) and, for every feature that
    :func:`_regular` admits, the bin of each value from arithmetic (:func:`_bin_chunk`; two
    bins: one comparison with the edge). Other features (constant ones, pathological bounds)
    and columns holding NaN are then done column by column.
    """
    n, m = values.shape
    if m == 0:
        return _Binned(np.empty((n, 0), np.uint8), *np.zeros((3, 0), bool))
    lo = np.asarray([spec.lower[j] for j in features], np.float64)
    hi = np.asarray([spec.upper[j] for j in features], np.float64)
    n_bins = spec.n_bins
    with np.errstate(over="ignore"):
        step = (hi - lo) / n_bins            # np.linspace's step
    single = ~(hi > lo) | (n_bins == 1)      # one code: 0
    regular = _regular(lo, hi, step, n_bins)
    lo_r, step_r = np.where(regular, lo, 0.0), np.where(regular, step, 1.0)
    # lower bound, 1 / step, step, and the one edge of two bins in the values' dtype
    params = (lo_r, 1 / step_r, step_r, _ceil_to(lo_r + step_r, values.dtype))
    by_column = values.flags.f_contiguous and not values.flags.c_contiguous
    codes = np.empty((n, m), np.uint8, order="F" if by_column else "C")
    if by_column:   # blocks of whole columns (or of column pieces), parameters per column
        rows, fold = min(n, CHUNK), 1
        width = max(1, CHUNK // rows)
        chunks = [(slice(j, j + width), values.T[j:j + width, s:s + rows],
                   codes.T[j:j + width, s:s + rows], tuple(p[j:j + width, None] for p in params))
                  for j in range(0, m, width) for s in range(0, n, rows)]
    else:           # blocks of rows, parameters tiled to a block
        fold = -(-FOLD // m)
        rows = min(max(1, CHUNK // m // fold) * fold, n)
        tiles = tuple(np.tile(p, (rows, 1)) for p in params)
        chunks = [(slice(None), values[s:s + rows], codes[s:s + rows],
                   tuple(t[:n - s] for t in tiles)) for s in range(0, n, rows)]
    work = (*np.empty((3, chunks[0][1].size)), np.empty(chunks[0][1].size, bool))
    low, high = np.full(m, np.inf), np.full(m, -np.inf)
    with np.errstate(invalid="ignore", over="ignore"):   # NaN and inf are flagged, not binned
        for columns, block, out, block_params in chunks:
            block_low, block_high = _extrema(block, int(by_column), fold)
            np.minimum(low[columns], block_low, out=low[columns])    # NaN propagates
            np.maximum(high[columns], block_high, out=high[columns])
            if n_bins == 2:
                np.greater_equal(block, block_params[3], out=out.view(bool))
            elif regular.any():
                _bin_chunk(block, out, *block_params[:3], n_bins,
                           *(w[:block.size].reshape(block.shape) for w in work))
    nan = np.isnan(low) | np.isnan(high)
    infinite = (low == -np.inf) | (high == np.inf)
    slack = _bound_slack(lo, hi)
    outside = (low < lo - slack) | (high > hi + slack)
    codes[:, single] = 0
    for i in np.flatnonzero(nan | ~(regular | single)).tolist():
        column = values[:, i].astype(np.float64)
        if not (regular[i] or single[i]):
            edges = spec.bin_edges(features[i])
            codes[:, i] = np.searchsorted(edges, np.clip(column, lo[i], hi[i]), side="right")
        if nan[i]:
            missing = np.isnan(column)
            present = column[~missing]
            infinite[i] = np.isinf(present).any()
            outside[i] = ((present < lo[i] - slack[i]) | (present > hi[i] + slack[i])).any()
            if missing_codes[i] is not None:
                codes[missing, i] = missing_codes[i]
    return _Binned(codes, infinite, nan, outside)


BOUND_SLACK = 2.0**-20
"""Values within ``BOUND_SLACK`` of a bound's magnitude (or of the range) outside it count as
inside: float round-off (a scaler's ``1.0000000000000002``, a float32 copy of a float64
bound) gets the edge bin without a warning."""


def _bound_slack(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How far outside ``[lo, hi]`` a value may lie and still count as inside
    (:data:`BOUND_SLACK`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return BOUND_SLACK * np.maximum.reduce([np.abs(lo), np.abs(hi), hi - lo])


def _bin_chunk(block: np.ndarray, out: np.ndarray, lo: np.ndarray, inverse: np.ndarray,
               step: np.ndarray, n_bins: int, x: np.ndarray, q: np.ndarray, edge: np.ndarray,
               below: np.ndarray) -> None:
    """Write into ``out`` the bins of ``block``'s values, ``n_bins >= 3`` bins per feature from
    ``lo`` by ``step`` (``inverse = 1 / step``), all arrays broadcasting to ``block``; ``x``,
    ``q``, ``edge`` (float64) and ``below`` (bool) are work arrays of its shape.

    The candidate ``c = clip(rint((x - lo) * inverse), 1, n_bins - 1)`` is the true bin ``t``
    or ``t + 1`` (:func:`_regular`), so ``t = c - (x < edge_c)`` with ``edge_c = c * step +
    lo``, computed as ``np.linspace`` computes its edges.
    """
    if block.dtype != np.float64:
        np.copyto(x, block, casting="unsafe")
        block = x
    np.subtract(block, lo, out=q)
    np.multiply(q, inverse, out=q)
    np.rint(q, out=q)
    np.clip(q, 1, n_bins - 1, out=q)
    np.multiply(q, step, out=edge)
    np.add(edge, lo, out=edge)
    np.copyto(out, q, casting="unsafe")
    np.less(block, edge, out=below)
    np.subtract(out, below.view(np.uint8), out=out)


def _regular(lo: np.ndarray, hi: np.ndarray, step: np.ndarray, n_bins: int) -> np.ndarray:
    """Which features :func:`_bin_chunk` bins by arithmetic: ``n_bins > 1``, a normal, finite
    ``step``; rounding errors below half a bin (in bins, the edges' are at most ``u * (2 *
    n_bins + |lo| / step)`` and the candidate's ``3.3 * u * n_bins``, ``u`` the unit roundoff;
    so the candidate is the bin or the next one up); and ``k * step + lo`` reproducing
    ``np.linspace``'s edges bit for bit."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        regular = ((n_bins > 1) & (step >= np.finfo(np.float64).tiny) & np.isfinite(step)
                   & (_UNIT_ROUNDOFF * (8 * n_bins + np.abs(lo) / step) < 0.25))
    if regular.any():
        formula = np.arange(1, n_bins, dtype=np.float64) * step[regular, None] + lo[regular, None]
        edges = np.stack([_inner_edges(a, b, n_bins)
                          for a, b in zip(lo[regular].tolist(), hi[regular].tolist(),
                                          strict=True)])
        regular[regular] = (formula == edges).all(1)
    return regular


def _ceil_to(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The least number of the float ``dtype`` at or above each float64 value, so that
    ``x >= values`` iff ``x >= _ceil_to(values, x.dtype)`` for every ``x`` of that dtype
    (``values`` itself for float64 and non-float dtypes, which compare as float64)."""
    if dtype.kind != "f" or dtype == np.float64:
        return values
    with np.errstate(over="ignore"):
        rounded = values.astype(dtype)
    return np.where(rounded < values, np.nextafter(rounded, np.inf), rounded)


def _extrema(block: np.ndarray, axis: int, fold: int) -> tuple[np.ndarray, np.ndarray]:
    """Minima and maxima of ``block`` along ``axis`` (NaN where a line holds NaN); a
    C-contiguous ``block`` reduced along axis 0 is first folded to rows of ``fold`` times its
    width when ``fold`` divides its row count (narrow rows reduce slowly)."""
    rows, m = block.shape
    if axis == 0 and fold > 1 and rows % fold == 0 and block.flags.c_contiguous:
        wide = block.reshape(rows // fold, fold * m)
        return wide.min(0).reshape(fold, m).min(0), wide.max(0).reshape(fold, m).max(0)
    return block.min(axis), block.max(axis)


def _encode_categorical(
    spec: FeatureSpec, j: int, column: pd.Series, missing_code: int | None, policy: str
) -> np.ndarray:
    name, cats = spec.names[j], spec.categories[j]
    # one hashing pass: each distinct value looked up once (missing values: -1)
    factor, distinct = pd.factorize(column, use_na_sentinel=True)
    nan = factor < 0
    lookup = category_index(np.asarray(distinct, dtype=object)
                            if isinstance(column.dtype, pd.CategoricalDtype) else distinct, cats)
    codes = np.where(nan, -1, lookup[np.maximum(factor, 0)] if lookup.size else -1)
    unknown = (codes < 0) & ~nan
    if nan.any() and missing_code is None:
        raise _missing_error(name)
    if unknown.any():
        _outside(name, "categories", policy, 'coded "other"')
    codes = np.where(unknown, len(cats), codes)          # the "other" code
    if missing_code is not None:
        codes = np.where(nan, missing_code, codes)
    return codes.astype(np.uint8)
