"""The regression booster: ``boosted`` with ``task="regression"`` (the clipped residuals' and the
prior's sensitivities, learning end to end, the mean fallback, the API around a real target,
the refusals)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data import DataDependentWarning, OutOfBoundsWarning, target_units
from dpjax.ensembles.newton.releases import (
    GRAD_UNIT,
    HESSIAN_WEIGHT,
    MEAN_LABEL,
    MEAN_PRIOR_LABEL,
    ROUND_LABELS,
    loss_spread,
    mean_prior,
    release_moments,
    round_units,
)
from dpjax.ensembles.newton.rounds import residual_stats
from dpjax.ensembles.newton.schedule import REGRESSION_SIGNAL, Frame, active_rounds, rounds_at
from dpjax.learners import Boosted

Y_BOUNDS = (0.0, 10.0)


@pytest.mark.parametrize("clip", [0.05, 0.25, 1.0])
def test_one_record_moves_a_round_by_at_most_its_units(clip):
    """``|g| + h`` of a record's floored fixed-point stats stays within :func:`round_units`
    for every score and target, and the bound is reached (a residual beyond the clip)."""
    rng = np.random.default_rng(0)
    score = jnp.asarray(rng.normal(scale=3.0, size=5000), jnp.float32)
    target = jnp.asarray(rng.uniform(-1, 1, size=5000), jnp.float32)
    stats = np.asarray(residual_stats(score, target, clip, True))
    assert stats.dtype == np.int32 and stats.shape == (5000, 2)
    assert np.all(stats[:, 1] == HESSIAN_WEIGHT * GRAD_UNIT)         # h is exact
    l1 = np.abs(stats).sum(1)
    assert l1.max() <= round_units(1.0, 1)
    assert l1.max() >= loss_spread(1) * GRAD_UNIT - 1
    assert round_units(2.0, 1) == 2 * round_units(1.0, 1)


def test_the_prior_release_moves_by_at_most_two_rows_per_record():
    """Adding a record with ``|z| <= 1`` moves ``(m, Σz)`` (fixed point) by at most 2 rows in
    L1: the sensitivity :func:`release_moments` charges."""
    z = jnp.asarray(np.random.default_rng(1).uniform(-1, 1, 100), jnp.float32)
    base, _ = release_moments(jax.random.key(0), z, None)
    for extra in (-1.0, -0.3, 1.0):
        more, _ = release_moments(jax.random.key(0), jnp.append(z, extra), None)
        assert float(jnp.abs(more - base).sum()) <= 2.0
    prior, size = mean_prior([(base, 1.0)])
    assert float(size) == pytest.approx(100.0)
    assert float(prior) == pytest.approx(float(jnp.floor(z * GRAD_UNIT).sum()) / GRAD_UNIT / 100)


def test_the_target_is_normalised_into_the_unit_interval():
    z = target_units(np.asarray([0.0, 5.0, 10.0, 12.0]), Y_BOUNDS)
    np.testing.assert_allclose(np.asarray(z), [-1.0, 0.0, 1.0, 1.0])


@pytest.fixture(scope="module")
def real_target():
    """3,000 rows, 4 features in [0, 1]; y = 4 + 2·x0 (+1 where x1 > 0.5) + noise, in [0, 10]
    (each feature's effect within the default ``residual_clip``, 1.25: one pass fits it)."""
    rng = np.random.default_rng(7)
    X = pd.DataFrame(rng.uniform(size=(3000, 4)), columns=list("abcd"))
    y = np.clip(4 + 2 * X.a + (X.b > 0.5) + rng.normal(scale=0.3, size=3000), *Y_BOUNDS)
    return X, y.to_numpy()


def rmse(predicted, y):
    return float(np.sqrt(np.mean((predicted - y) ** 2)))


@pytest.mark.parametrize("shape", ["auto", "cyclic", "random"])
def test_regression_boosting_learns(real_target, shape):
    X, y = real_target
    model = dpjax.fit(X[:2000], y[:2000], method="boosted", task="regression",
                      y_bounds=Y_BOUNDS, epsilon=1.0, bounds=(0.0, 1.0), key=0, shape=shape)
    assert model.task == "regression" and model.classes == () and model.target == Y_BOUNDS
    predicted = model.predict(X[2000:])
    assert predicted.shape == (1000,)
    assert predicted.min() >= Y_BOUNDS[0] and predicted.max() <= Y_BOUNDS[1]
    # the mean predictor's RMSE is about 0.83; the noise-free fit's 0.3
    baseline = rmse(np.full(1000, y[:2000].mean()), y[2000:])
    # random trees split the useful features where their structure happens to (about 0.8)
    assert rmse(predicted, y[2000:]) < (0.9 if shape == "random" else 0.5) * baseline
    assert model.score(X[2000:], y[2000:]) > (0.15 if shape == "random" else 0.7)   # R²
    assert 1.0 * (1 - 2e-3) <= model.privacy.epsilon <= 1.0
    entries = {e.what: e for e in model.privacy.entries}
    assert MEAN_PRIOR_LABEL in entries
    assert "clipped residuals" in entries[ROUND_LABELS["laplace"]].mechanism
    assert "prediction: y(x)" in model.describe()
    assert "regression target in [0, 10]" in model.summary()


def test_sweep_serves_regression(real_target):
    X, y = real_target
    sweep = dpjax.sweep(X[:2000], y[:2000], method="boosted", task="regression",
                        y_bounds=Y_BOUNDS, epsilon=[0.5, 5.0], seeds=[0, 1],
                        bounds=(0.0, 1.0), residual_clip=[0.25, 0.5])
    r2 = sweep.score(X[2000:], y[2000:])
    assert r2.shape == (4, 2) and r2.min() > 0.4
    assert sweep.predict(X[2000:]).shape == (4, 2, 1000)
    one = sweep.model(3, 1)
    np.testing.assert_allclose(one.predict(X[2000:]), sweep.predict(X[2000:])[3, 1], rtol=1e-6)
    assert all(ledger.epsilon <= point["epsilon"]
               for point, ledger in zip(sweep.grid, sweep.ledgers, strict=True))
    with pytest.raises(ValueError, match="no class probabilities"):
        sweep.predict_proba(X[:5])


def test_a_regression_model_file_round_trips(real_target, tmp_path):
    X, y = real_target
    model = dpjax.fit(X[:500], y[:500], method="boosted", task="regression", y_bounds=Y_BOUNDS,
                      epsilon=1.0, bounds=(0.0, 1.0), key=1)
    loaded = dpjax.load(model.to_json(tmp_path / "model.json"))
    assert loaded.target == Y_BOUNDS and loaded.task == "regression"
    np.testing.assert_array_equal(loaded.predict(X[500:600]), model.predict(X[500:600]))
    with pytest.raises(ValueError, match="no class probabilities"):
        model.predict_proba(X[:5])


def test_a_budget_that_affords_no_round_falls_back_to_the_mean(real_target):
    """At ε = 0.05 on 40 rows no round keeps its signal: the rounds' budget releases the count
    and sum again (pooled with the prior's) and the model predicts the released mean."""
    X, y = real_target
    model = dpjax.fit(X[:40], y[:40], method="boosted", task="regression", y_bounds=Y_BOUNDS,
                      epsilon=0.05, bounds=(0.0, 1.0), key=3)
    entries = {e.what: e for e in model.privacy.entries}
    assert MEAN_LABEL in entries and MEAN_PRIOR_LABEL in entries
    assert ROUND_LABELS["laplace"] not in entries
    assert model.privacy.epsilon <= 0.05
    assert np.all(np.asarray(model.params.table) == 0)
    assert len(set(model.predict(X[:50]).tolist())) == 1


def test_regression_rounds_keep_more_signal_than_a_two_class_round():
    """A regression schedule's rounds keep ``REGRESSION_SIGNAL`` (1.5) times ``min_signal``
    noise scales on top of the loss's spread (1.5 rows a record), a two-class one ``min_signal``
    alone: the sizes at which regression takes the mean fallback (0 rounds) reach past those
    at which the same cells afford two-class rounds."""
    assert REGRESSION_SIGNAL == 1.5
    regression = Frame(Boosted(), 4, (32,) * 4, (32,) * 4, 1, 1.0, 0.0, True, (0.0, 10.0))
    classes = Frame(Boosted(), 4, (32,) * 4, (32,) * 4, 2, 1.0, 0.0, True)
    sizes = jnp.geomspace(10.0, 1e5, 200)
    by_regression = np.asarray(rounds_at(regression, "laplace", 0.1, 0.01, sizes, 8.0, 4, 4.0))
    by_classes = np.asarray(rounds_at(classes, "laplace", 0.1, 0.01, sizes, 8.0, 4, 4.0))
    expected = active_rounds(0.1, 0.01, sizes, 8.0, 4, min_signal=4.0 * 1.5 * 1.5, delta=0.0,
                             gaussian=False, least=0.0)
    np.testing.assert_array_equal(by_regression, np.asarray(expected))
    assert np.all(by_regression <= by_classes)
    assert by_regression.min() == 0 and np.any((by_regression == 0) & (by_classes > 0))


def test_same_key_same_model_and_keys_differ(real_target):
    X, y = real_target
    fits = [dpjax.fit(X[:600], y[:600], method="boosted", task="regression", y_bounds=Y_BOUNDS,
                      epsilon=1.0, bounds=(0.0, 1.0), key=k) for k in (4, 4, 5)]
    same = jax.tree.map(lambda a, b: bool(np.array_equal(np.asarray(a), np.asarray(b))),
                        fits[0].params, fits[1].params)
    assert all(jax.tree.leaves(same))
    assert not np.array_equal(np.asarray(fits[0].params.table),
                              np.asarray(fits[2].params.table))


def test_a_constant_target_still_fits(real_target):
    X, _ = real_target
    model = dpjax.fit(X[:300], np.full(300, 4.0), method="boosted", task="regression",
                      y_bounds=Y_BOUNDS, epsilon=1.0, bounds=(0.0, 1.0), key=0)
    assert abs(float(np.mean(model.predict(X[:300]))) - 4.0) < 1.5


def test_out_of_range_targets_are_clipped_with_a_warning(real_target):
    X, y = real_target
    y = y[:200].copy()
    y[0] = 50.0
    with pytest.warns(OutOfBoundsWarning, match="outside y_bounds"):
        dpjax.fit(X[:200], y, method="boosted", task="regression", y_bounds=Y_BOUNDS,
                  epsilon=1.0, bounds=(0.0, 1.0), key=0)
    with pytest.raises(ValueError, match="outside y_bounds"):
        dpjax.fit(X[:200], y, method="boosted", task="regression", y_bounds=Y_BOUNDS,
                  epsilon=1.0, bounds=(0.0, 1.0), key=0, on_out_of_bounds="error")


def test_bounds_read_off_the_target_are_marked_not_private(real_target):
    X, y = real_target
    with pytest.warns(DataDependentWarning, match="y_bounds were read off"):
        model = dpjax.fit(X[:200], y[:200], method="boosted", task="regression",
                          y_bounds="data", epsilon=1.0, bounds=(0.0, 1.0), key=0)
    assert not model.privacy.private
    free = dpjax.fit(X[:200], y[:200], method="boosted", task="regression", epsilon=None,
                     bounds="data", key=0)
    assert free.target == (float(y[:200].min()), float(y[:200].max()))


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(), "y_bounds=\\(lo, hi\\) is required"),
    (dict(y_bounds=(5.0, 5.0)), "lo < hi"),
    (dict(y_bounds="wide"), "y_bounds must be a \\(lo, hi\\) pair"),
    (dict(y_bounds=Y_BOUNDS, classes=[0, 1]), "classes has no meaning"),
    (dict(y_bounds=Y_BOUNDS, method="random_trees"), "not supported by random_trees"),
    (dict(y_bounds=Y_BOUNDS, shape="oblivious"), "with regression use shape"),
    (dict(y_bounds=Y_BOUNDS, noise="gaussian", delta=1e-6), "with regression the rounds"),
    (dict(y_bounds=Y_BOUNDS, individual=2.0), "individual accounting"),
    (dict(y_bounds=Y_BOUNDS, task="ranking"), "task must be one of"),
])
def test_bad_regression_requests_are_refused(real_target, kwargs, message):
    X, y = real_target
    kwargs = {"method": "boosted", "task": "regression", **kwargs}
    with pytest.raises(ValueError, match=message):
        dpjax.fit(X[:100], y[:100], epsilon=1.0, bounds=(0.0, 1.0), key=0, **kwargs)


