"""Transformers that read nothing off the data (``dpjax.sklearn``'s ``DPMinMaxScaler`` and
``DPOneHotEncoder``): their fitted state is the same on any data, pipelines with them learn,
they pass scikit-learn's estimator checks, and their messages show no row count and no
value of the data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
import sklearn
from sklearn.base import clone
from sklearn.compose import make_column_transformer
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpjax.sklearn import DPBoostedTreesClassifier, DPMinMaxScaler, DPOneHotEncoder
from dpjax.sklearn_preprocessing import EXPECTED_FAILED_CHECKS, expected_failed_checks

SKLEARN_1_6 = tuple(int(p) for p in sklearn.__version__.split(".")[:2]) >= (1, 6)
ROWS = 37                    # a row count no message may show
SECRET = "s3cr3t-value"      # a private value no message may show


def test_scaler_uses_the_declared_bounds_whatever_the_data():
    a = DPMinMaxScaler(bounds=([0.0, -10.0], [100.0, 10.0])).fit(np.zeros((3, 2)))
    b = DPMinMaxScaler(bounds=([0.0, -10.0], [100.0, 10.0])).fit(np.full((50, 2), 7.0))
    X = np.array([[50.0, 0.0], [150.0, -20.0], [np.nan, 5.0]])
    for scaler in (a, b):
        out = scaler.transform(X)
        np.testing.assert_allclose(out[0], [0.5, 0.5])
        np.testing.assert_allclose(out[1], [1.0, 0.0])        # clipped, no warning
        assert np.isnan(out[2, 0]) and out[2, 1] == pytest.approx(0.75)
    wide = DPMinMaxScaler(bounds=(0, 10), feature_range=(-1, 1)).fit(np.zeros((1, 1)))
    np.testing.assert_allclose(wide.transform([[5.0]]), [[0.0]])


@pytest.mark.parametrize(("bounds", "message"), [
    (None, "needs bounds"), ("data", "needs bounds"), ((1.0, 1.0), "lower < upper")])
def test_scaler_refuses_bounds_that_are_not_declared(bounds, message):
    with pytest.raises(ValueError, match=message):
        DPMinMaxScaler(bounds=bounds).fit(np.zeros((2, 1)))


def test_encoder_uses_the_declared_categories_and_zeros_unknown_values():
    encoder = DPOneHotEncoder(categories=[["red", "green"], [1, 2, 3]], sparse_output=False)
    fitted = encoder.fit(np.array([["blue", 9]], dtype=object))     # values never read
    out = fitted.transform(np.array([["green", 3], ["purple", 1]], dtype=object))
    np.testing.assert_array_equal(out, [[0, 1, 0, 0, 1], [0, 0, 1, 0, 0]])
    assert list(fitted.get_feature_names_out()) == ["x0_red", "x0_green", "x1_1", "x1_2",
                                                     "x1_3"]
    with pytest.raises(ValueError, match="needs categories"):
        DPOneHotEncoder().fit(np.zeros((1, 1)))
    with pytest.raises(ValueError, match="lists 1 column"):
        DPOneHotEncoder(categories=[["a"]]).fit(np.zeros((1, 2)))


def test_a_pipeline_of_public_transformers_learns():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.uniform(18, 90, 1500),
                          "colour": rng.choice(["red", "green", "blue"], 1500)})
    y = ((frame.age > 50) | (frame.colour == "red")).astype(int)
    pipe = make_pipeline(
        make_column_transformer(
            (DPMinMaxScaler(bounds=(18, 100)), ["age"]),
            (DPOneHotEncoder(categories=[["red", "green", "blue"]]), ["colour"])),
        DPBoostedTreesClassifier(epsilon=1.0, bounds=(0, 1), random_state=0))
    assert pipe.fit(frame[:1000], y[:1000]).score(frame[1000:], y[1000:]) > 0.9


# scikit-learn's estimator checks; a check either transformer fails by design would be declared
# with its reason in dpjax.sklearn_preprocessing.EXPECTED_FAILED_CHECKS (today: none)
TRANSFORMERS = [DPMinMaxScaler(bounds=(-10.0, 10.0)),
                # the checks' data for a categorical transformer: small non-negative integers
                DPOneHotEncoder(categories=[0, 1, 2, 3]),
                DPOneHotEncoder(categories=[0, 1, 2, 3], sparse_output=False)]

if SKLEARN_1_6:      # expected_failed_checks= is scikit-learn >= 1.6's
    @parametrize_with_checks(TRANSFORMERS, expected_failed_checks=expected_failed_checks)
    def test_sklearn_estimator_checks(estimator, check):
        check(estimator)


def test_only_the_object_dtype_check_is_declared_as_failing_by_design():
    """The scaler refuses X typed as objects by its dtype (a cell-by-cell conversion would
    raise or not on one record's cell); nothing else fails by design."""
    assert EXPECTED_FAILED_CHECKS["DPOneHotEncoder"] == {}
    assert list(EXPECTED_FAILED_CHECKS["DPMinMaxScaler"]) == ["check_dtype_object"]
    assert all(expected_failed_checks(t) == EXPECTED_FAILED_CHECKS[type(t).__name__]
               for t in TRANSFORMERS)


ENCODER = DPOneHotEncoder(categories=[["a", "b"], [1, 2]], sparse_output=False)
SCALER = DPMinMaxScaler(bounds=(0.0, 10.0))


@pytest.mark.parametrize("transformer", [SCALER, ENCODER], ids=lambda t: type(t).__name__)
def test_the_fitted_columns_are_checked_again_by_transform(transformer):
    fitted = clone(transformer).fit(np.ones((ROWS, 2)))
    assert fitted.n_features_in_ == 2 and not hasattr(fitted, "feature_names_in_")
    with pytest.raises(ValueError, match=rf"X has 1 features, but {type(transformer).__name__} "
                                         "is expecting 2 features as input"):
        fitted.transform(np.ones((ROWS, 1)))
    frame = pd.DataFrame({"p": [1.0] * ROWS, "q": [2.0] * ROWS})
    named = clone(transformer).fit(frame)
    assert list(named.feature_names_in_) == ["p", "q"]
    with pytest.raises(ValueError, match="feature names should match"):
        named.transform(frame[["q", "p"]])


@pytest.mark.parametrize("transformer", [SCALER, ENCODER], ids=lambda t: type(t).__name__)
def test_x_must_be_a_real_two_dimensional_array_with_a_sample_and_a_feature(transformer):
    fitted = clone(transformer).fit(np.ones((ROWS, 2)))
    with pytest.raises(ValueError, match="got a 1-D array. Reshape your data"):
        fitted.transform(np.ones(2))
    with pytest.raises(ValueError, match="got a 3-D array"):
        clone(transformer).fit(np.ones((ROWS, 2, 2)))
    with pytest.raises(ValueError, match="X is empty"):
        clone(transformer).fit(np.ones((0, 2)))
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(, 0\)\)"):
        clone(transformer).fit(np.ones((ROWS, 0)))
    with pytest.raises(ValueError, match="Complex data not supported"):
        clone(transformer).fit(np.ones((ROWS, 2)) + 1j)
    with pytest.raises(ValueError, match="Complex data not supported"):
        clone(transformer).fit(pd.DataFrame({"z": [1j] * ROWS, "r": [1.0] * ROWS}))


