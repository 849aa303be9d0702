"""Mα-boost end to end (spec §3, §9): shapes and determinism of ``fit_malpha``, the
non-private Algorithm 1 replayed in numpy, predictions, and input validation through
``dpjax.fit``."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.ensembles.malpha import link_bound, malpha_decision, malpha_predict, malpha_proba
from dpjax.trees import leaf_index
from tests.helpers.fits import fit_malpha
from tests.helpers.malpha import (
    CODES,
    FIT,
    M_ROWS,
    N_CODES,
    SIGN,
    ZETA,
    X,
    Y,
    _assert_boosted_shapes,
    exact_fit,
    np_leaf_sums,
    np_leaf_values,
    np_link_bound,
    private_fit,
    released_margins,
    tree_arrays,
    weights_of,
)

# ------------------------------------------------------------------------------------------
# Shapes and determinism
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_fit_shapes_private_and_non_private():
    private, _ = private_fit(3)(jax.random.key(0), 1.0, 0.5, 0.5)
    _assert_boosted_shapes(private, 3, 3)
    exact = exact_fit()(1.0)
    _assert_boosted_shapes(exact, 3, 2)
    # every split is a valid (feature, threshold) of the public grid
    for model in (private, exact):
        assert np.all(np.asarray(model.trees.threshold) <= N_CODES[0] - 1)
        assert np.all((np.asarray(model.trees.feature) >= 0)
                      & (np.asarray(model.trees.feature) < len(N_CODES)))
    # private trees are complete: no "send everything left" frozen split
    assert np.all(np.asarray(private.trees.threshold) < N_CODES[0] - 1)


@pytest.mark.slow
def test_same_key_same_model_other_key_other_model():
    fit = private_fit(3)
    model, _ = fit(jax.random.key(5), 1.0, -1.0, 0.5)
    chex.assert_trees_all_equal(model, fit(jax.random.key(5), 1.0, -1.0, 0.5)[0])
    other, _ = fit(jax.random.key(6), 1.0, -1.0, 0.5)
    assert not np.array_equal(other.trees.feature, model.trees.feature)
    assert not np.allclose(other.trees.leaf, model.trees.leaf)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, None])
def test_n_active_trees_equal_the_shorter_fit(epsilon):
    """``n_active = T'`` (traced) inside a ``T``-tree program gives exactly the ``T'``-tree fit
    (budget ε/T' per tree, after the same noisy row count) and releases nothing after it, at
    zero cost: one compile serves every T' <= T."""
    codes, y = jnp.asarray(CODES), jnp.asarray(Y)
    common = dict(depth=2, n_codes_per_feature=N_CODES, alpha=-1.0)
    masked = jax.jit(lambda n: fit_malpha(jax.random.key(5), codes, y, epsilon, n_trees=4,
                                           n_active=n, **common))
    for n_active in (1, 3):
        short, short_costs = jax.jit(lambda n=n_active: fit_malpha(
            jax.random.key(5), codes, y, epsilon, n_trees=n, **common))()
        long, costs = masked(jnp.float32(n_active))
        head = jax.tree.map(lambda a, n=n_active: a[:n] if a.ndim else a, long)
        chex.assert_trees_all_equal(head.trees.feature, short.trees.feature)
        chex.assert_trees_all_close(head, short, rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(long.trees.leaf[n_active:], 0.0)
        np.testing.assert_array_equal(long.beta[n_active:], 0.0)
        assert list(costs) == list(short_costs)
        assert ("row count" in costs) == (epsilon is not None)
        for what, cost in costs.items():
            if what == "row count":
                chex.assert_trees_all_close(cost, short_costs[what], rtol=1e-6)
                continue
            chex.assert_trees_all_close(jax.tree.map(lambda a, n=n_active: a[:n], cost),
                                        short_costs[what], rtol=1e-6)
            np.testing.assert_array_equal(cost.epsilon[n_active:], 0.0)


def test_fit_boosted_rejects_bad_static_options():
    codes, y = jnp.asarray(CODES), jnp.asarray(Y)
    common = dict(n_trees=1, depth=1, n_codes_per_feature=N_CODES)
    with pytest.raises(ValueError, match="binary"):
        fit_malpha(jax.random.key(0), codes, y, 1.0, n_classes=3, **common)
    with pytest.raises(ValueError, match="does not go with"):
        fit_malpha(jax.random.key(0), codes, y, 1.0, leaf_mechanism="counts",
                    beta_mode="fold", **common)
    with pytest.raises(ValueError, match="oc_alpha"):
        fit_malpha(jax.random.key(0), codes, y, 1.0, oc_alpha="noisy", **common)


# ------------------------------------------------------------------------------------------
# Non-private Algorithm 1, replayed in numpy
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.3, 1.0])
def test_non_private_boosting_replays_algorithm_1(alpha):
    """Weights ``ψ^{-1}(−y·H_{t−1})`` (clamped to ``[ζ', 1 − ζ']``, ``H_0 = 0``), leaves
    ``ψ(clip(q, ζ, 1 − ζ))`` and ``β_t = (a/m)·Σ_i w_i·y_i·h_t(x_i)`` with ``a = α/M_ζ(α)²``
    (§3, A15), recomputed from the fitted splits."""
    model = exact_fit()(alpha)
    a = alpha / np_link_bound(alpha) ** 2
    np.testing.assert_allclose(float(link_bound(alpha, ZETA)), np_link_bound(alpha), rtol=1e-6)
    margins = np.zeros(M_ROWS)
    for t in range(3):
        w = weights_of(margins, alpha)
        if t == 0:
            np.testing.assert_array_equal(w, 0.5)
        feature, threshold = tree_arrays(model, t)
        leaf = np.asarray(leaf_index(feature, threshold, CODES))
        values = np_leaf_values(np_leaf_sums(leaf, w, 4), alpha)
        beta = a / M_ROWS * np.sum(w * SIGN * values[leaf])
        np.testing.assert_allclose(model.trees.leaf[t], values, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(float(model.beta[t]), beta, rtol=1e-4)
        margins = margins + beta * values[leaf]
    # the boosting property (§3): misclassified examples weigh >= 1/2, well classified <= 1/2
    w = weights_of(margins, alpha)
    assert np.all(w[SIGN * margins > 0] <= 0.5) and np.all(w[SIGN * margins < 0] >= 0.5)
    if alpha == 1.0:  # weights moved away from 1/2 (for α < 1 the flat zone may keep them)
        assert np.ptp(w) > 0.01


# ------------------------------------------------------------------------------------------
# Predictions
# ------------------------------------------------------------------------------------------


class PredictTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_planted_problem_and_prediction_rules(self):
        model = exact_fit()(1.0)
        codes = jnp.asarray(CODES)
        decision = np.asarray(self.variant(malpha_decision)(model, codes))
        proba = np.asarray(self.variant(malpha_proba)(model, codes))
        predict = np.asarray(self.variant(malpha_predict)(model, codes))
        chex.assert_shape(decision, (M_ROWS,))
        chex.assert_shape(proba, (M_ROWS, 2))
        chex.assert_shape(predict, (M_ROWS,))
        np.testing.assert_allclose(decision, released_margins(model, 3), rtol=1e-5, atol=1e-6)
        assert np.mean(predict == Y) > 0.9
        np.testing.assert_array_equal(predict, (decision >= 0).astype(np.int32))
        np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
        np.testing.assert_array_equal(proba[:, 1] > 0.5, decision > 0)
        np.testing.assert_array_equal(proba[:, 1] < 0.5, decision < 0)

    def test_zero_score_predicts_positive_with_probability_half(self):
        model = jax.tree.map(jnp.zeros_like, exact_fit()(1.0))
        codes = jnp.asarray(CODES)
        np.testing.assert_array_equal(malpha_predict(model, codes), 1)
        np.testing.assert_allclose(malpha_proba(model, codes), 0.5)


def test_private_fit_with_large_budget_learns_the_planted_split():
    model, _ = private_fit(3)(jax.random.key(0), 1e4, 1.0, 0.5)
    assert np.mean(np.asarray(malpha_predict(model, jnp.asarray(CODES))) == Y) > 0.9


@pytest.mark.slow
def test_model_api_predictions_are_consistent():
    model = dpjax.fit(X, Y, epsilon=5.0, key=2, n_trees=3, depth=2, **FIT)
    np.testing.assert_array_equal(model.encode(X), CODES)
    proba = model.predict_proba(X)
    decision = np.asarray(malpha_decision(model.params, jnp.asarray(CODES)))
    np.testing.assert_array_equal(model.predict(X), (decision >= 0).astype(int))
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(proba[:, 1] > 0.5, decision > 0)


# ------------------------------------------------------------------------------------------
# Input validation through dpjax.fit
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("params", "match"), [
    (dict(alpha=0), r"alpha must be in \(0, 1\]"),
    (dict(alpha=1.5), r"alpha must be in \(0, 1\]"),
    (dict(alpha="foo"), r"alpha must be in \(0, 1\]"),
    (dict(alpha=True), r"alpha must be in \(0, 1\]"),
    (dict(beta_tree=0), r"beta_tree must be in \(0, 1\)"),
    (dict(beta_tree=1), r"beta_tree must be in \(0, 1\)"),
    (dict(leaf_mechanism="counts", beta_mode="fold"), "does not go with"),
    (dict(leaf_mechanism="value", beta_mode="post"), "does not go with"),
    (dict(leaf_composition="parallel", leaf_mechanism="value"), "parallel"),
    (dict(oc_alpha="approximate"), "oc_alpha must be one of"),
    (dict(zeta=0.5), "zeta"),
    (dict(n_trees=0), "n_trees"),
    (dict(depth=21), "depth"),
    (dict(clamp=-1.0), "clamp"),
    (dict(beta_oc=1.0), "beta_oc"),
    (dict(size_share=0.0), "size_share"),
    (dict(size_share=1.0), "size_share"),
])
def test_invalid_hyper_parameters_raise(params, match):
    with pytest.raises(ValueError, match=match):
        dpjax.fit(X, Y, epsilon=1.0, key=0, **{**FIT, **params})


def test_multiclass_labels_raise():
    y3 = np.arange(M_ROWS) % 3
    with pytest.raises(ValueError, match="binary"):
        dpjax.fit(X, y3, epsilon=1.0, key=0, classes=[0, 1, 2], n_trees=1, depth=1, **FIT)


def test_invalid_sweep_values_raise():
    with pytest.raises(ValueError, match="alpha"):
        dpjax.sweep(X, Y, epsilon=1.0, alpha=[0.5, 0.0], n_trees=1, depth=1, **FIT)
    with pytest.raises(ValueError, match="beta_tree"):
        dpjax.sweep(X, Y, epsilon=1.0, beta_tree=[0.5, 1.0], n_trees=1, depth=1, **FIT)
