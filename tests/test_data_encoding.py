"""Data layer: encoding missing values, infinities, out-of-bounds values and unknown
categories."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers_data import spec_and_codes

from dpjax.data import OutOfBoundsWarning, encode, make_feature_spec

# --------------------------------------------------------------------------------------------
# Missing values, inf, out of bounds, unknown categories
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["code", ["num", "cat"]])
def test_missing_values_get_their_own_last_code(missing):
    X = pd.DataFrame({
        "num": [0.0, np.nan, 10.0, 5.0],
        "cat": pd.Categorical(["b", "a", None, "c"], categories=["a", "b", "c"]),
    })
    spec, codes = spec_and_codes(X, {"num": (0, 10), "cat": ["a", "b", "c"]}, missing=missing)
    assert spec.missing == (True, True)
    np.testing.assert_array_equal(spec.n_values, [10, 4])  # categories + "other"
    np.testing.assert_array_equal(spec.n_codes, [11, 5])
    np.testing.assert_array_equal(codes[:, 0], [0, 10, 9, 5])
    np.testing.assert_array_equal(codes[:, 1], [1, 0, 4, 2])  # missing: the last code


def test_missing_declared_for_some_columns_only():
    X = pd.DataFrame({"a": [0.0, np.nan], "b": [1.0, 2.0]})
    spec, codes = spec_and_codes(X, {"a": (0, 1), "b": (0, 2)}, missing=["a"])
    assert spec.missing == (True, False)
    np.testing.assert_array_equal(spec.n_codes, [11, 10])
    np.testing.assert_array_equal(codes[:, 0], [0, 10])
    with pytest.raises(ValueError, match="unknown columns"):
        make_feature_spec(X, {"a": (0, 1), "b": (0, 2)}, missing=["zz"])
    with pytest.raises(ValueError, match="missing"):
        make_feature_spec(X, {"a": (0, 1), "b": (0, 2)}, missing="drop")


@pytest.mark.parametrize("column", ["num", "cat"])
def test_undeclared_nan_is_an_error_naming_the_column(column):
    X = pd.DataFrame({
        "num": [0.0, 1.0, 2.0],
        "cat": pd.Categorical(["a", "b", "a"], categories=["a", "b"]),
    })
    X.loc[1, column] = np.nan
    spec = make_feature_spec(X, {"num": (0, 2), "cat": ["a", "b"]})
    with pytest.raises(ValueError, match=f"'{column}'.*missing") as error:
        encode(spec, X)
    assert not any(ch.isdigit() for ch in str(error.value).split(".")[0])  # no count


def test_inf_is_an_error():
    for value in (np.inf, -np.inf):
        X = pd.DataFrame({"x": [0.0, value]})
        spec = make_feature_spec(X, {"x": (0, 1)}, missing="code")
        with pytest.raises(ValueError, match="'x'.*infinite"):
            encode(spec, X)
        with pytest.raises(ValueError, match="infinite"):
            encode(spec, X, on_out_of_bounds="clip")


def test_out_of_bounds_error_and_clip():
    """Clipping (with a warning) is the default; ``"error"`` raises. Neither message prints a
    value or a count (they are the private data)."""
    X = pd.DataFrame({"x": [-1.0, 0.5, 3.0]})
    spec = make_feature_spec(X, {"x": (0.0, 1.0)})
    with pytest.raises(ValueError, match="'x'.*outside its declared bounds") as error:
        encode(spec, X, on_out_of_bounds="error")
    with pytest.warns(OutOfBoundsWarning, match="'x'.*outside its declared bounds") as warned:
        codes = encode(spec, X)
    np.testing.assert_array_equal(codes[:, 0], [0, 5, 9])
    with pytest.warns(OutOfBoundsWarning, match="'x'"):
        np.testing.assert_array_equal(encode(spec, X, on_out_of_bounds="clip"), codes)
    for message in (str(error.value), str(warned[0].message)):
        assert "column 'x' has values outside its declared bounds [0, 1]" in message
        for leaked in ("-1", "3", "2 value"):
            assert leaked not in message, message
    with pytest.raises(ValueError, match="on_out_of_bounds"):
        encode(spec, X, on_out_of_bounds="ignore")


def test_unknown_category_handling():
    """An unknown category gets the feature's "other" code (after the declared ones) with a
    warning by default, or raises with ``"error"``; neither message prints the value."""
    X = pd.DataFrame({"s": ["x", "y", "q"]})
    spec = make_feature_spec(X, {"s": ["x", "y"]})
    np.testing.assert_array_equal(spec.n_codes, [3])
    with pytest.raises(ValueError, match="'s'.*outside its declared categories") as error:
        encode(spec, X, on_out_of_bounds="error")
    assert "'q'" not in str(error.value)
    with pytest.warns(OutOfBoundsWarning, match="'s'.*outside its declared categories") as warned:
        codes = encode(spec, X)
    assert "'q'" not in str(warned[0].message)
    np.testing.assert_array_equal(codes[:, 0], [0, 1, 2])
    # with a missing code too: "other" is code 2, missing (NaN) the last code 3
    spec = make_feature_spec(X, {"s": ["x", "y"]}, missing=["s"])
    np.testing.assert_array_equal(spec.n_codes, [4])
    with pytest.warns(OutOfBoundsWarning, match="'s'"):
        codes = encode(spec, pd.DataFrame({"s": ["x", "y", "q", None]}),
                       on_out_of_bounds="clip")
    np.testing.assert_array_equal(codes[:, 0], [0, 1, 2, 3])


def test_encode_checks_columns():
    X = pd.DataFrame({"a": [0.0], "b": [1.0]})
    spec = make_feature_spec(X, {"a": (0, 1), "b": (0, 1)})
    with pytest.raises(ValueError, match="lacks the columns"):
        encode(spec, pd.DataFrame({"a": [0.0]}))
    with pytest.raises(ValueError, match="features"):
        encode(spec, np.zeros((2, 3)))
    # numpy input is matched by position
    np.testing.assert_array_equal(encode(spec, np.array([[1.0, 0.0]])), [[9, 0]])
