"""The privacy ledger of Mα-boost (spec §4.2 eq. (18), §4.6, §5.3, §9): the spec's entries
and total through ``dpjax.fit`` and over a grid of settings, the noisy row count or a public
size, and the modes that are not private."""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import chex
import jax
import jax.numpy as jnp
import pytest

import dpjax
from dpjax.data import DataDependentWarning
from dpjax.ensembles.malpha import tree_budgets
from dpjax.mechanisms import laplace_mechanism
from tests.helpers.fits import fit_malpha
from tests.helpers.malpha import (
    BOOSTED,
    CODES,
    FIT,
    M_ROWS,
    N_CODES,
    SIZE_SHARE,
    X,
    Y,
    _assert_boosted_shapes,
    assert_ledger,
    assert_spent,
    expected_ledger,
)

# ------------------------------------------------------------------------------------------
# The privacy ledger (§4.2 eq. (18), §4.6, §5.3, §9)
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_default_config_ledger_spends_epsilon():
    model = dpjax.fit(X, Y, epsilon=1.0, key=0, **FIT)
    assert model.hyperparams["alpha"] == "oc" and model.hyperparams["n_trees"] == 10
    assert model.hyperparams["size_share"] == SIZE_SHARE
    assert_ledger(model.privacy, 1.0, expected_ledger(1.0, 10, 4, 0.5, "oc"))
    names = [e.what for e in model.privacy.entries]
    assert names[0] == "row count"  # the row count is private under add/remove
    assert "O.C level errors" in names
    assert model.privacy.entries[0].mechanism == "discrete Laplace (sens. 1)"
    _assert_boosted_shapes(model.params, 10, 4)


