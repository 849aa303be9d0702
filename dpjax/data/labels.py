"""Labels: declared classes -> class indices ``0..C-1`` (index 1 is the positive class of a
binary problem, so ``{-1, +1}`` in the papers is ``{0, 1}`` here)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpjax.data.binning import DataDependentWarning, category_index

_STANDARD_BINARY = ((0, 1), (-1, 1), (False, True))


def _as_1d(y: Any) -> np.ndarray:
    if isinstance(y, pd.DataFrame):
        raise ValueError("y must be 1-D; got a DataFrame (pass a Series or array)")
    values = y.to_numpy() if isinstance(y, pd.Series) else np.asarray(y)
    if values.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {values.shape}")
    return values


def infer_classes(y: Any) -> tuple[tuple[Any, ...], bool]:
    """Class list of ``y`` and whether it had to be read off the data.

    Public sources first: a pandas ``category`` dtype's categories, ``(False, True)`` for bool,
    the standard binary domains ``(0, 1)`` and ``(-1, 1)`` when every label lies in one. Anything
    else is taken from the data (``True`` in the second slot: the caller must warn and mark it).
    """
    if isinstance(y, pd.Series) and isinstance(y.dtype, pd.CategoricalDtype):
        return tuple(y.dtype.categories), False
    values = _as_1d(y)
    if values.dtype == bool:
        return (False, True), False
    present = set(pd.unique(values[~pd.isna(values)]).tolist())
    for domain in _STANDARD_BINARY[:2]:
        if present and present <= set(domain):
            return domain, False
    return tuple(sorted(present, key=str)), True


def encode_labels(
    y: Any, classes: Sequence[Any] | None = None
) -> tuple[np.ndarray, tuple[Any, ...], bool]:
    """Validate ``y`` and map it to class indices.

    Returns ``(y_index int32 [m], classes, classes_from_data)``. Raises ``ValueError`` for
    non-1-D ``y``, missing labels, labels outside ``classes``, fewer than two declared classes
    and a ``y`` holding a single class.
    """
    values = _as_1d(y)
    if len(values) == 0:
        raise ValueError("y is empty")
    if pd.isna(values).any():
        raise ValueError(f"y has {int(pd.isna(values).sum())} missing label(s)")
    from_data = False
    if classes is None:
        classes, from_data = infer_classes(y)
        if from_data:
            warnings.warn(
                f"the classes {list(classes)} were read off the training labels, which is not "
                "differentially private; pass classes=[...] to declare them.",
                DataDependentWarning,
                stacklevel=3,
            )
    classes = tuple(classes)
    if len(classes) < 2 or len(set(classes)) != len(classes):
        raise ValueError(f"classes must hold at least two distinct labels; got {list(classes)}")
    index = category_index(values, classes)
    if (index < 0).any():
        unknown = sorted(set(pd.unique(values[index < 0]).tolist()), key=str)
        raise ValueError(f"y has labels {unknown[:10]} outside the declared classes "
                         f"{list(classes)}")
    if len(np.unique(index)) < 2:
        raise ValueError(f"y contains a single class ({values[0]!r}); a classifier needs at "
                         "least two")
    return index.astype(np.int32), classes, from_data