def test_non_array_inputs_are_read_as_arrays():
    rows = [[5.0, 2.5], [0.0, 20.0]]
    np.testing.assert_allclose(clone(SCALER).fit(rows).transform(rows), [[0.5, 0.25], [0, 1]])
    with pytest.raises(TypeError, match="typed as text or objects"):     # by its dtype
        clone(SCALER).fit(np.array(rows, dtype=object))
    nullable = pd.DataFrame({"n": pd.array([5, None], dtype="Int64")})
    out = clone(SCALER).fit(nullable).transform(nullable)
    assert out[0, 0] == 0.5 and np.isnan(out[1, 0])
    encoded = clone(ENCODER).fit([["a", 1]]).transform([["b", 2], ["a", 7]])
    np.testing.assert_array_equal(encoded, [[0, 1, 0, 1], [1, 0, 0, 0]])


def test_the_scaler_refuses_x_typed_as_text_whatever_its_cells():
    """By the dtype alone: an object array or a text column is refused whether or not its
    cells would convert, so no record's cell decides the refusal."""
    for X in (np.array([["12.5", SECRET]] * ROWS, dtype=object),
              np.array([["12.5", "1"]] * ROWS, dtype=object),
              np.array([[{"k": SECRET}, 1.0]] * ROWS, dtype=object),
              pd.DataFrame({"s": [SECRET] * ROWS}), pd.DataFrame({"s": ["1.5"] * ROWS})):
        with pytest.raises(TypeError, match="typed as text or objects"):
            clone(SCALER).fit(X)


