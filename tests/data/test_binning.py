"""Data layer: public binning of numeric, categorical and bool features."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpjax.data import (
    DataDependentWarning,
    FeatureSpec,
    encode,
    load_dataset,
    make_feature_spec,
    public_bounds,
)
from tests.helpers.data import spec_and_codes

# --------------------------------------------------------------------------------------------
# Numeric binning
# --------------------------------------------------------------------------------------------


def test_codes_are_uint8_with_one_column_per_feature():
    X = pd.DataFrame({"a": [0.0, 0.5, 1.0], "b": [10.0, 20.0, 15.0]})
    spec, codes = spec_and_codes(X, {"a": (0, 1), "b": (10, 20)})
    assert isinstance(spec, FeatureSpec)
    assert codes.dtype == np.uint8
    assert codes.shape == (3, 2)
    assert spec.names == ("a", "b")
    np.testing.assert_array_equal(spec.n_codes, [10, 10])
    assert spec.n_codes.dtype == np.int32


def test_equal_width_bins_nice_bounds():
    values = np.array([0.0, 0.99, 1.0, 4.5, 5.0, 9.0, 9.999, 10.0])
    X = pd.DataFrame({"x": values})
    spec, codes = spec_and_codes(X, {"x": (0.0, 10.0)}, n_bins=10)
    # lo -> 0, hi -> last bin, a value exactly at an inner edge opens the next bin
    np.testing.assert_array_equal(codes[:, 0], [0, 0, 1, 4, 5, 9, 9, 9])
    np.testing.assert_allclose(spec.bin_edges(0), np.arange(1.0, 10.0))
    X = pd.DataFrame({"x": [-2.0, -1.0, -0.5, 0.0, 2.0, 3.0]})
    _, codes = spec_and_codes(X, {"x": (-2.0, 3.0)}, n_bins=5)
    np.testing.assert_array_equal(codes[:, 0], [0, 1, 1, 2, 4, 4])


def test_bin_centres_get_their_bin():
    lo, hi, n_bins = -7.0421, 6.8248, 13
    width = (hi - lo) / n_bins
    centres = lo + width * (np.arange(n_bins) + 0.5)
    _, codes = spec_and_codes(pd.DataFrame({"x": centres}), {"x": (lo, hi)}, n_bins=n_bins)
    np.testing.assert_array_equal(codes[:, 0], np.arange(n_bins))


@pytest.mark.parametrize("dataset", ["banknote", "transfusion"])
def test_value_exactly_at_bin_edge_opens_its_bin(dataset):
    """FeatureSpec.bin_edges documents ``code c <=> edges[c-1] <= x < edges[c]``: a value equal
    to an edge that the spec itself reports must get the upper bin, lo code 0, hi the last."""
    X, _ = load_dataset(dataset)
    spec = make_feature_spec(X, public_bounds(dataset), n_bins=10)
    for j, name in enumerate(spec.names):
        edges = spec.bin_edges(j)
        values = np.r_[spec.lower[j], edges, spec.upper[j]]
        frame = pd.DataFrame({n: values if n == name else np.full(len(values), spec.lower[k])
                              for k, n in enumerate(spec.names)})
        codes = encode(spec, frame)[:, j]
        np.testing.assert_array_equal(codes, np.r_[0, np.arange(1, 10), 9], err_msg=name)


def test_degenerate_bounds_single_code():
    X = pd.DataFrame({"x": [3.0, 3.0]})
    spec, codes = spec_and_codes(X, {"x": (3.0, 3.0)})
    np.testing.assert_array_equal(spec.n_codes, [1])
    np.testing.assert_array_equal(codes[:, 0], [0, 0])


def test_n_bins_range():
    X = pd.DataFrame({"x": [0.0, 1.0]})
    spec, codes = spec_and_codes(X, {"x": (0, 1)}, n_bins=255)
    assert codes[1, 0] == 254
    for bad in (0, 256):
        with pytest.raises(ValueError, match="n_bins"):
            make_feature_spec(X, {"x": (0, 1)}, n_bins=bad)


def test_bad_bounds_values():
    X = pd.DataFrame({"x": [0.0, 1.0]})
    with pytest.raises(ValueError, match="'x'"):
        make_feature_spec(X, {"x": (2.0, 1.0)})
    with pytest.raises(ValueError, match="'x'"):
        make_feature_spec(X, {"x": (0.0, np.inf)})
    with pytest.raises(ValueError, match="unknown columns"):
        make_feature_spec(X, {"x": (0, 1), "nope": (0, 1)})
    with pytest.raises(ValueError, match="bounds"):
        make_feature_spec(X, "minmax")


# --------------------------------------------------------------------------------------------
# Categorical and bool features
# --------------------------------------------------------------------------------------------


def test_categorical_codes_from_category_dtype():
    """A category dtype's categories give the codes (plus one "other" code); without DP they
    are public, under DP they are not a declaration (``astype("category")`` lists exactly the
    values present): read off the data, with a warning."""
    X = pd.DataFrame({"c": pd.Categorical(["b", "a", "c", "b"], categories=["c", "b", "a"])})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        spec, codes = spec_and_codes(X, private=False)
    assert spec.categories == (("c", "b", "a"),)
    np.testing.assert_array_equal(codes[:, 0], [1, 2, 0, 1])
    np.testing.assert_array_equal(spec.n_values, [4])  # three categories and "other"
    np.testing.assert_array_equal(spec.n_codes, [4])
    assert spec.from_data == ()
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        private_spec, private_codes = spec_and_codes(X)
    assert private_spec.categories == (("c", "b", "a"),)
    assert private_spec.from_data == ("c",)
    np.testing.assert_array_equal(private_codes, codes)
    # declared through bounds, the same categories are public under DP
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        declared, _ = spec_and_codes(X, {"c": ["c", "b", "a"]})
    assert declared.from_data == ()


def test_categorical_codes_from_declared_list():
    X = pd.DataFrame({"s": ["x", "y", "z", "x"]})
    spec, codes = spec_and_codes(X, {"s": ["z", "y", "x", "w"]})
    np.testing.assert_array_equal(codes[:, 0], [2, 1, 0, 2])
    np.testing.assert_array_equal(spec.n_codes, [5])  # four categories and "other"
    # a declared list overrides the category dtype
    Xc = pd.DataFrame({"s": pd.Categorical(["x", "y"])})
    _, codes = spec_and_codes(Xc, {"s": ["y", "x"]})
    np.testing.assert_array_equal(codes[:, 0], [1, 0])


def test_undeclared_string_column_is_an_error_when_private():
    X = pd.DataFrame({"s": ["x", "y"]})
    with pytest.raises(ValueError, match="'s'"):
        make_feature_spec(X)
    spec = make_feature_spec(X, private=False)
    assert spec.categories == (("x", "y"),)
    assert spec.from_data == ("s",)


def test_categorical_column_rejects_numeric_bounds():
    X = pd.DataFrame({"s": ["x", "y"]})
    with pytest.raises(ValueError, match="categorical"):
        make_feature_spec(X, {"s": (0, 1)})


def test_bool_columns():
    X = pd.DataFrame({"f": [True, False, True], "g": np.array([False, False, True])})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)  # bool is a public domain
        spec, codes = spec_and_codes(X)
    assert spec.categories == ((False, True), (False, True))
    assert spec.from_data == ()
    np.testing.assert_array_equal(codes, [[1, 0], [0, 0], [1, 1]])