@pytest.mark.slow
def test_spec_section_9_budget_example():
    """ε = 1, β_tree = 0.5, T = 10, d = 4, fixed α, public size: per-node 0.0125, 0.00625,
    0.003125, 0.0015625; the splits of one tree spend 0.05 = β_tree·ε/T. Without a public
    size a share of ε goes to the noisy row count first and the rest is split the same way."""
    model = dpjax.fit(X, Y, epsilon=1.0, key=0, alpha=1.0, public_size=M_ROWS, **FIT)
    splits = model.privacy.entries[:4]
    assert [e.epsilon for e in splits] == pytest.approx([0.0125, 0.00625, 0.003125, 0.0015625],
                                                        rel=1e-6)
    assert sum(e.epsilon * 2**k for k, e in enumerate(splits)) == pytest.approx(0.05, rel=1e-6)
    assert len(model.privacy.entries) == 5  # no O.C entry for a fixed α, no row count
    assert_ledger(model.privacy, 1.0, expected_ledger(1.0, 10, 4, 0.5, 1.0, size_share=None))
    private_size = dpjax.fit(X, Y, epsilon=1.0, key=0, alpha=1.0, **FIT)
    assert_ledger(private_size.privacy, 1.0, expected_ledger(1.0, 10, 4, 0.5, 1.0))
    assert [e.epsilon for e in private_size.privacy.entries[1:5]] == pytest.approx(
        [0.0125 * (1 - SIZE_SHARE) / 2**k for k in range(4)], rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(("eps", "beta_tree", "alpha"), [
    (0.5, 0.1, 0.1), (5.0, 0.9, "oc"), (0.01, 0.5, 1.0), (25.0, 0.3, "oc"), (1.0, 0.5, "oc")])
def test_ledger_through_fit(eps, beta_tree, alpha):
    model = dpjax.fit(X, Y, epsilon=eps, key=1, beta_tree=beta_tree, alpha=alpha, n_trees=3,
                      depth=2, **FIT)
    assert_ledger(model.privacy, eps, expected_ledger(eps, 3, 2, beta_tree, alpha))


@pytest.mark.slow
@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_parallel_split_budget_spends_each_level_once(neighbouring):
    """``budget="parallel"`` (the learner's default): every node of a level gets the level's
    whole split budget, and the level costs it once (twice half of it under replace-one, where
    a change touches two nodes); the total is still ε."""
    fit = {**FIT, "budget": "parallel", "prior_share": 0.0}
    model = dpjax.fit(X, Y, epsilon=2.0, key=1, n_trees=3, depth=3, alpha=1.0,
                      neighbouring=neighbouring, **fit)
    size_share = SIZE_SHARE if neighbouring == "add_remove" else None
    assert_ledger(model.privacy, 2.0, expected_ledger(2.0, 3, 3, 0.5, 1.0, budget="parallel",
                                                      size_share=size_share))
    paper = dpjax.fit(X, Y, epsilon=2.0, key=1, n_trees=3, depth=3, alpha=1.0,
                      neighbouring=neighbouring, **FIT)
    spent = {e.what: e.epsilon for e in model.privacy.entries}
    spent_paper = {e.what: e.epsilon for e in paper.privacy.entries}
    assert spent["splits at depth 2"] == pytest.approx(4 * spent_paper["splits at depth 2"],
                                                       rel=1e-5)


LEDGER_MODES = [("value", "fold", "sequential"), ("value", "laplace", "sequential"),
                ("counts", "post", "parallel")]


@functools.cache
def fit_costs(n_trees: int, depth: int, mode: tuple[str, str, str], public_size: bool,
              size_share: float = SIZE_SHARE):
    """``(epsilon, alpha, beta_tree) -> costs`` of ``fit_malpha``, jitted and vmapped over the
    three (traced) settings. Only the costs are returned, so XLA drops the samplers: cheap."""
    mechanism, beta_mode, composition = mode

    def costs(epsilon, alpha, beta_tree):
        return fit_malpha(jax.random.key(0), jnp.asarray(CODES), jnp.asarray(Y), epsilon,
                           alpha=alpha, beta_tree=beta_tree, size=M_ROWS if public_size else None,
                           n_trees=n_trees, depth=depth, n_codes_per_feature=N_CODES,
                           leaf_mechanism=mechanism, beta_mode=beta_mode,
                           leaf_composition=composition, size_share=size_share)[1]
    return jax.jit(jax.vmap(costs))


@pytest.mark.slow
@pytest.mark.parametrize(("n_trees", "depth"), [(1, 1), (2, 1), (7, 3), (20, 6)])
@pytest.mark.parametrize("mode", LEDGER_MODES)
def test_ledger_grid(n_trees, depth, mode):
    """The ledger assembled from the fit's costs (what ``dpjax.fit`` records) over T, d, ε,
    β_tree, α and the modes equals the spec's (with the noisy row count; a public size is
    checked for one configuration); ``d = 1`` under O.C has no O.C entry (nothing to
    calibrate)."""
    grid = list(itertools.product([0.01, 0.7, 10.0], [0.1, 0.5, 0.9], [0.1, 1.0, "oc"]))
    epsilons, beta_trees, alphas = (jnp.asarray(
        [BOOSTED.traced_value(name, value) for value in values], jnp.float32)
        for name, values in zip(("epsilon", "beta_tree", "alpha"), zip(*grid, strict=True),
                                strict=True))
    for public_size in (False, True) if (n_trees, depth) == (7, 3) else (False,):
        costs = fit_costs(n_trees, depth, mode, public_size)(epsilons, alphas, beta_trees)
        for i, (eps, beta_tree, alpha) in enumerate(grid):
            ledger = dpjax.PrivacyLedger(requested_epsilon=eps).with_costs(
                jax.tree.map(lambda a, i=i: a[i], costs))
            assert_ledger(ledger, eps, expected_ledger(
                eps, n_trees, depth, beta_tree, alpha, beta_mode=mode[1], composition=mode[2],
                size_share=None if public_size else SIZE_SHARE))
            has_oc = any(e.what == "O.C level errors" for e in ledger.entries)
            assert has_oc == (alpha == "oc" and depth > 1)


@pytest.mark.slow
def test_replace_one_and_laplace_beta_still_total_epsilon():
    """Replace-one: the row count is public (no noisy count), split and count sensitivities
    double; unfolded value leaves and a separately noised β_t."""
    eps = 0.8
    model = dpjax.fit(X, Y, epsilon=eps, key=0, neighbouring="replace_one", beta_mode="laplace",
                      n_trees=2, depth=1, **FIT)
    ledger = model.privacy
    assert ledger.neighbouring == "replace_one"
    assert_ledger(ledger, eps, expected_ledger(eps, 2, 1, 0.5, "oc", beta_mode="laplace",
                                               size_share=None))
    assert ledger.entries[-1].what == "leveraging coefficient β_t"
    assert ledger.entries[-1].mechanism == "discrete Laplace (sens. 2aM/ñ + rounding)"
    assert not any("O.C" in e.what for e in ledger.entries)  # d = 1: nothing to calibrate
    assert ledger.entries[0].mechanism == (
        "permute-and-flip (sens. 2·(Δ^(α)(ñ) + 2^-18·ñ))")  # doubled
    assert ledger.entries[1].mechanism == "discrete Laplace (range 2M)"  # value leaves, ±M


@pytest.mark.slow
def test_public_size_replaces_the_noisy_row_count():
    """Under add/remove the row count is private: without a public size a noisy count is
    released first (its share of ε, discrete Laplace of sensitivity 1); a declared size
    releases none and leaves the whole budget to the trees."""
    noisy = dpjax.fit(X, Y, epsilon=2.0, key=0, n_trees=3, depth=2, **FIT)
    declared = dpjax.fit(X, Y, epsilon=2.0, key=0, n_trees=3, depth=2, public_size=M_ROWS,
                         **FIT)
    assert noisy.privacy.entries[0].what == "row count"
    assert noisy.privacy.entries[0].count == 1
    assert not any(e.what == "row count" for e in declared.privacy.entries)
    assert_ledger(noisy.privacy, 2.0, expected_ledger(2.0, 3, 2, 0.5, "oc"))
    assert_ledger(declared.privacy, 2.0, expected_ledger(2.0, 3, 2, 0.5, "oc", size_share=None))
    # the count's share is the size_share hyper-parameter
    costs = fit_costs(3, 2, ("value", "fold", "sequential"), False, 0.2)(
        jnp.float32([2.0]), jnp.float32([-1.0]), jnp.float32([0.5]))
    ledger = dpjax.PrivacyLedger(requested_epsilon=2.0).with_costs(
        jax.tree.map(lambda a: a[0], costs))
    assert_ledger(ledger, 2.0, expected_ledger(2.0, 3, 2, 0.5, "oc", size_share=0.2))
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="public_size"):
            dpjax.fit(X, Y, epsilon=2.0, key=0, n_trees=3, depth=2, public_size=bad, **FIT)