def test_missing_values_stay_missing_and_infinities_are_clipped_without_an_error():
    X = np.array([[np.inf, -np.inf], [np.nan, 5.0]])
    out = clone(SCALER).fit(X).transform(X)
    np.testing.assert_array_equal(out[0], [1.0, 0.0])
    assert np.isnan(out[1, 0]) and out[1, 1] == 0.5
    encoded = clone(ENCODER).fit([["a", 1]]).transform(np.array([[np.nan, None]], dtype=object))
    np.testing.assert_array_equal(encoded, [[0, 0, 0, 0]])


def test_the_scaler_takes_sparse_input_and_the_encoder_refuses_it():
    X = np.array([[0.0, 5.0], [10.0, 0.0]])
    for sparse in (scipy.sparse.csr_matrix(X), scipy.sparse.csc_array(X)):
        np.testing.assert_allclose(clone(SCALER).fit(sparse).transform(sparse),
                                   clone(SCALER).fit(X).transform(X))
    with pytest.raises(TypeError, match="does not take sparse X"):
        clone(ENCODER).fit(scipy.sparse.csr_matrix(X))


def test_one_category_list_may_serve_every_column():
    encoder = DPOneHotEncoder(categories=["red", "green"], sparse_output=False)
    out = encoder.fit([["blue", "red"]]).transform([["green", "red"], ["red", "pink"]])
    np.testing.assert_array_equal(out, [[0, 1, 1, 0], [1, 0, 0, 0]])
    assert list(encoder.get_feature_names_out()) == ["x0_red", "x0_green", "x1_red", "x1_green"]
    with pytest.raises(ValueError, match="not a mix of lists and categories"):
        DPOneHotEncoder(categories=[["a"], "b"]).fit(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="at least one declared category"):
        DPOneHotEncoder(categories=[["a"], []]).fit(np.zeros((1, 2)))


@pytest.mark.parametrize(("bounds", "message"), [
    (([0, 0, 0], [1, 1, 1]), "a scalar or 2 values"), ((0, 1, 2), "a pair"), (5, "a pair")])
def test_scaler_bounds_must_be_a_pair_that_fits_the_columns(bounds, message):
    with pytest.raises(ValueError, match=message):
        DPMinMaxScaler(bounds=bounds).fit(np.zeros((ROWS, 2)))


def _bad_inputs():
    """(name, transformer, call) of every refusal: each call fits (or fits, then transforms)
    data of ROWS rows holding SECRET where it can."""
    dense = np.full((ROWS, 2), 1.0)
    strings = np.array([[SECRET, "1"]] * ROWS, dtype=object)
    return [
        ("1-D", SCALER, lambda t: t.fit(dense).transform(dense[:, 0])),
        ("3-D", SCALER, lambda t: t.fit(dense[:, :, None])),
        ("ragged", SCALER, lambda t: t.fit([[1.0, 2.0]] * (ROWS - 1) + [[1.0]])),
        ("columns", SCALER, lambda t: t.fit(dense).transform(np.ones((ROWS, 3)))),
        ("no features", SCALER, lambda t: t.fit(np.ones((ROWS, 0)))),
        ("complex", SCALER, lambda t: t.fit(dense + 1j)),
        ("string", SCALER, lambda t: t.fit(strings)),
        ("unicode", SCALER, lambda t: t.fit(strings.astype(str))),
        ("dict", SCALER, lambda t: t.fit(np.array([[{SECRET: 1}, 1.0]] * ROWS, dtype=object))),
        ("frame", SCALER, lambda t: t.fit(pd.DataFrame({"s": [SECRET] * ROWS}))),
        ("bounds", DPMinMaxScaler(bounds=([0] * 3, [1] * 3)), lambda t: t.fit(dense)),
        ("encoder 1-D", ENCODER, lambda t: t.fit(strings).transform(strings[:, 0])),
        ("encoder columns", ENCODER, lambda t: t.fit(strings).transform(np.ones((ROWS, 3)))),
        ("encoder sparse", ENCODER, lambda t: t.fit(scipy.sparse.csr_matrix(dense))),
        ("encoder lists", ENCODER, lambda t: t.fit(np.ones((ROWS, 3)))),
    ]


@pytest.mark.parametrize(("name", "transformer", "call"), _bad_inputs(),
                         ids=[case[0] for case in _bad_inputs()])
def test_messages_show_no_row_count_and_no_value(name, transformer, call):
    with pytest.raises((ValueError, TypeError)) as raised:
        call(clone(transformer))
    error = raised.value
    assert str(ROWS) not in str(error) and SECRET not in str(error)
    # numpy's own message (which shows the value or the shape) is not chained on
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__
