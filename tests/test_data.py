"""Data layer: public binning, label encoding, the dataset registry and splits."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATASETS

import dpjax
from dpjax.data import (
    DataDependentWarning,
    FeatureSpec,
    OutOfBoundsWarning,
    encode,
    encode_labels,
    infer_classes,
    load_dataset,
    make_feature_spec,
    missing_columns,
    public_bounds,
)
from dpjax.data.splits import stratified_folds, stratified_split


def spec_and_codes(X, bounds=None, **kwargs):
    spec = make_feature_spec(X, bounds, **{k: v for k, v in kwargs.items()
                                           if k in ("n_bins", "missing", "private")})
    codes = encode(spec, X, **{k: v for k, v in kwargs.items() if k == "on_out_of_bounds"})
    return spec, codes


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
    with pytest.raises(ValueError, match="per-feature"):
        make_feature_spec(X, (0.0, 1.0))
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
    with pytest.warns(DataDependentWarning, match="classes"):
        _, classes, from_data = encode_labels(categorical)
    assert from_data is True
    assert infer_classes(categorical)[1] is True


def test_classes_inferred_from_data_warn():
    y = np.array(["b", "a", "c", "a"])
    with pytest.warns(DataDependentWarning, match="classes"):
        y_index, classes, from_data = encode_labels(y)
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


# --------------------------------------------------------------------------------------------
# Splits
# --------------------------------------------------------------------------------------------


def _labels():
    return np.repeat([0, 1, 2], [101, 57, 12])


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.5])
def test_stratified_split(fraction):
    y = _labels()
    train, test = stratified_split(y, fraction, seed=3)
    assert len(np.intersect1d(train, test)) == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(len(y)))
    assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
    for label, n_c in zip(*np.unique(y, return_counts=True), strict=True):
        assert int(np.sum(y[test] == label)) == int(round(fraction * n_c))
    again = stratified_split(y, fraction, seed=3)
    np.testing.assert_array_equal(again[1], test)
    other = stratified_split(y, fraction, seed=4)
    assert not np.array_equal(other[1], test)


def test_stratified_split_rejects_fraction():
    for bad in (0.0, 1.0, -0.2, 1.5):
        with pytest.raises(ValueError, match="test_fraction"):
            stratified_split(_labels(), bad, seed=0)


@pytest.mark.parametrize("n_folds", [2, 5, 10])
def test_stratified_folds(n_folds):
    y = _labels()
    folds = stratified_folds(y, n_folds, seed=1)
    assert len(folds) == n_folds
    joined = np.concatenate(folds)
    np.testing.assert_array_equal(np.sort(joined), np.arange(len(y)))  # disjoint and covering
    sizes = np.array([len(f) for f in folds])
    assert sizes.max() - sizes.min() <= 1
    for label in np.unique(y):
        per_fold = np.array([np.sum(y[f] == label) for f in folds])
        assert per_fold.max() - per_fold.min() <= 1
    again = stratified_folds(y, n_folds, seed=1)
    for a, b in zip(folds, again, strict=True):
        np.testing.assert_array_equal(a, b)
