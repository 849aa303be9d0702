"""Labels: declared classes -> class indices ``0..C-1`` (index 1 is the positive class of a
binary problem, so ``{-1, +1}`` in the papers is ``{0, 1}`` here).

The class list is public information, so under DP it never comes from the labels' values:
it is declared (``classes=``), or fixed by the labels' type (``(False, True)`` for booleans,
``(0, 1)`` for numbers). Reading the domain off the values would make it switch between
neighbouring datasets (a dataset of ones alone is ``(0, 1)``, add one ``-1`` and it would be
``(-1, 1)``). A training set in which a declared class never occurs is fine: its count is zero
(and noisy), it is not an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpjax.data.binning import DataDependentWarning, OutOfBoundsWarning, category_index
from dpjax.data.caller import warn

DEFAULT_NUMERIC_CLASSES = (0, 1)


def _as_1d(y: Any) -> np.ndarray:
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise ValueError(f"y must be 1-D; got a DataFrame with {y.shape[1]} columns")
        y = y.iloc[:, 0]
    values = y.to_numpy() if isinstance(y, pd.Series) else np.asarray(y)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise ValueError(f"y must be 1-D; got a {values.ndim}-D array")
    return values


def infer_classes(y: Any, private: bool = True) -> tuple[tuple[Any, ...], bool]:
    """Class list of ``y`` and whether it had to be read off the data.

    Under DP (``private``) only the labels' type decides: ``(False, True)`` for bool and
    ``(0, 1)`` for numeric labels (public domains, whatever the values); anything else is taken
    from the data (``True`` in the second slot: the caller must warn and mark the model not
    private). Without DP: a category dtype's categories, ``(0, 1)`` or ``(-1, 1)`` when the
    labels lie in one, else the sorted distinct labels.
    """
    values = _as_1d(y)
    if values.dtype == bool:
        return (False, True), False
    if private:
        if np.issubdtype(values.dtype, np.number):
            return DEFAULT_NUMERIC_CLASSES, False
        return tuple(sorted(pd.unique(values[~pd.isna(values)]).tolist(), key=str)), True
    if isinstance(y, pd.Series) and isinstance(y.dtype, pd.CategoricalDtype):
        return tuple(y.dtype.categories), False
    present = set(pd.unique(values[~pd.isna(values)]).tolist())
    for domain in (DEFAULT_NUMERIC_CLASSES, (-1, 1)):
        if present and present <= set(domain):
            return domain, False
    return tuple(sorted(present, key=str)), False


def encode_labels(
    y: Any, classes: Sequence[Any] | None = None, private: bool = True
) -> tuple[np.ndarray, tuple[Any, ...], bool]:
    """Validate ``y`` and map it to class indices.

    ``classes`` is the declared list, ``None`` (the public default of the labels' type, see
    :func:`infer_classes`: under DP, labels of another type, such as strings, are an error) or
    ``"data"``: the sorted distinct labels (warned and marked not private under DP, as
    diffprivlib does when classes are not given).

    Returns ``(y_index int32 [m], classes, classes_from_data)``. Raises ``ValueError`` for
    non-1-D or empty ``y``, missing labels, labels outside the (declared or default) classes and
    fewer than two declared classes; messages print no label value and no count of labels.
    Labels that cover only some of the classes (even one) are fine.
    """
    values = _as_1d(y)
    if len(values) == 0:
        raise ValueError("y is empty")
    if pd.isna(values).any():
        raise ValueError("y has missing labels")
    from_data = False
    declared = classes is not None and not isinstance(classes, str)
    if isinstance(classes, str):
        if classes != "data":
            raise ValueError(f"classes must be a list of labels, None or 'data'; got {classes!r}")
        present = pd.unique(values)
        classes = tuple(sorted(present.tolist(), key=lambda v: (str(type(v)), v)))
        from_data = private
    elif classes is None:
        classes, from_data = infer_classes(y, private)
        if from_data:       # the labels' type has no public domain: the same rule as numbers
            raise ValueError(
                "y holds labels that are not numbers or booleans and classes is not declared: "
                "declare classes=[...] (the public list of labels), or pass classes='data' to "
                "read them off y (the model is then not differentially private)")
    if from_data:
        warn(
            "the classes were read off the training labels, which is not "
            "differentially private; pass classes=[...] to declare them.",
            DataDependentWarning,
        )
    classes = check_classes(classes)
    index = category_index(values, classes)
    if (index < 0).any():
        source = "declared" if declared else "default"
        hint = "" if declared else (
            f"; numeric labels default to classes={list(DEFAULT_NUMERIC_CLASSES)}: declare "
            "classes=[...] (e.g. classes=[-1, 1]) for other label values")
        raise ValueError(f"y has labels outside the {source} classes {list(classes)}{hint}")
    return index.astype(np.int32), classes, from_data


def check_classes(classes: Sequence[Any]) -> tuple[Any, ...]:
    """``classes`` as a tuple of at least two distinct labels (``ValueError`` otherwise)."""
    classes = tuple(classes)
    distinct = len(set(classes))
    if distinct < 2 or distinct != len(classes):
        raise ValueError(f"classes must hold at least two distinct labels; got {distinct} "
                         f"class{'es' if distinct != 1 else ''}"
                         + (f" in {len(classes)} entries" if distinct != len(classes) else ""))
    return classes


def device_classes(classes: Sequence[Any] | None, private: bool) -> tuple[Any, ...] | None:
    """The classes of numeric labels held on a device (:mod:`dpjax.data.device`) when they
    are known without reading the labels: declared numbers, or under DP the numeric default
    :data:`DEFAULT_NUMERIC_CLASSES`; ``None`` where the labels must be read (a non-private
    fit's undeclared classes, ``classes="data"``, non-numeric classes): the host path."""
    if classes is None:
        return DEFAULT_NUMERIC_CLASSES if private else None
    if isinstance(classes, str) or not all(
            isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(
                c, (bool, np.bool_)) for c in classes):
        return None
    return check_classes(classes)


MAX_TARGET = 1e30
"""A regression target's declared range must lie within ``±MAX_TARGET`` (its predictions are
float32)."""
RESOLUTION = 1e-4
"""... and span at least this fraction of its magnitude (float32 resolves it)."""


def target_units(y: np.ndarray, y_bounds: tuple[float, float]) -> np.ndarray:
    """``z = (y − centre)/half`` in ``[−1, 1]`` (float32, computed in float64): a regression
    target in units of half its declared range, the scale the booster works in."""
    lo, hi = y_bounds
    z = (np.asarray(y, np.float64) - 0.5 * (lo + hi)) / (0.5 * (hi - lo))
    return np.clip(z, -1.0, 1.0).astype(np.float32)


def encode_targets(y: Any, y_bounds: Any, private: bool = True,
                   on_out_of_bounds: str = "clip") -> tuple[np.ndarray, tuple[float, float], bool]:
    """Validate a regression target and clip it into its public range.

    ``y_bounds`` is the declared ``(lo, hi)`` (finite, ``lo < hi``), or ``"data"`` / ``None``
    without DP: the target's own minimum and maximum (under DP ``None`` is an error and
    ``"data"`` is warned and marked not private, like bounds read off the data). Values
    outside the range are clipped into it with an :class:`~dpjax.data.OutOfBoundsWarning`
    (``on_out_of_bounds="clip"``) or refused (``"error"``, opt-in: not private); neither
    message prints a value.

    Returns ``(y float64 [m], (lo, hi), bounds_from_data)``. Raises ``ValueError`` for a
    non-1-D, empty, non-numeric or non-finite ``y`` and for invalid ``y_bounds``.
    """
    values = _as_1d(y)
    if len(values) == 0:
        raise ValueError("y is empty")
    if (values.dtype == bool or not np.issubdtype(values.dtype, np.number)
            or np.iscomplexobj(values)):
        raise ValueError("a regression target y must be real numbers")
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        raise ValueError("y has missing or infinite target values")
    from_data = False
    if y_bounds is None and private:
        raise ValueError("y_bounds=(lo, hi) is required for a private regression fit: the "
                         "target's public range sets the noise (or y_bounds='data', which is "
                         "not private)")
    if y_bounds is None or (isinstance(y_bounds, str) and y_bounds == "data"):
        lo, hi = float(values.min()), float(values.max())
        hi = hi if hi > lo else lo + 1.0
        from_data = private
        if from_data:
            warn("y_bounds were read off the training target, which is not "
                 "differentially private; pass y_bounds=(lo, hi) to declare them.",
                 DataDependentWarning)
    else:
        try:
            lo, hi = (float(b) for b in y_bounds)
        except (TypeError, ValueError):
            raise ValueError(f"y_bounds must be a (lo, hi) pair of numbers, 'data' or None; "
                             f"got {y_bounds!r}") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"y_bounds must be finite with lo < hi; got {y_bounds!r}")
        if max(abs(lo), abs(hi)) > MAX_TARGET or (hi - lo) < RESOLUTION * max(abs(lo), abs(hi)):
            raise ValueError(f"y_bounds must lie within ±{MAX_TARGET:g} and span at least "
                             f"{RESOLUTION:g} of their magnitude (float32 predictions); got "
                             f"{y_bounds!r}: rescale the target")
    if ((values < lo) | (values > hi)).any():
        if on_out_of_bounds == "error":
            raise ValueError("y has target values outside y_bounds; widen them, or pass "
                             "on_out_of_bounds='clip' to clip")
        warn("y has target values outside y_bounds; they are clipped into it",
             OutOfBoundsWarning)
    return np.clip(values, lo, hi), (lo, hi), from_data
