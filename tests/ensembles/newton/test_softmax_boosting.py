"""The softmax booster: ``boosted`` with more than two declared classes (the sensitivity of a
round's ``[cells, K, 2]`` sums, the class-count fallback, learning end to end, the refusals)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.ensembles.newton.releases import (
    GRAD_UNIT,
    MAJORITY_LABEL,
    PRIOR_LABEL,
    ROUND_LABELS,
    loss_spread,
    pooled_prior,
    round_units,
)
from dpjax.ensembles.newton.rounds import gradient_stats


@pytest.mark.parametrize("n_classes", [3, 4, 10])
def test_one_record_moves_a_round_by_at_most_its_units(n_classes):
    """``Σ_k |g_k| + Σ_k h_k`` of the floored fixed-point stats stays within
    :func:`round_units` over random and adversarial scores (the bound's maximiser: ``p_y → 0``
    with the rest even), for every label."""
    rng = np.random.default_rng(n_classes)
    scores = np.concatenate([
        rng.normal(scale=4.0, size=(4000, n_classes)),
        np.where(np.arange(n_classes) == 0, -30.0, 0.0)[None, :].repeat(n_classes, 0)])
    labels = np.concatenate([rng.integers(0, n_classes, 4000), np.zeros(n_classes, int)])
    stats = gradient_stats(jnp.asarray(scores, jnp.float32), jnp.asarray(labels), True)
    assert stats.shape == (len(labels), n_classes, 2)
    l1 = np.abs(np.asarray(stats)).sum(axis=(1, 2))
    assert l1.max() <= round_units(1.0, n_classes)
    # the bound is tight: the adversarial rows reach the spread to within the floors
    assert l1.max() >= loss_spread(n_classes) * GRAD_UNIT - 2 * n_classes - 1
    assert round_units(2.0, n_classes) == 2 * round_units(1.0, n_classes)


def test_the_spread_is_the_maximum_over_the_simplex():
    """``max_p 2(1 − p_y) + 1 − Σ p_k² = 3 − 1/(K − 1)`` (at ``p_y = 0``, the rest even)."""
    for k in (3, 5):
        p = np.random.default_rng(k).dirichlet(np.full(k, 0.3), size=20000)
        value = 2 * (1 - p[:, 0]) + 1 - (p**2).sum(1)
        assert value.max() <= loss_spread(k) + 1e-12
        assert value.max() >= loss_spread(k) - 0.05
    assert loss_spread(2) == 1.0


def test_prior_is_the_centred_log_counts():
    prior, size = pooled_prior([(jnp.asarray([100.0, 10.0, 0.0]), 1.0)])
    logs = np.log([100.0, 10.0, 1.0])           # each count floored at 1
    np.testing.assert_allclose(np.asarray(prior), logs - logs.mean(), rtol=1e-6)
    assert float(size) == pytest.approx(111.0)


@pytest.fixture(scope="module")
def three_classes():
    """3,000 rows, 4 features in [0, 1]; the class is the third of x0 it falls in, with 10%
    of labels flipped at random."""
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.uniform(size=(3000, 4)), columns=list("abcd"))
    y = np.minimum((X.a * 3).astype(int).to_numpy(), 2)
    flip = rng.uniform(size=3000) < 0.1
    y = np.where(flip, rng.integers(0, 3, 3000), y)
    labels = np.asarray(["low", "mid", "high"])[y]
    return X, labels


@pytest.mark.parametrize("shape", ["auto", "cyclic", "random"])
def test_softmax_boosting_learns_three_classes(three_classes, shape):
    X, y = three_classes
    model = dpjax.fit(X[:2000], y[:2000], method="boosted", epsilon=1.0, bounds=(0.0, 1.0),
                      classes=["low", "mid", "high"], key=0, shape=shape)
    assert model.classes == ("low", "mid", "high")
    assert model.params.prior.shape == (3,)
    proba = model.predict_proba(X[2000:])
    assert proba.shape == (1000, 3)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    # Bayes rate 0.933; random trees split the one useful feature where their structure does
    # ("auto" takes them at ε = 1 on 2,000 rows: their schedule affords fewer than n_trees)
    assert model.score(X[2000:], y[2000:]) > (0.8 if shape == "cyclic" else 0.65)
    assert 1.0 * (1 - 2e-3) <= model.privacy.epsilon <= 1.0
    entries = {e.what: e for e in model.privacy.entries}
    assert "3 classes" in entries[ROUND_LABELS["laplace"]].mechanism
    assert "class scores" in model.describe()


def test_sweep_and_estimator_serve_three_classes(three_classes):
    X, y = three_classes
    sweep = dpjax.sweep(X[:2000], y[:2000], method="boosted", epsilon=[0.5, 5.0], seeds=[0, 1],
                        bounds=(0.0, 1.0), classes=["low", "mid", "high"])
    accuracy = sweep.score(X[2000:], y[2000:])
    # ε = 0.5: random trees ("auto": fewer affordable than n_trees; 0.58-0.67 on this toy of
    # one useful feature, where a cyclic pass isolates it); ε = 5: the cyclic pass
    assert accuracy.shape == (2, 2) and accuracy[0].min() > 0.55 and accuracy[1].min() > 0.85
    assert all(ledger.epsilon <= point["epsilon"]
               for point, ledger in zip(sweep.grid, sweep.ledgers, strict=True))
    from dpjax.sklearn import DPBoostedTreesClassifier

    clf = DPBoostedTreesClassifier(epsilon=1.0, bounds=(0.0, 1.0), classes=["low", "mid", "high"],
                                   random_state=0).fit(X[:2000], y[:2000])
    assert list(clf.classes_) == ["high", "low", "mid"]        # sorted, as scikit-learn's
    assert clf.predict_proba(X[2000:]).shape == (1000, 3)
    scores = clf.decision_function(X[2000:])             # one score per class
    assert scores.shape == (1000, 3)
    np.testing.assert_array_equal(clf.classes_[scores.argmax(1)], clf.predict(X[2000:]))


def test_a_budget_that_affords_no_round_falls_back_to_the_class_counts(three_classes):
    """At ε = 0.05 on 300 rows no round keeps its signal: the rounds' budget releases the class
    counts again (pooled with the prior's) and the model predicts their majority."""
    X, y = three_classes
    X, y = X[:300], np.where(np.arange(300) % 10 < 6, "mid", y[:300])
    model = dpjax.fit(X, y, method="boosted", epsilon=0.05, bounds=(0.0, 1.0),
                      classes=["low", "mid", "high"], key=3)
    entries = {e.what: e for e in model.privacy.entries}
    assert MAJORITY_LABEL in entries and PRIOR_LABEL in entries
    assert ROUND_LABELS["laplace"] not in entries
    assert model.privacy.epsilon <= 0.05
    assert np.all(np.asarray(model.params.table) == 0)
    assert set(model.predict(X)) == {"mid"}


@pytest.mark.parametrize(("params", "message"), [
    (dict(shape="oblivious"), "shape='oblivious' boosts two classes only"),
    (dict(noise="gaussian", delta=1e-6), "noise='gaussian' serves two classes only"),
    (dict(individual=2.0), "individual accounting"),
])
def test_modes_of_two_classes_refuse_more(three_classes, params, message):
    X, y = three_classes
    with pytest.raises(ValueError, match=message):
        dpjax.fit(X[:100], y[:100], method="boosted", epsilon=1.0, bounds=(0.0, 1.0),
                  classes=["low", "mid", "high"], key=0, **params)


def test_two_class_fits_keep_their_scalar_score(three_classes):
    X, y = three_classes
    y = np.where(y == "low", "low", "rest")
    model = dpjax.fit(X[:500], y[:500], method="boosted", epsilon=1.0, bounds=(0.0, 1.0),
                      classes=["low", "rest"], key=0)
    assert model.params.prior.shape == ()
    assert model.decision_function(X[:5]).shape == (5,)
    assert math.isfinite(float(jax.device_get(model.params.prior)))


def test_same_key_same_model_and_keys_differ(three_classes):
    X, y = three_classes
    fits = [dpjax.fit(X[:600], y[:600], method="boosted", epsilon=1.0, bounds=(0.0, 1.0),
                      classes=["low", "mid", "high"], key=k) for k in (4, 4, 5)]
    same = jax.tree.map(lambda a, b: bool(np.array_equal(np.asarray(a), np.asarray(b))),
                        fits[0].params, fits[1].params)
    assert all(jax.tree.leaves(same))
    assert not np.array_equal(np.asarray(fits[0].params.prior), np.asarray(fits[2].params.prior))