def test_y_bounds_without_regression_and_bad_targets_are_refused(real_target):
    X, y = real_target
    with pytest.raises(ValueError, match="pass task='regression'"):
        dpjax.fit(X[:100], (y[:100] > 5).astype(int), method="boosted", epsilon=1.0,
                  bounds=(0.0, 1.0), y_bounds=Y_BOUNDS)
    bad = y[:100].copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="missing or infinite"):
        dpjax.fit(X[:100], bad, method="boosted", task="regression", y_bounds=Y_BOUNDS,
                  epsilon=1.0, bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="must be real numbers"):
        dpjax.fit(X[:100], np.asarray(["a"] * 100), method="boosted", task="regression",
                  y_bounds=Y_BOUNDS, epsilon=1.0, bounds=(0.0, 1.0))


def test_classification_fits_are_unchanged_by_the_residual_clip(real_target):
    """``residual_clip`` only enters regression: a two-class fit ignores it."""
    X, y = real_target
    labels = (y > 5).astype(int)
    fits = [dpjax.fit(X[:500], labels[:500], method="boosted", epsilon=1.0, bounds=(0.0, 1.0),
                      key=2, residual_clip=c) for c in (0.25, 0.9)]
    np.testing.assert_array_equal(np.asarray(fits[0].params.table),
                                  np.asarray(fits[1].params.table))


