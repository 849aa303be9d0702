"""``dpjax.functional``: the pure fit and prediction of a learner, jitted and vmapped inside a
caller's own program, equal to :func:`dpjax.fit`'s model bit for bit, its ledger composed on
the host (``docs/functional.md``)."""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.functional import fitter
from tests.conftest import small

N = 4


def shards(count: int = 3, rows: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, (count, rows, N)).astype(np.float32)
    y = (X[..., 0] + 0.5 * X[..., 1] + rng.normal(size=(count, rows)) > 0).astype(np.int32)
    return X, y


@pytest.mark.parametrize("method", sorted(dpjax.LEARNERS))
def test_the_pure_fit_is_dpjax_fit_bit_for_bit(method):
    X, y = shards(1)
    f = fitter(method, bounds=(-3.0, 3.0), n_features=N, **small(method))
    key = jax.random.key(4)
    params, costs = jax.jit(f)(key, X[0], y[0], 1.0)
    model = dpjax.fit(X[0], y[0], method=method, epsilon=1.0, key=key, bounds=(-3.0, 3.0),
                      **small(method))
    chex.assert_trees_all_equal(params, model.params)
    # the same ledger; dpjax.fit's also names the plan it settled (the pure fit's is decided
    # in its program)
    assert str(f.ledger(costs, 1.0)) == str(dataclasses.replace(model.privacy, plan=""))
    # (dpjax's predictions pad the rows to a bucket: scores within a float32 ulp)
    np.testing.assert_allclose(np.asarray(jax.jit(f.predict_proba)(params, X[0])),
                               model.predict_proba(X[0]), rtol=0, atol=2**-23)


def test_a_vmapped_fit_over_shards_feeds_further_jax_code():
    """One ``jax.jit`` that vmaps the fit over disjoint shards (each its own key) and averages
    the models' scores: every model is its own shard's fit, and every ledger stays within
    its budget."""
    X, y = shards(3)
    f = fitter("boosted", bounds=(-3.0, 3.0), n_features=N, shape="random", n_trees=4,
               depth=2)
    keys = jax.random.split(jax.random.key(0), 3)

    @jax.jit
    def ensemble(keys, X, y, epsilon, X_test):
        params, costs = jax.vmap(f, in_axes=(0, 0, 0, 0))(keys, X, y, epsilon)
        scores = jax.vmap(f.predict_proba, in_axes=(0, None))(params, X_test)
        return params, costs, scores.mean(0)

    epsilon = jnp.asarray([0.5, 1.0, 2.0])
    params, costs, scores = ensemble(keys, X, y, epsilon, X[0])
    assert scores.shape == (X.shape[1], 2)
    ledgers = f.ledgers(costs, epsilon.tolist())
    assert [ledger.epsilon <= budget for ledger, budget in zip(ledgers, [0.5, 1.0, 2.0],
                                                               strict=True)] == [True] * 3
    for i in range(3):
        own, _ = jax.jit(f)(keys[i], X[i], y[i], epsilon[i])
        chex.assert_trees_all_equal(jax.tree.map(lambda a, i=i: a[i], params), own)


def test_traced_hyper_parameters_are_arguments():
    X, y = shards(1)
    f = fitter("boosted", bounds=(-3.0, 3.0), n_features=N, shape="random", n_trees=3)
    rates = jnp.asarray([0.3, 1.0])
    params, _ = jax.vmap(lambda lr: f(jax.random.key(1), X[0], y[0], 1.0,
                                      learning_rate=lr))(rates)
    slow, _ = f(jax.random.key(1), X[0], y[0], 1.0, learning_rate=0.3)
    chex.assert_trees_all_equal(jax.tree.map(lambda a: a[0], params), slow)


def test_the_ledger_refuses_costs_above_the_request():
    X, y = shards(1)
    f = fitter("random_trees", bounds=(-3.0, 3.0), n_features=N, n_trees=2, depth=2)
    _, costs = f(jax.random.key(0), X[0], y[0], 2.0)
    assert f.ledger(costs, 2.0).epsilon <= 2.0
    with pytest.raises(ValueError, match="pass the epsilon the fit ran at"):
        f.ledger(costs, 1.0)


def test_bad_rows_are_checked_at_the_boundary_and_on_the_host():
    X, y = shards(1)
    f = fitter("random_trees", bounds=(-3.0, 3.0), n_features=N, n_trees=2, depth=2)
    with pytest.raises(ValueError, match="features"):
        f(jax.random.key(0), X[0][:, :2], y[0], 1.0)
    with pytest.raises(AssertionError):
        f(jax.random.key(0), X[0], y[0][:5], 1.0)        # chex: the rows must match
    bad = X[0].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="missing"):
        f.check(bad)
    with pytest.raises(ValueError, match="outside the declared classes"):
        f.check(X[0], np.full(X.shape[1], 2))
    f.check(X[0], y[0])


def test_the_factory_checks_its_public_choices():
    with pytest.raises(ValueError, match="pass n_features"):
        fitter("boosted", bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="numbers"):
        fitter("boosted", bounds=(0.0, 1.0), n_features=2, classes=("a", "b"))
    with pytest.raises(ValueError, match="binary"):
        fitter("malpha", bounds=(0.0, 1.0), n_features=2, classes=(0, 1, 2))
    assert fitter("boosted", bounds=([0.0, 1.0], [1.0, 2.0])).n_features == 2


def test_a_fitted_model_serves_the_rest_of_dpjax():
    X, y = shards(1)
    f = fitter("boosted", bounds=(-3.0, 3.0), n_features=N)
    params, costs = f(jax.random.key(2), X[0], y[0], 1.0)
    model = f.model(params, f.ledger(costs, 1.0))
    assert model.score(X[0], y[0]) > 0.6
    assert "log-odds" in model.describe()


def test_the_pure_binning_is_the_checked_binning_for_float_rows_only():
    """Wide integers would round in float32: refused; a NaN with no missing code takes the
    first bin (as documented); ``check`` bins in the dtype the pure functions see."""
    f = fitter("random_trees", bounds=(0.0, 1.0), n_features=1, n_trees=2, depth=2)
    with pytest.raises(ValueError, match="cast it to float32"):
        f.encode(jnp.asarray([[1], [2]], jnp.int32))
    codes = f.encode(jnp.asarray([[np.nan], [-np.nan], [0.95]], jnp.float32))
    np.testing.assert_array_equal(np.asarray(codes)[:, 0], [0, 0, 9])
    with pytest.raises(ValueError, match="public_size"):
        fitter("random_trees", bounds=(0.0, 1.0), n_features=1, public_size=2.5)
