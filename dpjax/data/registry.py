"""Dataset registry: the papers' tabular datasets, with labels binarised as the datasets'
manifest says (1 = positive class, 0 = the rest).

Three small UCI datasets (banknote, breastwisc, transfusion; CC BY 4.0) ship inside the
package. The others are read from ``data_dir``, or the directory named by the ``DPJAX_DATA``
environment variable, holding ``<name>.csv.gz`` files (gzipped CSV, the label last).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

EMBEDDED = ("banknote", "breastwisc", "transfusion")


def _equals(value: str) -> Callable[[pd.Series], np.ndarray]:
    return lambda label: (label == value).to_numpy()


def _at_least(threshold: float) -> Callable[[pd.Series], np.ndarray]:
    return lambda label: (pd.to_numeric(label) >= threshold).to_numpy()


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """A registered dataset: its file stem, how its label is binarised, and where it is from."""

    name: str
    positive: Callable[[pd.Series], np.ndarray]
    binarise: str
    source: str = "UCI Machine Learning Repository (CC BY 4.0)"


_INFOS = [
    DatasetInfo("abalone", _at_least(9), "rings >= 9 (median)"),
    DatasetInfo("adult_a9a_train", _equals("1"), "+1 = >50K (LIBSVM a9a)"),
    DatasetInfo("adult_a9a_test", _equals("1"), "+1 = >50K (LIBSVM a9a.t)"),
    DatasetInfo("adult_bin_ly", _equals("1"), "1 = >50K"),
    DatasetInfo("adult_train", _equals(">50K"), ">50K"),
    DatasetInfo("adult_test", _equals(">50K"), ">50K"),
    DatasetInfo("banknote", _equals("1"), "class 1"),
    DatasetInfo("breastwisc", _equals("4"), "4 = malignant"),
    DatasetInfo("cardiotocography", _equals("1"), "NSP = 1 (normal, majority) vs rest"),
    DatasetInfo("cardiotocography_full", _equals("1"), "NSP = 1 (normal, majority) vs rest"),
    DatasetInfo("codrna", _equals("1"), "+1 (LIBSVM cod-rna)", "LIBSVM cod-rna"),
    DatasetInfo("compas", _equals("1"), "two_year_recid = 1", "ProPublica COMPAS"),
    DatasetInfo("compas_bin_ly", _equals("1"), "recidivated within two years",
                "ProPublica COMPAS"),
    DatasetInfo("creditcardsmall", _equals("1"), "1 = default next month"),
    DatasetInfo("firmteacher", _equals("0010"), "majority code 0010 vs rest"),
    DatasetInfo("german", _equals("1"), "1 = good credit"),
    DatasetInfo("german_bin_dl85", _equals("1"), "1 = good credit"),
    DatasetInfo("hill_nonoise", _equals("1"), "1 = hill"),
    DatasetInfo("ionosphere", _equals("g"), "g = good radar return"),
    # c-CS-m and c-SC-m tie at 150 rows; the tie goes to the first in sorted order.
    DatasetInfo("mice", _equals("c-CS-m"), "majority class c-CS-m (tie with c-SC-m broken "
                "alphabetically) vs rest"),
    DatasetInfo("mammographic", _equals("1"), "1 = malignant"),
    DatasetInfo("mushroom", _equals("p"), "p = poisonous"),
    DatasetInfo("qsar", _equals("RB"), "RB = ready biodegradable"),
    DatasetInfo("sonar", _equals("M"), "M = mine"),
    DatasetInfo("transfusion", _equals("1"), "1 = donated"),
    DatasetInfo("vote", _equals("democrat"), "democrat"),
    DatasetInfo("winered", _at_least(6), "quality >= 6 (median)"),
    DatasetInfo("winewhite", _at_least(6), "quality >= 6 (median)"),
    DatasetInfo("yeast", _equals("CYT"), "majority CYT vs rest"),
]
DATASETS: dict[str, DatasetInfo] = {info.name: info for info in _INFOS}


def list_datasets(data_dir: str | os.PathLike | None = None, *, known: bool = False) -> list[str]:
    """The datasets :func:`load_dataset` can load now: those shipped with the package and those
    whose file is in ``data_dir`` (else ``$DPJAX_DATA``). ``known=True``: every registered
    name, loadable or not."""
    if known:
        return sorted(DATASETS)
    directory = data_dir if data_dir is not None else os.environ.get("DPJAX_DATA")
    present = {name for name in DATASETS if directory is not None
               and (Path(directory) / f"{name}.csv.gz").exists()}
    return sorted(present | set(EMBEDDED))


def dataset_path(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Path of ``<name>.csv.gz``: ``data_dir``, else ``$DPJAX_DATA``, else the package."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(list_datasets(known=True))}")
    directory = data_dir if data_dir is not None else os.environ.get("DPJAX_DATA")
    if directory is not None:
        path = Path(directory) / f"{name}.csv.gz"
        if path.exists() or name not in EMBEDDED:
            if not path.exists():
                raise FileNotFoundError(f"dataset file {path} not found")
            return path
    if name in EMBEDDED:
        return Path(str(resources.files("dpjax.data") / "embedded" / f"{name}.csv.gz"))
    raise FileNotFoundError(
        f"dataset {name!r} is not shipped with dpjax: pass data_dir=... or set DPJAX_DATA to a "
        f"directory holding {name}.csv.gz (shipped: {', '.join(EMBEDDED)})"
    )


def load_dataset(
    name: str, data_dir: str | os.PathLike | None = None
) -> tuple[pd.DataFrame, np.ndarray]:
    """Load a registered dataset as ``(X, y)``.

    ``X`` is a DataFrame: numeric columns as float64 (missing values NaN), text columns as
    pandas ``category`` whose categories are every value of the published file (the dataset's
    public schema). ``y`` is int32 in {0, 1}, 1 the positive class of
    ``DATASETS[name].binarise``.
    """
    info = DATASETS.get(name)
    if info is None:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(list_datasets(known=True))}")
    frame = pd.read_csv(dataset_path(name, data_dir), dtype={"label": str},
                        keep_default_na=False, na_values=[""])
    label = frame.pop("label").str.strip()
    columns = {}
    for column in frame.columns:
        values = frame[column]
        if pd.api.types.is_numeric_dtype(values.dtype):
            columns[column] = values.astype(float)
        else:
            values = values.astype(object).where(values.notna(), None)
            cats = sorted({v for v in values if v is not None})
            columns[column] = pd.Categorical(values, categories=cats)
    X = pd.DataFrame(columns, index=frame.index)
    return X, info.positive(label).astype(np.int32)


def _registered_frame(name: str, data_dir: str | os.PathLike | None) -> pd.DataFrame:
    if not isinstance(name, str):
        raise TypeError(
            "public_bounds / missing_columns take the name of a registered dataset (its schema "
            f"is read from the full published file), not {type(name).__name__}: bounds computed "
            "from private data are not public. Declare your own bounds, or pass bounds='data' "
            "to take them from the data (the model is then marked NOT differentially private).")
    return load_dataset(name, data_dir)[0]


def public_bounds(
    name: str, data_dir: str | os.PathLike | None = None
) -> dict[str, tuple[float, float] | list]:
    """Bounds of a registered public benchmark: ``(min, max)`` of every numeric column and the
    category list of every categorical one, over the *full published file*.

    This is the papers' convention for experiments on public benchmark data (the file's ranges
    stand in for the attribute domains). It is read off data (the whole file, training rows
    included), so it is a simulation convention, not a source of bounds for private data:
    declare those from domain knowledge. Only registered datasets are accepted.
    """
    frame = _registered_frame(name, data_dir)
    bounds: dict[str, tuple[float, float] | list] = {}
    for column in frame.columns:
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            bounds[column] = list(values.dtype.categories)
        else:
            bounds[column] = (float(values.min()), float(values.max()))
    return bounds


def missing_columns(name: str, data_dir: str | os.PathLike | None = None) -> list[str]:
    """Columns of a registered dataset's full published file that have missing values (its
    schema; pass it as ``missing=``)."""
    frame = _registered_frame(name, data_dir)
    return [c for c in frame.columns if frame[c].isna().any()]