def test_the_regressor_estimator(real_target):
    from dpjax.sklearn import DPBoostedTreesRegressor

    X, y = real_target
    reg = DPBoostedTreesRegressor(epsilon=1.0, bounds=(0.0, 1.0), y_bounds=Y_BOUNDS,
                                  random_state=0).fit(X[:2000], y[:2000])
    assert reg.score(X[2000:], y[2000:]) > 0.4
    assert reg.predict(X[2000:]).shape == (1000,)
    assert reg.privacy_.private and reg.privacy_.epsilon <= 1.0
    assert "prediction" in reg.describe()
    # the two informative features rank above the two noise features (a and b's order is
    # within the noise at this ε: 0.40 against 0.40 with this key)
    assert set(np.argsort(reg.feature_importances_)[-2:].tolist()) == {0, 1}
    # as in dpjax.fit: y_bounds must be declared under DP, or read off y when asked
    with pytest.raises(ValueError, match="y_bounds=\\(lo, hi\\) is required"):
        DPBoostedTreesRegressor(epsilon=1.0, bounds=(0.0, 1.0)).fit(X[:100], y[:100])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        with pytest.raises(DataDependentWarning, match="y_bounds were read off"):
            DPBoostedTreesRegressor(epsilon=1.0, bounds=(0.0, 1.0),
                                    y_bounds="data").fit(X[:100], y[:100])


