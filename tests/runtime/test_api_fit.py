"""The user-facing API: ``dpjax.fit`` on banknote (the paper's first dataset), and keys."""

from __future__ import annotations

import chex
import jax
import numpy as np
import pytest

import dpjax
from dpjax.data.splits import stratified_split

# --------------------------------------------------------------------------------------------
# Banknote, the paper's first dataset
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def banknote():
    X, y = dpjax.load_dataset("banknote")
    return X, y, dpjax.data.public_bounds("banknote")


@pytest.fixture(scope="module")
def banknote_models(banknote):
    """Default hyper-parameters, epsilon = 1, 70/30 stratified splits for seeds 0..4."""
    X, y, bounds = banknote
    models, accuracy = [], []
    for seed in range(5):
        train, test = stratified_split(y, 0.3, seed)
        model = dpjax.fit(X.iloc[train], y[train], method="random_trees", epsilon=1.0,
                          bounds=bounds, key=seed)
        models.append((model, train, test))
        accuracy.append(model.score(X.iloc[test], y[test]))
    return models, np.array(accuracy)


def test_banknote_accuracy_at_epsilon_one(banknote_models):
    models, accuracy = banknote_models
    assert accuracy.mean() >= 0.92, accuracy
    for model, _, _ in models:
        assert model.privacy.private
        assert model.privacy.epsilon <= 1.0
        assert model.privacy.requested_epsilon == 1.0


def test_same_key_same_params_different_key_different(banknote, banknote_models):
    X, y, bounds = banknote
    models, _ = banknote_models
    model, train, _ = models[0]
    again = dpjax.fit(X.iloc[train], y[train], method="random_trees", epsilon=1.0, bounds=bounds,
                      key=0)
    chex.assert_trees_all_equal(model.params, again.params)
    other = dpjax.fit(X.iloc[train], y[train], method="random_trees", epsilon=1.0, bounds=bounds,
                      key=1)
    assert not np.array_equal(other.params.feature, model.params.feature)
    assert not np.array_equal(other.params.leaf, model.params.leaf)
    # the fit was compiled once for these shapes and reused
    assert again.timings.compile_s == 0.0


def test_int_seed_and_typed_key_are_the_same(banknote, banknote_models):
    X, y, bounds = banknote
    models, _ = banknote_models
    model, train, _ = models[2]
    for key in (jax.random.key(2), np.int64(2), jax.random.PRNGKey(2)):
        same = dpjax.fit(X.iloc[train], y[train], method="random_trees", epsilon=1.0, bounds=bounds,
                         key=key)
        chex.assert_trees_all_equal(model.params, same.params)
    for bad in (1.5, True, "seed"):
        with pytest.raises((ValueError, TypeError)):
            dpjax.as_key(bad)


def test_as_key_keeps_all_64_bits():
    """An int seed is the whole 64-bit threefry key: small seeds are unchanged, seeds that
    differ only above bit 31 give different keys, and ints outside [0, 2**64) are refused."""
    data = jax.random.key_data
    np.testing.assert_array_equal(data(dpjax.as_key(5)), data(jax.random.key(5)))
    np.testing.assert_array_equal(data(dpjax.as_key(2**40 + 5)), [2**8, 5])
    np.testing.assert_array_equal(data(dpjax.as_key(2**64 - 1)), [2**32 - 1, 2**32 - 1])
    assert not np.array_equal(data(dpjax.as_key(2**32 + 5)), data(dpjax.as_key(5)))
    for bad in (-1, 2**64, -(2**70)):
        with pytest.raises(ValueError, match="2\\*\\*64"):
            dpjax.as_key(bad)
    # None draws fresh OS entropy every time
    assert not np.array_equal(data(dpjax.as_key(None)), data(dpjax.as_key(None)))


def test_clear_caches_drops_compiled_programs_and_later_fits_recompile(banknote):
    """``dpjax.clear_caches`` empties dpjax's compiled-fit cache; the same fit afterwards
    compiles again and releases the same model (the key fixes it)."""
    X, y, bounds = banknote
    fit = dict(method="random_trees", epsilon=1.0, key=0, n_trees=2, depth=2, bounds=bounds)
    first = dpjax.fit(X, y, **fit)
    dpjax.clear_caches()
    assert not dpjax._preparation._COMPILED
    second = dpjax.fit(X, y, **fit)
    assert second.timings.compile_s > 0.0
    chex.assert_trees_all_equal(first.params, second.params)
