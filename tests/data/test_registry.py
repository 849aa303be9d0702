"""Data layer: the dataset registry (embedded and shared datasets, public schemas)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data import encode, load_dataset, make_feature_spec, missing_columns, public_bounds
from tests.conftest import SHARED_DATASETS

# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "shape", "positives"), [
    ("banknote", (1372, 4), 610),
    ("breastwisc", (699, 9), 241),
    ("transfusion", (748, 4), 178),
])
def test_embedded_datasets(name, shape, positives, monkeypatch):
    monkeypatch.delenv("DPJAX_DATA", raising=False)
    X, y = load_dataset(name)
    assert name in dpjax.data.EMBEDDED
    assert isinstance(X, pd.DataFrame)
    assert X.shape == shape
    assert y.shape == (shape[0],)
    assert y.dtype == np.int32
    assert set(np.unique(y)) == {0, 1}
    assert int(y.sum()) == positives
    assert all(X[c].dtype == np.float64 for c in X.columns)
    bounds = public_bounds(name)
    assert set(bounds) == set(X.columns)
    for column, (lo, hi) in bounds.items():
        assert lo == X[column].min()
        assert hi == X[column].max()


def test_breastwisc_missing_column_and_fit_spec(monkeypatch):
    monkeypatch.delenv("DPJAX_DATA", raising=False)
    X, _ = load_dataset("breastwisc")
    assert missing_columns("breastwisc") == ["bare_nuclei"]
    assert int(X["bare_nuclei"].isna().sum()) == 16
    spec = make_feature_spec(X, public_bounds("breastwisc"),
                             missing=missing_columns("breastwisc"))
    codes = encode(spec, X)
    j = spec.names.index("bare_nuclei")
    assert int((codes[:, j] == spec.n_values[j]).sum()) == 16


def test_schema_helpers_take_a_registered_name_not_data(monkeypatch):
    """Bounds computed from a (possibly private) frame are not public: the schema helpers only
    take the name of a registered dataset, whose full published file they read."""
    monkeypatch.delenv("DPJAX_DATA", raising=False)
    X, _ = load_dataset("banknote")
    for helper in (public_bounds, missing_columns):
        with pytest.raises(TypeError, match="registered dataset"):
            helper(X)
    # the schema is the full file's, whatever subset one trains on
    assert public_bounds("banknote") == {c: (X[c].min(), X[c].max()) for c in X.columns}
    assert missing_columns("banknote") == []


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("no_such_dataset")
    with pytest.raises(ValueError, match="unknown dataset"):
        dpjax.data.dataset_path("no_such_dataset")
    assert "banknote" in dpjax.list_datasets()


def test_list_datasets_lists_what_loads(monkeypatch, tmp_path):
    """The shipped datasets, plus those whose file is in the data directory; ``known=True``
    lists every registered name."""
    monkeypatch.delenv("DPJAX_DATA", raising=False)
    shipped = dpjax.list_datasets()
    assert shipped == sorted(dpjax.data.registry.EMBEDDED)
    for name in shipped:
        load_dataset(name)
    (tmp_path / "vote.csv.gz").write_bytes(b"")
    assert dpjax.list_datasets(tmp_path) == sorted([*shipped, "vote"])
    monkeypatch.setenv("DPJAX_DATA", str(tmp_path))
    assert "vote" in dpjax.list_datasets()
    assert set(dpjax.list_datasets(known=True)) > set(dpjax.list_datasets())


def test_non_embedded_dataset_needs_a_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("DPJAX_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="data_dir"):
        load_dataset("vote")
    with pytest.raises(FileNotFoundError):
        load_dataset("vote", data_dir=tmp_path)


needs_shared = pytest.mark.skipif(not SHARED_DATASETS.is_dir(),
                                  reason=f"{SHARED_DATASETS} not present")


@needs_shared
@pytest.mark.parametrize(("name", "shape", "positives", "categorical", "missing"), [
    ("vote", (435, 16), 267, 16, 0),
    ("mammographic", (961, 5), 445, 0, 5),
    ("ionosphere", (351, 34), 225, 0, 0),
    ("sonar", (208, 60), 111, 0, 0),
    ("mushroom", (8124, 22), 3916, 22, 1),
    ("transfusion", (748, 4), 178, 0, 0),
])
def test_shared_datasets(name, shape, positives, categorical, missing):
    X, y = load_dataset(name, data_dir=SHARED_DATASETS)
    assert X.shape == shape
    assert y.dtype == np.int32
    assert set(np.unique(y)) == {0, 1}
    assert int(y.sum()) == positives
    n_cat = sum(isinstance(X[c].dtype, pd.CategoricalDtype) for c in X.columns)
    assert n_cat == categorical
    assert len(missing_columns(name, data_dir=SHARED_DATASETS)) == missing
    spec = make_feature_spec(X, public_bounds(name, data_dir=SHARED_DATASETS),
                             missing=missing_columns(name, data_dir=SHARED_DATASETS))
    codes = encode(spec, X)
    assert codes.shape == shape
    assert np.all(codes < spec.n_codes[None, :])


@needs_shared
def test_shared_dir_copy_equals_embedded(monkeypatch):
    monkeypatch.delenv("DPJAX_DATA", raising=False)
    X_emb, y_emb = load_dataset("banknote")
    X_dir, y_dir = load_dataset("banknote", data_dir=SHARED_DATASETS)
    pd.testing.assert_frame_equal(X_emb, X_dir)
    np.testing.assert_array_equal(y_emb, y_dir)
