"""The RF-L / RF-E baselines' leaf labels: the true argmax at a huge epsilon, the exponential
mechanism's label distribution through the forest fit, multi-class."""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.trees import leaf_index
from tests.conftest import binomial_tolerance, pf_probabilities, reference_leaf
from tests.helpers.fits import fit_random_trees
from tests.helpers.rf_baselines import BOUNDS, assert_one_hot, assert_within_budget, easy_data

# leaf of every example in every tree of a forest, [T, m] (jitted once per shape)
forest_leaf_index = jax.jit(jax.vmap(leaf_index, in_axes=(0, 0, None)))


def true_leaf_counts(model: dpjax.Model, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Exact class counts ``[T, 2**d, C]`` of every leaf of a fitted forest, from the fitted
    splits and ``leaf_index`` (numpy accumulation)."""
    forest = model.params
    leaves = np.asarray(forest_leaf_index(forest.feature, forest.threshold, model.encode(X)))
    n_trees, n_leaves, n_classes = forest.leaf.shape
    counts = np.zeros((n_trees, n_leaves, n_classes))
    for t in range(n_trees):
        np.add.at(counts[t], (leaves[t], np.asarray(y)), 1.0)
    return counts


# --------------------------------------------------------------------------------------------
# Huge epsilon: leaf label = argmax of the true counts
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_class():
    """Train (m = 400) and test (m = 300) sets of a planted three-class problem."""
    return easy_data(4, 400, n_classes=3), easy_data(5, 300, n_classes=3)


def fit_three_class(method: str, epsilon: float, key: int, data) -> dpjax.Model:
    (X, y), _ = data
    return dpjax.fit(X, y, method=method, epsilon=epsilon, bounds=BOUNDS, classes=[0, 1, 2],
                     key=key)


def assert_labels_are_true_argmax(model: dpjax.Model, X: np.ndarray, y: np.ndarray) -> None:
    """Every leaf whose true class counts have a unique maximum is labelled with it."""
    assert_one_hot(model.params.leaf)
    counts = true_leaf_counts(model, X, y)
    np.testing.assert_array_equal(counts.sum(axis=(1, 2)), [len(y)] * 21)
    top = counts.max(-1, keepdims=True)
    untied = (counts == top).sum(-1) == 1
    assert untied.sum() >= 150, untied.sum()  # most leaves are informative
    labels = np.asarray(model.params.leaf).argmax(-1)
    np.testing.assert_array_equal(labels[untied], counts.argmax(-1)[untied],
                                  err_msg=model.method)


@pytest.mark.slow
def test_huge_epsilon_labels_are_true_argmax(easy, three_class):
    (X, y), _ = easy
    assert_labels_are_true_argmax(
        dpjax.fit(X, y, method="rf_laplace", epsilon=1e6, bounds=BOUNDS, key=11), X, y)
    (X3, y3), _ = three_class
    structures = []
    for method in ("rf_laplace", "rf_exponential"):
        model = fit_three_class(method, 1e6, 11, three_class)
        assert_labels_are_true_argmax(model, X3, y3)
        structures.append((model.params.feature, model.params.threshold))
    # the structure is drawn from the key alone: RF-L and RF-E share it
    chex.assert_trees_all_equal(*structures)


# --------------------------------------------------------------------------------------------
# RF-E: the exponential mechanism's label distribution through the forest fit
# --------------------------------------------------------------------------------------------

# depth-1 trees on three 10-code features: a row of all-0 codes always goes left (0 > t is
# false for every threshold t >= 0), a row of all-9 codes always goes right (t <= 8).
PLANTED_CODES = np.array([[0, 0, 0]] * 4 + [[9, 9, 9]] * 2, np.uint8)
PLANTED_Y = np.array([0, 0, 0, 2, 1, 1], np.int32)
PLANTED_COUNTS = np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 0.0]])  # left leaf, right leaf
RFE_TREES, RFE_KEYS = 5, 4000


@functools.cache
def rfe_sampler():
    """``(key, eps_a, eps_b) -> (labels_a, labels_b)``, each ``[RFE_KEYS, RFE_TREES, 2]``: the
    leaf labels of RF-E forests of depth-1 trees on the planted data, one forest per key, with
    (a) per-leaf composition under add/remove at ``eps_a`` and (b) per-tree composition under
    replace-one (sensitivity 2) at ``eps_b``. One compilation for every check below."""
    def fit(composition, sensitivity):
        return functools.partial(
            fit_random_trees, codes=jnp.asarray(PLANTED_CODES), y=jnp.asarray(PLANTED_Y),
            n_trees=RFE_TREES, depth=1, n_codes_per_feature=np.full(3, 10), n_classes=3,
            sensitivity=sensitivity, noise="exponential", leaf_estimate="label",
            budget=composition)

    fit_a, fit_b = fit("paper", 1.0), fit("parallel", 2.0)

    def sample(key, eps_a, eps_b):
        keys = jax.random.split(key, RFE_KEYS)
        a = jax.vmap(lambda k: fit_a(k, epsilon=eps_a)[0].leaf.argmax(-1))(keys)
        b = jax.vmap(lambda k: fit_b(k, epsilon=eps_b)[0].leaf.argmax(-1))(keys)
        return a, b

    return jax.jit(sample)


def label_probabilities(eps_each: float) -> np.ndarray:
    """Permute-and-flip label probabilities ``[leaf, class]`` of the planted leaves (utility
    the class counts, sensitivity 1)."""
    return np.stack([pf_probabilities(counts, 1.0, eps_each) for counts in PLANTED_COUNTS])


def assert_label_frequencies(labels: np.ndarray, eps_each: float) -> None:
    """Each leaf's label frequencies match the exact permute-and-flip probabilities at
    ``eps_each`` within Z binomial standard errors (every tree of every forest is an
    independent draw)."""
    chex.assert_shape(labels, (RFE_KEYS, RFE_TREES, 2))
    n = labels.shape[0] * labels.shape[1]
    expected = label_probabilities(eps_each)
    for leaf in range(2):
        freq = np.bincount(labels[:, :, leaf].ravel(), minlength=3) / n
        np.testing.assert_array_less(np.abs(freq - expected[leaf]),
                                     binomial_tolerance(expected[leaf], n),
                                     err_msg=f"leaf {leaf}, eps_each {eps_each}")


def test_planted_rows_reach_fixed_leaves():
    """The premise of the statistical tests below: for every split a depth-1 tree can draw
    (any feature, threshold in 0..8), the all-0 rows go left and the all-9 rows go right."""
    for feature in range(3):
        for threshold in range(9):
            leaves = [reference_leaf(np.array([feature]), np.array([threshold]), row)
                      for row in PLANTED_CODES]
            assert leaves == [0, 0, 0, 0, 1, 1]
    np.testing.assert_array_equal(
        [np.bincount(PLANTED_Y[PLANTED_CODES[:, 0] == code], minlength=3) for code in (0, 9)],
        PLANTED_COUNTS)


@pytest.mark.slow
@pytest.mark.parametrize(("epsilon", "eps_each"), [(10.0, 1.0), (4.0, 0.4)])
def test_rf_exponential_label_distribution_per_leaf(epsilon, eps_each):
    """Per-leaf composition: eps_leaf = eps / (T 2^d) = eps / 10."""
    labels, _ = rfe_sampler()(jax.random.key(21), epsilon, 10.0)
    assert_label_frequencies(np.asarray(labels), eps_each)


@pytest.mark.slow
def test_rf_exponential_tree_composition_replace_one_halves_epsilon():
    """Tree composition under replace-one (sensitivity 2): eps_leaf = eps / (T * 2) = 1 at
    eps = 10, not the add/remove eps / T = 2."""
    _, labels = rfe_sampler()(jax.random.key(22), 10.0, 10.0)
    labels = np.asarray(labels)
    assert_label_frequencies(labels, 1.0)
    # the test has power: eps_leaf = 2 predicts P(label 0 | counts (3, 0, 1)) ~ 0.90 vs ~ 0.74
    n = RFE_KEYS * RFE_TREES
    wrong = label_probabilities(2.0)[0, 0]
    assert abs(np.mean(labels[:, :, 0] == 0) - wrong) > 10 * binomial_tolerance(wrong, n)


# --------------------------------------------------------------------------------------------
# Multi-class
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["rf_laplace", "rf_exponential"])
def test_multiclass(method, three_class):
    _, (X_test, y_test) = three_class
    model = fit_three_class(method, 20.0, 6, three_class)
    assert model.classes == (0, 1, 2)
    chex.assert_shape([model.params.feature, model.params.threshold], (21, 15))
    chex.assert_shape(model.params.leaf, (21, 16, 3))
    assert_one_hot(model.params.leaf)
    proba = model.predict_proba(X_test)
    chex.assert_shape(proba, (300, 3))
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
    pred = model.predict(X_test)
    chex.assert_shape(pred, (300,))
    assert set(np.unique(pred)) <= {0, 1, 2}
    np.testing.assert_array_equal(pred, proba.argmax(-1))
    assert np.mean(pred == y_test) > 0.6  # the label is a function of feature 0; chance 1/3
    assert_within_budget(model.privacy.epsilon, 20.0)
