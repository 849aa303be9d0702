"""Data layer: label encoding and the class list."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpjax.data import DataDependentWarning, encode_labels, infer_classes

# --------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("y", "classes", "index"), [
    (np.array([0, 1, 1, 0]), (0, 1), [0, 1, 1, 0]),
    (np.array([1, 1, 0]), (0, 1), [1, 1, 0]),
    (np.array([1, 1, 1]), (0, 1), [1, 1, 1]),       # the domain, not the values present
    (np.array([1.0, 0.0]), (0, 1), [1, 0]),
    (np.array([True, False, True]), (False, True), [1, 0, 1]),
    (np.array([True, True]), (False, True), [1, 1]),
])
def test_public_class_inference(y, classes, index):
    """Under DP the class list comes from the labels' type alone: ``(0, 1)`` for numbers,
    ``(False, True)`` for booleans."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        y_index, got, from_data = encode_labels(y)
    assert got == classes
    assert from_data is False
    assert y_index.dtype == np.int32
    np.testing.assert_array_equal(y_index, index)
    assert infer_classes(y) == (classes, False)
    assert encode_labels(y, private=True)[1] == classes


@pytest.mark.parametrize(("y", "classes", "index"), [
    (np.array([0, 1, 1, 0]), (0, 1), [0, 1, 1, 0]),
    (np.array([-1, 1, 1]), (-1, 1), [0, 1, 1]),
    (np.array([3, 1, 2, 1]), (1, 2, 3), [2, 0, 1, 0]),
    (pd.Series(pd.Categorical(["u", "v", "u"], categories=["v", "u", "w"])), ("v", "u", "w"),
     [1, 0, 1]),
])
def test_non_private_class_inference(y, classes, index):
    """Without DP the classes are inferred as before (a category dtype's categories, the
    standard binary domains, else the sorted labels), silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        y_index, got, from_data = encode_labels(y, private=False)
    assert got == classes
    assert from_data is False
    np.testing.assert_array_equal(y_index, index)
    assert infer_classes(y, private=False) == (classes, False)


def test_private_labels_outside_the_default_classes_raise_or_must_be_declared():
    """Under DP numeric labels outside the default ``(0, 1)`` are an error (the domain may not
    be read off the values); declaring the classes fixes it. A category dtype is no
    declaration: its categories are read off the data (warned)."""
    for y in (np.array([-1, 1, 1]), np.array([0, 1, 2])):
        with pytest.raises(ValueError, match="outside the default classes") as error:
            encode_labels(y)
        assert "classes=" in str(error.value)
    y_index, classes, from_data = encode_labels(np.array([-1, 1, 1]), classes=[-1, 1])
    assert classes == (-1, 1) and from_data is False
    np.testing.assert_array_equal(y_index, [0, 1, 1])
    categorical = pd.Series(pd.Categorical(["u", "v", "u"], categories=["v", "u", "w"]))
    with pytest.raises(ValueError, match="not declared"):
        encode_labels(categorical)
    with pytest.warns(DataDependentWarning, match="classes"):
        _, classes, from_data = encode_labels(categorical, classes="data")
    assert from_data is True
    assert infer_classes(categorical)[1] is True


def test_classes_inferred_from_data_warn():
    """Labels of a type without a public domain (strings) must be declared under DP, or read
    off the data when asked (``classes="data"``: warned)."""
    y = np.array(["b", "a", "c", "a"])
    with pytest.raises(ValueError, match="classes='data'"):
        encode_labels(y)
    with pytest.warns(DataDependentWarning, match="classes"):
        y_index, classes, from_data = encode_labels(y, classes="data")
    assert classes == ("a", "b", "c")
    assert from_data is True
    np.testing.assert_array_equal(y_index, [1, 0, 2, 0])
    y_index, classes, from_data = encode_labels(y, classes=["c", "b", "a"])
    assert from_data is False
    np.testing.assert_array_equal(y_index, [1, 2, 0, 2])


def test_encode_labels_errors():
    with pytest.raises(ValueError, match="outside the declared classes") as error:
        encode_labels(np.array([1, 2, 3]), classes=[1, 2])
    assert "[3]" not in str(error.value)  # the offending label is not printed
    # a single class in y is no error: the declared (or default) classes stand
    y_index, classes, _ = encode_labels(np.array([1, 1, 1]))
    assert classes == (0, 1)
    np.testing.assert_array_equal(y_index, [1, 1, 1])
    y_index, classes, _ = encode_labels(np.array(["a", "a"]), classes=["a", "b"])
    assert classes == ("a", "b")
    np.testing.assert_array_equal(y_index, [0, 0])
    with pytest.raises(ValueError, match="at least two"):
        encode_labels(np.array(["a", "a"]), classes=["a"])
    with pytest.raises(ValueError, match="missing label"):
        encode_labels(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="missing label"):
        encode_labels(pd.Series(["a", None, "b"]), classes=["a", "b"])
    with pytest.raises(ValueError, match="1-D"):
        encode_labels(np.array([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match="1-D"):
        encode_labels(pd.DataFrame({"y": [0, 1], "z": [1, 0]}))
    # a one-column frame (or column vector) is a 1-D y
    np.testing.assert_array_equal(encode_labels(pd.DataFrame({"y": [0, 1]}))[0], [0, 1])
    np.testing.assert_array_equal(encode_labels(np.array([[1], [0]]))[0], [1, 0])
    with pytest.raises(ValueError, match="empty"):
        encode_labels(np.array([], dtype=int))
