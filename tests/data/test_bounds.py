"""Data layer: where the bounds come from (declared or read off the data) and their forms."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpjax.data import DataDependentWarning, encode, make_feature_spec
from tests.helpers.data import spec_and_codes

# --------------------------------------------------------------------------------------------
# Where bounds come from
# --------------------------------------------------------------------------------------------


def test_bounds_from_data_warns_and_lists_columns():
    X = pd.DataFrame({"a": [1.0, 3.0], "b": [0.0, 1.0], "s": ["u", "v"]})
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        spec = make_feature_spec(X, "data")
    assert spec.from_data == ("a", "b", "s")
    assert (spec.lower[0], spec.upper[0]) == (1.0, 3.0)
    # under DP a category dtype is no declaration (it counts as read off the data, with its
    # dtype's categories); a bool column's domain is public: not listed as data-dependent
    Xc = X.assign(s=pd.Categorical(["u", "v"], categories=["u", "v", "w"]), f=[True, False])
    with pytest.warns(DataDependentWarning, match="3 column"):
        spec = make_feature_spec(Xc, "data")
    assert spec.from_data == ("a", "b", "s")
    assert spec.categories[2] == ("u", "v", "w")
    assert spec.categories[3] == (False, True)


def test_non_private_spec_takes_bounds_from_data_silently():
    X = pd.DataFrame({"a": [1.0, 3.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = make_feature_spec(X, private=False)
    assert spec.from_data == ("a",)
    assert (spec.lower[0], spec.upper[0]) == (1.0, 3.0)


def test_private_without_bounds_for_numeric_column_is_an_error():
    X = pd.DataFrame({"a": [1.0, 3.0], "b": [0.0, 1.0]})
    with pytest.raises(ValueError, match="no public bounds for numeric column 'b'"):
        make_feature_spec(X, {"a": (0, 5)})
    with pytest.raises(ValueError, match="no public bounds"):
        make_feature_spec(X)


def test_bounds_as_tuple_of_arrays():
    X = np.array([[0.0, 10.0], [1.0, 20.0], [0.5, 15.0]])
    spec, codes = spec_and_codes(X, (np.array([0.0, 10.0]), np.array([1.0, 20.0])), n_bins=4)
    assert spec.names == ("x0", "x1")
    assert spec.lower == (0.0, 10.0)
    assert spec.upper == (1.0, 20.0)
    np.testing.assert_array_equal(codes, [[0, 0], [3, 3], [2, 2]])
    spec_list, _ = spec_and_codes(X, ([0.0, 10.0], [1.0, 20.0]), n_bins=4)
    assert spec_list == spec
    # scalars hold for every feature (diffprivlib's convention)
    scalar = make_feature_spec(X, (0.0, 20.0))
    assert scalar.lower == (0.0, 0.0) and scalar.upper == (20.0, 20.0)
    assert make_feature_spec(X, ([0.0], 20.0)) == scalar
    with pytest.raises(ValueError, match="one entry per feature"):
        make_feature_spec(X, ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]))


def test_bounds_as_dict_with_tuples_and_category_lists():
    X = pd.DataFrame({"age": [20.0, 60.0], "colour": ["red", "blue"],
                      "size": pd.Categorical(["S", "L"], categories=["S", "M", "L"])})
    bounds = {"age": (0, 100), "colour": ["blue", "green", "red"], "size": ["S", "M", "L"]}
    spec, codes = spec_and_codes(X, bounds, n_bins=5)
    assert spec.categories == (None, ("blue", "green", "red"), ("S", "M", "L"))
    np.testing.assert_array_equal(codes, [[1, 2, 0], [3, 0, 2]])
    assert spec.from_data == ()
    # integer keys address columns by position
    spec_pos = make_feature_spec(X, {0: (0, 100), "colour": ["blue", "green", "red"],
                                     "size": ["S", "M", "L"]}, n_bins=5)
    assert spec_pos == spec
    # the category dtype left undeclared: same codes, but read off the data under DP
    with pytest.warns(DataDependentWarning, match="size"):
        undeclared = make_feature_spec(X, {"age": (0, 100), "colour": ["blue", "green", "red"]},
                                       n_bins=5)
    assert undeclared.from_data == ("size",)
    np.testing.assert_array_equal(encode(undeclared, X), codes)


def test_one_dimensional_X_is_rejected():
    with pytest.raises(ValueError, match="2-D"):
        make_feature_spec(np.arange(5.0), (np.zeros(1), np.ones(1)))
    with pytest.raises(ValueError, match="2-D"):
        make_feature_spec(pd.Series([1.0, 2.0]))
    with pytest.raises(ValueError, match="at least one row"):
        make_feature_spec(np.zeros((0, 2)))
