"""The user-facing API: ``Model``'s predictions."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from tests.helpers.api import SMALL

# --------------------------------------------------------------------------------------------
# Prediction
# --------------------------------------------------------------------------------------------


def test_predict_returns_original_labels(toy_xy):
    X, y, bounds = toy_xy
    labels = np.where(y == 1, "b", "a")
    model = dpjax.fit(X, labels, method="random_trees", epsilon=None, bounds=bounds, key=0,
                      classes=["a", "b"], **SMALL)
    pred = model.predict(X)
    assert pred.shape == (len(y),)
    assert pred.dtype.kind == "U"
    assert set(np.unique(pred)) <= {"a", "b"}
    # the labels are not swapped: a non-private forest fits this easy problem well
    assert np.mean(pred == labels) > 0.8
    assert model.score(X, labels) == pytest.approx(np.mean(pred == labels))
    assert model.classes == ("a", "b")
    # reversing the declared classes reverses the columns of predict_proba, not the labels
    flipped = dpjax.fit(X, labels, method="random_trees", epsilon=None, bounds=bounds, key=0,
                        classes=["b", "a"], **SMALL)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(flipped.predict_proba(X), proba[:, ::-1], rtol=1e-6)
    untied = np.abs(proba[:, 0] - 0.5) > 1e-6  # a tie goes to the first declared class
    assert untied.mean() > 0.5
    np.testing.assert_array_equal(flipped.predict(X)[untied], pred[untied])


def test_predict_proba_rows_sum_to_one(toy_xy):
    X, y, bounds = toy_xy
    for voting in ("majority", "threshold", "probabilistic"):
        model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=bounds, key=0,
                          voting=voting, **SMALL)
        proba = model.predict_proba(X)
        assert proba.shape == (len(y), 2)
        np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
        assert np.all(proba >= 0)
    with pytest.raises(ValueError, match="key"):
        model.predict(X)
    pred = model.predict(X, key=3)
    np.testing.assert_array_equal(pred, model.predict(X, key=3))
    assert set(np.unique(pred)) <= {0, 1}


def test_proba_function_under_jit_and_vmap(toy_xy):
    X, y, bounds = toy_xy
    models = [dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=bounds, key=k,
                        **SMALL) for k in range(3)]
    stacked = jax.tree.map(lambda *a: jnp.stack(a), *(m.params for m in models))
    chex.assert_shape(stacked.leaf, (3, 3, 8, 2))
    proba = models[0].proba_function()
    codes = models[0].encode(X)
    assert codes.dtype == jnp.uint8
    batched = jax.jit(jax.vmap(proba, in_axes=(0, None)))(stacked, codes)
    chex.assert_shape(batched, (3, len(y), 2))
    for i, model in enumerate(models):
        np.testing.assert_allclose(batched[i], model.predict_proba(X), rtol=1e-6, atol=1e-7)
    single = jax.jit(proba)(models[1].params, codes)
    np.testing.assert_allclose(single, models[1].predict_proba(X), rtol=1e-6, atol=1e-7)
