"""The RF-L / RF-E random-forest baselines of Nock & Henecka (spec
``boosted-dp-trees-malpha.md`` §6.5, §4.1), ``method="rf_laplace"`` / ``"rf_exponential"``:
defaults, ledgers, the neighbouring relation and the budget of each release."""

from __future__ import annotations

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.ensembles.random_trees import forest as rt
from dpjax.ensembles.random_trees import leaf_epsilon
from dpjax.mechanisms.exact import laplace_fraction
from dpjax.privacy.rounding import round_up
from tests.conftest import Z
from tests.helpers.fits import fit_random_trees
from tests.helpers.rf_baselines import (
    BOUNDS,
    D_DEFAULT,
    EPS,
    N_LEAVES,
    SLACK,
    T_DEFAULT,
    assert_one_hot,
    assert_within_budget,
    laplace_cost,
)

# --------------------------------------------------------------------------------------------
# RF-L defaults, ledger, neighbouring relation
# --------------------------------------------------------------------------------------------


def test_rf_laplace_defaults_one_hot_leaves_and_parallel_ledger(easy):
    (X, y), _ = easy
    model = dpjax.fit(X, y, method="rf_laplace", epsilon=EPS, bounds=BOUNDS, key=0)
    assert model.hyperparams == {
        "n_trees": 21, "depth": 4, "voting": "majority", "noise": "laplace",
        "threshold_range": "global", "leaf_estimate": "label", "budget": "parallel",
        "prior_share": 0.1, "min_signal": 0.3, "shrinkage": 1.0, "depth_signal": 0.0}
    chex.assert_shape([model.params.feature, model.params.threshold], (21, 15))
    chex.assert_shape(model.params.leaf, (21, 16, 2))
    assert_one_hot(model.params.leaf)
    # majority vote of 21 one-hot trees: class scores are multiples of 1/21
    proba = model.predict_proba(X)
    chex.assert_shape(proba, (400, 2))
    np.testing.assert_allclose(proba * 21, np.round(proba * 21), atol=1e-4)
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
    # the class prior at 10% of eps, then 21 tree releases (each tree's disjoint leaves
    # together, parallel composition) of (at most) 0.9 eps / 21 each
    ledger = model.privacy
    assert ledger.private and ledger.neighbouring == "add_remove"
    assert ledger.requested_epsilon == EPS
    prior, entry = ledger.entries
    assert prior.what == rt.PRIOR_LABEL and prior.count == 1
    assert prior.epsilon == pytest.approx(laplace_cost(0.1 * EPS, 1), rel=1e-5)
    assert entry.what == "leaf class counts"
    leaves = float(np.float32(0.9) * np.float32(EPS))
    assert entry.private and entry.count == T_DEFAULT
    assert entry.epsilon == pytest.approx(laplace_cost(leaves, T_DEFAULT), rel=1e-4)
    assert_within_budget(entry.epsilon, leaves / T_DEFAULT)
    assert entry.epsilon * entry.count <= EPS
    assert entry.mechanism == "discrete Laplace (L1 sens. 1)"
    assert_within_budget(ledger.epsilon, EPS)


