"""Mα-boost budgets (spec §4.2 eq. (18), §5.3): the formulas of ``tree_budgets``, and every
float32 budget handed to a mechanism is at most its exact spec share."""

from __future__ import annotations

import functools
import itertools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.malpha import split_level_epsilons, tree_budgets
from dpjax.mechanisms import laplace_mechanism, permute_and_flip
from tests.helpers.malpha import SIZE_SHARE, assert_spent, expected_ledger

# ------------------------------------------------------------------------------------------
# The budget formulas (§4.2, §5.3)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("oc_private", [True, False])
@pytest.mark.parametrize("size_share", [0.0, SIZE_SHARE])
def test_tree_budgets_formulas(oc_private, size_share):
    eps, bt, n_trees, depth, boc = 2.0, 0.6, 5, 3, 0.25
    budget = tree_budgets(eps, bt, oc_private, n_trees=n_trees, depth=depth, beta_oc=boc,
                          beta_share=0.1, beta_mode="fold", leaf_composition="sequential",
                          size_share=size_share)
    share_oc = boc if oc_private else 0.0
    per_tree = eps * (1 - size_share) / n_trees
    if size_share:
        assert_spent(budget["size"], eps * size_share)
    else:
        np.testing.assert_array_equal(budget["size"], 0.0)
    assert_spent(budget["splits"], (1 - share_oc) * bt * per_tree)
    np.testing.assert_allclose(
        split_level_epsilons(budget["splits"], depth, budget="paper"),
        [(1 - share_oc) * bt * per_tree / (depth * 2**k) for k in range(depth)], rtol=1e-6)
    assert_spent(budget["leaf"], (1 - bt) * per_tree / 2**depth)
    if oc_private:
        assert_spent(budget["oc"], boc * bt * per_tree / depth)
    # every share is rounded down: the releases add up to at most ε (and nearly all of it)
    spent = float(budget["size"]) + n_trees * (float(budget["splits"]) + float(budget["leaf"])
                                               * 2**depth)
    spent += n_trees * float(budget["oc"]) * depth if oc_private else 0.0
    assert_spent(spent, eps)
    # jittable with traced ε, β_tree and O.C flag
    traced = jax.jit(lambda e, b, o: tree_budgets(
        e, b, o, n_trees=n_trees, depth=depth, beta_oc=boc, beta_share=0.1, beta_mode="fold",
        leaf_composition="sequential", size_share=size_share))(eps, bt, oc_private)
    chex.assert_trees_all_close(traced, budget, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Float32 budgets inside the fit vs the ledger
# ------------------------------------------------------------------------------------------


BUDGET_MODES = [("value", "fold", "sequential"), ("value", "laplace", "sequential"),
                ("counts", "post", "parallel")]


@functools.cache
def budget_fn(n_trees: int, depth: int, beta_mode: str, composition: str):
    """``tree_budgets`` (private size: ``SIZE_SHARE``) jitted and vmapped over ε, with the
    split budget's per-level shares."""
    def budgets(epsilon, beta_tree, oc_private):
        budget = tree_budgets(epsilon, beta_tree, oc_private, n_trees=n_trees, depth=depth,
                              beta_oc=0.1, beta_share=0.1, beta_mode=beta_mode,
                              leaf_composition=composition, size_share=SIZE_SHARE)
        return {**budget, "levels": split_level_epsilons(budget["splits"], depth, budget="paper")}
    return jax.jit(jax.vmap(budgets, in_axes=(0, None, None)))


# the costs the mechanisms report for given budgets (costs only: XLA drops the samplers)
selection_costs = jax.jit(jax.vmap(lambda e: permute_and_flip(
    jax.random.key(0), jnp.zeros(2), 21.0, e)[1].epsilon))
laplace_costs = jax.jit(jax.vmap(lambda e: laplace_mechanism(
    jax.random.key(0), jnp.zeros(2), 2.0, e, bound=1.0, event_ndim=1)[1].epsilon))


def _check_budget_grid(beta_tree: float) -> None:
    """Over a grid of ε, T, d, α and the modes: every float32 budget the fit hands a mechanism
    is at most its exact (float64) spec share, the mechanisms' costs are at most their
    budgets, and all releases together stay within ε."""
    epsilons = [0.1, 1.0, 3.7, 25.0]
    selections, releases = [], []
    for n_trees, depth, alpha, mode in itertools.product([1, 7], [1, 3], ["oc", 0.5],
                                                          BUDGET_MODES):
        _, beta_mode, composition = mode
        oc_private = alpha == "oc" and depth > 1
        budget = budget_fn(n_trees, depth, beta_mode, composition)(
            jnp.float32(epsilons), jnp.float32(beta_tree), oc_private)
        budget = {k: np.asarray(v, np.float64) for k, v in budget.items()}
        for i, eps in enumerate(epsilons):
            spec = {(w, c): each for w, each, c in expected_ledger(
                eps, n_trees, depth, beta_tree, alpha, beta_mode=beta_mode,
                composition=composition)}
            where = (eps, n_trees, depth, beta_tree, alpha, mode)
            used = [("row count", budget["size"][i], 1)]
            used += [(f"splits at depth {k}", budget["levels"][i, k], n_trees * 2**k)
                     for k in range(depth)]
            if oc_private:
                used.append(("O.C level errors", budget["oc"][i], n_trees * depth))
            leaves = 2**depth if composition == "sequential" else 1
            used.append(("leaves", budget["leaf"][i], n_trees * leaves))
            if beta_mode == "laplace":
                used.append(("leveraging coefficient β_t", budget["beta"][i], n_trees))
            assert sorted((w, c) for w, _, c in used) == sorted(spec), where
            for what, each, count in used:
                assert each <= spec[(what, count)], (where, what)
                assert each >= spec[(what, count)] * (1 - 1e-5), (where, what)
            assert math.fsum(each * count for _, each, count in used) <= eps, where
            for what, each, _ in used:
                (selections if what.startswith("splits") else releases).append(each)
    # what the mechanisms make of them: permute-and-flip spends exactly its budget, a Laplace
    # release at most its budget
    selections, releases = np.float32(selections), np.float32(releases)
    np.testing.assert_array_equal(selection_costs(jnp.asarray(selections)), selections)
    assert np.all(np.asarray(laplace_costs(jnp.asarray(releases))) <= releases)


@pytest.mark.slow
@pytest.mark.parametrize("beta_tree", [0.1, 0.3, 0.5, 0.7])
def test_float32_budgets_never_exceed_the_spec(beta_tree):
    _check_budget_grid(beta_tree)


@pytest.mark.slow
def test_float32_budgets_never_exceed_the_spec_beta_tree_near_one():
    _check_budget_grid(0.9)