@pytest.mark.slow
def test_noisy_row_count_sets_the_public_size():
    """With ``size=None`` the fit first releases ``m`` + discrete Laplace noise (key: the first
    half of the split key) at ``size_share·ε``, then fits exactly as with that size declared
    (minus the count's share of ε)."""
    key, eps = jax.random.key(9), 2.0
    codes, y = jnp.asarray(CODES), jnp.asarray(Y)
    common = dict(n_trees=2, depth=2, n_codes_per_feature=N_CODES, alpha=-1.0)
    model, costs = jax.jit(lambda k: fit_malpha(k, codes, y, eps, **common))(key)
    budget = tree_budgets(eps, 0.5, True, n_trees=2, depth=2, beta_oc=0.1, beta_share=0.1,
                          beta_mode="fold", leaf_composition="sequential",
                          size_share=SIZE_SHARE)
    count, count_cost = laplace_mechanism(jax.random.split(key)[0], jnp.float32(M_ROWS), 1.0,
                                          budget["size"], integer=True)
    assert costs["row count"].mechanism == "discrete Laplace (sens. 1)"
    assert float(costs["row count"].epsilon) == float(count_cost.epsilon)
    assert_spent(costs["row count"].epsilon, eps * SIZE_SHARE)
    # the same fit with the released count declared and ε reduced by the count's share
    declared, _ = jax.jit(lambda k, n: fit_malpha(k, codes, y, eps * (1 - SIZE_SHARE),
                                                   size=n, **common))(key, count)
    chex.assert_trees_all_equal(model.trees.feature, declared.trees.feature)
    chex.assert_trees_all_close(model, declared, rtol=1e-4, atol=1e-5)
    assert float(count) != M_ROWS  # the released count is noisy


@pytest.mark.slow
def test_exact_oc_under_dp_warns_and_is_not_private():
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        model = dpjax.fit(X, Y, epsilon=1.0, key=0, oc_alpha="exact", n_trees=1, depth=1, **FIT)
    assert model.privacy.private is False
    assert model.privacy.epsilon == math.inf
    assert [e.what for e in model.privacy.entries if not e.private] == [
        "O.C α from exact weighted errors (paper)"]
    assert model.privacy.not_private_reasons == ("O.C α from exact weighted errors (paper)",)
    # exact O.C with a fixed α reads nothing: private again
    fixed = dpjax.fit(X, Y, epsilon=1.0, key=0, oc_alpha="exact", alpha=0.5, n_trees=1, depth=1,
                      **FIT)
    assert_ledger(fixed.privacy, 1.0, expected_ledger(1.0, 1, 1, 0.5, 0.5))


@pytest.mark.slow
def test_paper_fast_beta_warns_and_is_not_private_through_fit():
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        model = dpjax.fit(X, Y, epsilon=1.0, key=0, beta_mode="paper_fast", alpha=0.5,
                          n_trees=1, depth=1, **FIT)
    assert model.privacy.private is False
    assert model.privacy.epsilon == math.inf
    assert model.privacy.not_private_reasons == ("β_t from the data without noise (paper_fast)",)


@pytest.mark.parametrize("leaf_mechanism", ["value", "counts"])
def test_paper_fast_beta_warns_and_is_not_private(leaf_mechanism):
    """The learner's list of non-private parts (the ledger marks each one): ``paper_fast`` β
    and exact O.C under DP warn; the private modes list nothing."""
    config = BOOSTED.replace(beta_mode="paper_fast", leaf_mechanism=leaf_mechanism, alpha=0.5)
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        reasons = config.not_private()
    assert reasons == ["β_t from the data without noise (paper_fast)"]
    ledger = dpjax.PrivacyLedger(requested_epsilon=1.0)
    for what in reasons:
        ledger = ledger.record(dpjax.privacy.LedgerEntry(what, "none", 0.0, private=False))
    assert ledger.private is False and ledger.epsilon == math.inf
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        assert BOOSTED.replace(oc_alpha="exact").not_private() == [
            "O.C α from exact weighted errors (paper)"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        assert BOOSTED.not_private() == []
        assert BOOSTED.replace(oc_alpha="exact", alpha=0.5).not_private() == []