def test_targets_beyond_float32_and_complex_targets_are_refused(real_target):
    X, y = real_target
    for bounds in [(0.0, 1e39), (1e30, 1e30 + 1e15)]:
        with pytest.raises(ValueError, match="y_bounds must lie within"):
            dpjax.fit(X[:50], y[:50], method="boosted", task="regression", y_bounds=bounds,
                      epsilon=1.0, bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="must be real numbers"):
        dpjax.fit(X[:50], y[:50] + 1j, method="boosted", task="regression", y_bounds=Y_BOUNDS,
                  epsilon=1.0, bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="residual_clip must be in"):
        dpjax.fit(X[:50], y[:50], method="boosted", task="regression", y_bounds=Y_BOUNDS,
                  epsilon=1.0, bounds=(0.0, 1.0), residual_clip=1e-38)


def test_public_refusals_come_before_the_targets_are_read(real_target):
    """A request refused for public reasons is refused whatever the targets: no warning about
    out-of-range values first (its presence would depend on the data)."""
    X, y = real_target
    y = y[:100].copy()
    y[0] = 50.0                                        # outside y_bounds
    for params in [dict(shape="oblivious"), dict(on_out_of_bounds="raise")]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", OutOfBoundsWarning)
            with pytest.raises(ValueError):
                dpjax.fit(X[:100], y, method="boosted", task="regression", y_bounds=Y_BOUNDS,
                          epsilon=1.0, bounds=(0.0, 1.0), **params)


def test_the_prior_costs_two_rows_under_either_relation(real_target):
    X, y = real_target
    for relation in ("add_remove", "replace_one"):
        model = dpjax.fit(X[:200], y[:200], method="boosted", task="regression",
                          y_bounds=Y_BOUNDS, epsilon=1.0, bounds=(0.0, 1.0), key=0,
                          neighbouring=relation)
        prior = {e.what: e for e in model.privacy.entries}[MEAN_PRIOR_LABEL]
        assert "L1 sens. 2" in prior.mechanism