@pytest.mark.slow
def test_rf_laplace_parallel_budget_and_rf_exponential_paper_ledgers(easy):
    """``budget="parallel"``: one release per tree (parallel over its disjoint leaves),
    ``eps/T`` each. RF-E with ``budget="paper"``: one permute-and-flip selection per leaf at
    ``eps/(T 2^d)``; under replace-one with the parallel budget each leaf selects at half the
    tree's budget (a replaced example can touch two leaves), which the ledger charges as the
    tree's budget."""
    (X, y), _ = easy
    for neighbouring, sensitivity in (("add_remove", 1.0), ("replace_one", 2.0)):
        model = dpjax.fit(X, y, method="rf_laplace", epsilon=EPS, bounds=BOUNDS, key=0,
                          budget="parallel", prior_share=0.0, neighbouring=neighbouring)
        (entry,) = model.privacy.entries
        assert entry.private and entry.count == T_DEFAULT
        assert entry.epsilon == pytest.approx(laplace_cost(EPS, T_DEFAULT, sensitivity),
                                              rel=1e-5)
        assert_within_budget(entry.total_epsilon, EPS)
        assert entry.mechanism == f"discrete Laplace (L1 sens. {sensitivity:g})"
    share = float(leaf_epsilon(jnp.float32(EPS), T_DEFAULT, D_DEFAULT, "paper"))
    model = dpjax.fit(X, y, method="rf_exponential", epsilon=EPS, bounds=BOUNDS, key=0,
                      budget="paper")
    (entry,) = model.privacy.entries
    assert entry.what == "leaf labels"
    assert entry.count == N_LEAVES and entry.mechanism == "permute-and-flip (sens. 1)"
    assert entry.epsilon == pytest.approx(share, rel=1e-6)  # permute-and-flip: its share
    assert entry.epsilon <= EPS / N_LEAVES
    assert_within_budget(model.privacy.epsilon, EPS)
    model = dpjax.fit(X, y, method="rf_exponential", epsilon=EPS, bounds=BOUNDS, key=0,
                      budget="parallel", prior_share=0.0, neighbouring="replace_one")
    (entry,) = model.privacy.entries
    assert entry.count == T_DEFAULT
    assert entry.epsilon == pytest.approx(float(leaf_epsilon(jnp.float32(EPS), T_DEFAULT,
                                                             D_DEFAULT, "parallel")), rel=1e-6)
    assert_within_budget(model.privacy.epsilon, EPS)


def test_rf_laplace_replace_one_doubles_sensitivity(easy):
    """Replace-one: count-vector sensitivity 2, so RF-L at 2 eps under replace-one releases the
    very same noisy counts (hence labels) as at eps under add/remove, with the same key."""
    (X, y), _ = easy
    add_remove = dpjax.fit(X, y, method="rf_laplace", epsilon=EPS, bounds=BOUNDS, key=3)
    replace = dpjax.fit(X, y, method="rf_laplace", epsilon=2 * EPS, bounds=BOUNDS, key=3,
                        neighbouring="replace_one")
    chex.assert_trees_all_equal(add_remove.params, replace.params)
    ledger = replace.privacy
    assert ledger.neighbouring == "replace_one"
    for entry, half in zip(ledger.entries, add_remove.privacy.entries, strict=True):
        assert "sens. 2" in entry.mechanism and entry.count == half.count
        assert entry.epsilon == 2 * half.epsilon
    assert_within_budget(ledger.epsilon, 2 * EPS)


