"""DP mechanisms: the costs they report (pytrees, gating, parallel composition), the ledger
built from them, the learners' budget shares, and float32 rounding never giving less noise than
the reported cost pays for."""

from __future__ import annotations

from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.random_trees import leaf_epsilon
from dpjax.mechanisms import laplace_mechanism, permute_and_flip
from dpjax.mechanisms.exact import laplace_fraction
from dpjax.privacy import Cost, PrivacyLedger, parallel
from dpjax.privacy.rounding import round_up

# --------------------------------------------------------------------------------------------
# Costs: pytrees, gating, parallel composition, the ledger built from them
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cost_is_a_pytree_through_jit_vmap_and_scan():
    def release(key, epsilon):
        return laplace_mechanism(key, jnp.zeros(4), 1.0, epsilon, integer=True)[1]

    cost = jax.jit(release)(jax.random.key(0), 0.5)
    assert isinstance(cost, Cost) and cost.mechanism == "discrete Laplace"
    assert len(jax.tree.leaves(cost)) == 2
    batched_cost = jax.vmap(release, in_axes=(None, 0))(jax.random.key(0), jnp.ones(3))
    assert batched_cost.epsilon.shape == (3,)

    def step(carry, eps):
        return carry, release(jax.random.key(0), eps)

    _, scanned = jax.lax.scan(step, 0, jnp.asarray([0.5, 1.0]))
    assert scanned.epsilon.shape == (2,) and scanned.mechanism == "discrete Laplace"


def test_cost_gated_and_parallel():
    cost = Cost(jnp.asarray([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]), jnp.zeros((2, 3)), "m")
    gated = cost.gated(jnp.asarray([True, False])[:, None])
    np.testing.assert_allclose(gated.epsilon, [[0.1, 0.2, 0.3], [0, 0, 0]])
    assert gated.mechanism == "m"
    together = parallel(cost)
    np.testing.assert_allclose(together.epsilon, [0.3, 0.6])
    assert together.mechanism == "m"
    np.testing.assert_allclose(parallel(cost, axis=0).epsilon, [0.4, 0.5, 0.6])
    np.testing.assert_allclose(parallel(cost, touched=2).epsilon, [0.6, 1.2])
    np.testing.assert_allclose(parallel(cost, axis=(0, 1)).epsilon, 0.6)


def test_ledger_with_costs_groups_distinct_releases_in_order():
    costs = {
        "splits": Cost(np.float32([[0.1, 0.05, 0.05], [0.1, 0.05, 0.05]]), np.float32(0.0),
                       "permute-and-flip"),
        "skipped": Cost(np.zeros(3, np.float32), np.zeros(3, np.float32), "discrete Laplace"),
        "leaves": Cost(np.float32([0.2, 0.0]), np.float32([1e-6, 0.0]), "discrete Laplace"),
    }
    ledger = PrivacyLedger(requested_epsilon=1.0).with_costs(costs)
    got = [(e.what, e.mechanism, e.epsilon, e.delta, e.count) for e in ledger.entries]
    assert got == [
        ("splits", "permute-and-flip", pytest.approx(0.05), 0.0, 4),
        ("splits", "permute-and-flip", pytest.approx(0.1), 0.0, 2),
        ("leaves", "discrete Laplace", pytest.approx(0.2), pytest.approx(1e-6), 1),
    ]  # releases that spent nothing are left out
    assert ledger.epsilon == pytest.approx(4 * 0.05 + 2 * 0.1 + 0.2, rel=1e-6)
    assert ledger.delta == pytest.approx(1e-6)
    assert ledger.private
    assert PrivacyLedger(requested_epsilon=1.0).with_costs({}).entries == ()


# --------------------------------------------------------------------------------------------
# Budget shares
# --------------------------------------------------------------------------------------------


_RNG = np.random.default_rng(7)
BUDGETS = [0.01, 0.1, 0.3, 1 / 3, 0.7, 1.0, 2.2, 10.0, 1e-6, 123.456,
           *(float(v) for v in _RNG.uniform(1e-3, 20, 30))]


def test_budget_shares_never_exceed():
    """The per-release shares the learners use (float32, rounded down: ``leaf_epsilon``) times
    their count never exceed the requested budget, and stay within a few ulps of it; the ledger
    built from them stays within the budget."""
    counts = np.asarray([*range(1, 120), 127, 255, 1000, 1001, 4096, 99_991])
    shares = jax.jit(jax.vmap(jax.vmap(lambda e, k: leaf_epsilon(e, k, 0, "tree"),
                                       in_axes=(None, 0)), in_axes=(0, None)))
    all_shares = np.asarray(shares(jnp.float32(BUDGETS), jnp.float32(counts)), np.float64)
    for eps, row in zip(BUDGETS, all_shares, strict=True):
        assert np.all(row > 0)
        assert np.all(row * counts <= eps), eps
        assert np.all(row >= eps / counts * (1 - 1e-6))
        for share, k in zip(row[::25], counts[::25], strict=True):
            ledger = PrivacyLedger(requested_epsilon=eps).with_costs(
                {"x": Cost(np.full(k, share, np.float32), np.float32(0.0), "Laplace")})
            assert ledger.epsilon <= eps


# --------------------------------------------------------------------------------------------
# float32 rounding never gives less noise than the reported cost pays for
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sensitivity", [1.0, 2.0, 3.0])
def test_costs_are_conservative_after_float32_rounding(sensitivity):
    """Over a dense grid of budgets split over ``k`` releases (float32, as the learners do):
    the exact discrete-Laplace scale ``t/s`` is >= ``Delta/eps_each`` (exact rational
    arithmetic), the reported cost ``Delta s/t`` is <= ``eps_each`` and ``k`` of them fit in
    the requested budget; permute-and-flip reports exactly the budget it was given."""
    epsilons = np.concatenate([np.logspace(-3, 2, 400), [0.1, 0.3, 1 / 3, 0.7, 1.1, 25.0]])

    @jax.jit
    def costs(eps_tree):
        each = leaf_epsilon(eps_tree, 1, 0, "tree")
        _, lap = laplace_mechanism(jax.random.key(0), jnp.zeros(2), sensitivity, each,
                                   integer=True)
        _, pf = permute_and_flip(jax.random.key(0), jnp.zeros(2), sensitivity, each)
        t, s = laplace_fraction(round_up(jnp.ceil(jnp.float32(sensitivity)) / each))
        return each, lap.epsilon, pf.epsilon, t, s

    for k in (1, 3, 7, 11, 21, 101):
        each, lap, pf, t, s = (np.asarray(a) for a in jax.vmap(costs)(
            jnp.float32(epsilons) / jnp.float32(k)))
        each64 = each.astype(np.float64)
        assert np.all(each64 * k <= epsilons)
        assert np.all(lap.astype(np.float64) <= each64)
        assert np.all(lap.astype(np.float64) * k <= epsilons)
        np.testing.assert_allclose(lap, sensitivity * s.astype(np.float64) / t, rtol=1e-7)
        np.testing.assert_array_equal(pf, each)
        for ti, si, e in zip(t[::40], s[::40], each[::40], strict=True):
            assert Fraction(int(ti), int(si)) >= Fraction(sensitivity) / Fraction(float(e))
