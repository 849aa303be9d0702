"""Transformers that read nothing off the data (``dpjax.sklearn``'s ``DPMinMaxScaler`` and
``DPOneHotEncoder``): their fitted state is the same on any data, and pipelines with them
learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.pipeline import make_pipeline

from dpjax.sklearn import DPBoostedTreesClassifier, DPMinMaxScaler, DPOneHotEncoder


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