def test_laplace_noise_scale_through_the_forest(monkeypatch):
    """With the leaf estimate replaced by the identity, ``fit_random_trees`` returns its noisy
    counts: integer noise whose mean absolute value is the discrete Laplace's ``2q/(1 - q^2)``,
    ``q = exp(-s/t)`` with scale ``t/s >= Delta / eps_each``, ``eps_each = eps / (T 2^d)``
    ("paper") or ``eps / T`` ("parallel"); sensitivity 2 at ``eps`` draws exactly the noise of
    sensitivity 1 at ``eps/2`` (same key)."""
    monkeypatch.setattr(rt, "leaf_distribution",
                        lambda key, counts, estimate="smoothed", pseudo=None: counts)
    rng = np.random.default_rng(2)
    codes = jnp.asarray(rng.integers(0, 10, (200, 3)), jnp.uint8)
    y = jnp.asarray(rng.integers(0, 2, 200), jnp.int32)
    fit = functools.partial(fit_random_trees, n_trees=21, depth=4,
                            n_codes_per_feature=np.full(3, 10), n_classes=2,
                            leaf_estimate="label")

    @jax.jit  # traced here, after the monkeypatch; one compilation for the five fits
    def counts(key, epsilon):
        return [fit(key, codes, y, e, sensitivity=s, budget=c)[0].leaf
                for e, s, c in ((None, 1.0, "paper"), (epsilon, 1.0, "paper"),
                                (epsilon, 2.0, "paper"), (epsilon / 2, 1.0, "paper"),
                                (epsilon, 1.0, "parallel"))]

    epsilon = 50.0
    true, leaf1, leaf2, half, tree1 = (np.asarray(a, np.float64)
                                       for a in counts(jax.random.key(5), epsilon))
    np.testing.assert_array_equal(true.sum(axis=(1, 2)), 200)  # really the exact counts
    np.testing.assert_array_equal(leaf2, half)
    # sensitivity 2 at eps: the scale of sensitivity 1 at eps / 2
    for noise, releases in ((leaf1 - true, N_LEAVES), (leaf2 - true, 2 * N_LEAVES),
                            (tree1 - true, T_DEFAULT)):
        assert np.all(noise == np.round(noise))
        share = leaf_epsilon(jnp.float32(epsilon), releases, 0, "parallel")
        t, s = (int(v) for v in laplace_fraction(round_up(1.0 / share)))
        assert releases / epsilon <= t / s <= releases / epsilon * (1 + SLACK)
        q = math.exp(-s / t)
        mean_abs = 2 * q / (1 - q**2)
        var_abs = 2 * q / (1 - q) ** 2 - mean_abs**2
        assert abs(np.abs(noise).mean() - mean_abs) < Z * math.sqrt(var_abs / noise.size), t / s


@pytest.mark.parametrize("composition", ["paper", "parallel"])
@pytest.mark.parametrize("sensitivity", [1.0, 2.0])
def test_budget_wiring_per_release(composition, sensitivity):
    """The epsilon and sensitivity of each release inside ``fit_random_trees``, read off the
    costs it returns: one count vector per tree ("parallel") or per leaf ("paper"), at ``eps`` over
    the number of releases (rounded down), for RF-L; and for RF-E one selection per leaf with
    utility sensitivity 1, a replaced example's two leaves of one tree sharing the tree's
    budget ("parallel": the leaves select at half of it, charged as the tree's)."""
    codes = jnp.zeros((4, 3), jnp.uint8)
    y = jnp.asarray([0, 1, 1, 0], jnp.int32)
    epsilon, n_trees, depth = 3.0, 5, 2
    releases = n_trees * (2**depth if composition == "paper" else 1)
    shape = (n_trees, 2**depth) if composition == "paper" else (n_trees,)
    costs = {noise: jax.jit(lambda key, noise=noise: fit_random_trees(
        key, codes, y, epsilon, n_trees=n_trees, depth=depth,
        n_codes_per_feature=np.full(3, 10), n_classes=2, sensitivity=sensitivity,
        noise=noise, leaf_estimate="label", budget=composition)[1])(
            jax.random.key(0)) for noise in ("laplace", "exponential")}
    (what, laplace), = costs["laplace"].items()
    assert what == "leaf class counts"
    assert laplace.mechanism == f"discrete Laplace (L1 sens. {sensitivity:g})"
    chex.assert_shape(laplace.epsilon, shape)
    np.testing.assert_allclose(laplace.epsilon, laplace_cost(epsilon, releases, sensitivity),
                               rtol=1e-5)
    assert_within_budget(float(np.asarray(laplace.epsilon, np.float64).sum()), epsilon)
    (what, selection), = costs["exponential"].items()
    assert what == "leaf labels"
    assert selection.mechanism == "permute-and-flip (sens. 1)"
    chex.assert_shape(selection.epsilon, shape)
    share = float(leaf_epsilon(jnp.float32(epsilon), releases, 0, "parallel"))
    np.testing.assert_allclose(selection.epsilon, share, rtol=1e-6)  # charged as the tree's
    assert_within_budget(float(np.asarray(selection.epsilon, np.float64).sum()), epsilon)
    np.testing.assert_array_equal(selection.delta, 0.0)
