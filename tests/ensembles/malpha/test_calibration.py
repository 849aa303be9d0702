"""Objective calibration (O.C) of Mα-boost (spec §5): the private per-level α's, the exact
breadth-first schedule and fixed α's."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

import dpjax
from tests.helpers.malpha import (
    CODES,
    FIT,
    M_ROWS,
    X,
    Y,
    exact_fit,
    private_fit,
    released_margins,
    tree_arrays,
    weights_of,
)


def node_at_depth(feature: np.ndarray, threshold: np.ndarray, k: int) -> np.ndarray:
    """Heap index of the depth-``k`` node every example passes through."""
    node = np.zeros(M_ROWS, np.int64)
    for _ in range(k):
        f, t = feature[node], threshold[node]
        node = 2 * node + 1 + (CODES[np.arange(M_ROWS), f] > t)
    return node


def partition_error(groups: np.ndarray, w: np.ndarray) -> float:
    """``Σ_λ min{w^1(λ), w^{-1}(λ)}`` of the partition ``groups`` (§5.1)."""
    n = int(groups.max()) + 1
    pos = np.bincount(groups, w * (Y == 1), minlength=n)
    neg = np.bincount(groups, w * (Y == 0), minlength=n)
    return float(np.minimum(pos, neg).sum())


# ------------------------------------------------------------------------------------------
# Objective calibration (§5)
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_private_oc_alphas_per_level():
    """Private O.C (§5.3): root α = 1, one α per level, in [0, 1], non-increasing."""
    fit = private_fit(3)
    seen_below_one = False
    for seed, eps in itertools.product(range(3), [0.3, 5.0, 1e5]):
        model, _ = fit(jax.random.key(seed), eps, -1.0, 0.5)
        alpha = np.asarray(model.alpha)
        np.testing.assert_array_equal(alpha[:, 0], 1.0)
        assert np.all((alpha >= 0) & (alpha <= 1))
        levels = [alpha[:, 2**k - 1: 2 ** (k + 1) - 1] for k in range(3)]
        for k, level in enumerate(levels):
            np.testing.assert_array_equal(level, level[:, :1] * np.ones_like(level))
            if k:
                assert np.all(level[:, 0] <= levels[k - 1][:, 0])
        seen_below_one |= bool((alpha < 1).any())
    assert seen_below_one


@pytest.mark.slow
def test_private_oc_with_huge_epsilon_is_the_level_error_ratio():
    """With a huge budget the noisy level errors are exact: ``α_k = min(α_{k−1}, E_k/E_0)``
    with ``E_k = Σ_{depth-k nodes} min{w^1, w^{−1}}`` of the released splits (first tree,
    weights 1/2)."""
    model, _ = private_fit(3)(jax.random.key(4), 1e5, -1.0, 0.5)
    feature, threshold = tree_arrays(model, 0)
    w = np.full(M_ROWS, 0.5)
    errors = [partition_error(node_at_depth(feature, threshold, k), w) for k in range(3)]
    expected = np.minimum.accumulate([e / errors[0] for e in errors])
    got = [float(model.alpha[0, 2**k - 1]) for k in range(3)]
    np.testing.assert_allclose(got, expected, atol=2e-3)
    assert expected[-1] < 0.9  # a real schedule, not the trivial α = 1


def test_exact_oc_replays_breadth_first_schedule():
    """Exact O.C (§5.1–§5.2): node ``ℓ`` (breadth-first) is split with ``α_ℓ = err(h_ℓ)/
    err(h_1)``, ``err(h) = Σ_leaves min{w^1, w^{−1}}`` of the tree as it stands; replayed
    for every tree under the weights of the released model (α_LC = 1)."""
    model = exact_fit()(-1.0)
    alpha = np.asarray(model.alpha)
    assert (alpha[0] < 1).any()
    for t in range(3):
        w = weights_of(released_margins(model, t), 1.0)
        feature, threshold = tree_arrays(model, t)
        node = np.zeros(M_ROWS, np.int64)
        root_error = partition_error(node, w)
        for j in range(len(feature)):
            err = partition_error(node, w)
            want = err / root_error if root_error > 1e-12 else 1.0
            np.testing.assert_allclose(alpha[t, j], want, rtol=1e-4, atol=1e-6,
                                       err_msg=f"tree {t} node {j}")
            here = node == j
            right = CODES[np.arange(M_ROWS), feature[j]] > threshold[j]
            node = np.where(here, 2 * j + 1 + right, node)


def test_beta_oc_must_be_positive():
    """Private O.C needs a positive share for its releases (``β_oc = 0`` would be infinite
    noise)."""
    with pytest.raises(ValueError, match="beta_oc"):
        dpjax.fit(X, Y, epsilon=1.0, key=0, beta_oc=0.0, n_trees=1, depth=2, **FIT)


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.1, 1.0])
def test_fixed_alpha_is_used_at_every_node(alpha):
    private, costs = private_fit(3)(jax.random.key(0), 1.0, alpha, 0.5)
    np.testing.assert_allclose(private.alpha, alpha, rtol=1e-7)
    # a fixed α reads no O.C estimate: those releases cost nothing
    np.testing.assert_array_equal(costs["O.C level errors"].epsilon, 0.0)
    exact = exact_fit()(alpha)
    np.testing.assert_allclose(exact.alpha, alpha, rtol=1e-7)
