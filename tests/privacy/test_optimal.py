"""The optimal composition of pure releases (:mod:`dpjax.privacy.optimal`, the ``"optimal"``
route): the float64 compose against Kairouz, Oh & Viswanath's closed form and Google's
``dp-accounting``, the float32 split composing back within its total, and the route in ledgers,
the accountant and a boosted fit."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.privacy import BudgetAccountant, LedgerEntry, PrivacyLedger
from dpjax.privacy.composition import BASIC, OPTIMAL, ZCDP, round_budget
from dpjax.privacy.optimal import (
    DELTA_MARGIN,
    MAX_SUPPORT,
    coarser_groups,
    composed_epsilon,
    hockey_stick,
    loss_distribution,
    round_epsilon,
    support_size,
)

common = pytest.importorskip("dp_accounting.pld.common")
pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")


def kov_delta(epsilon0: float, k: int, i: int) -> float:
    """Kairouz, Oh & Viswanath 2015, Thm 3.3: ``k`` ``ε_0``-DP releases are
    ``((k − 2i)ε_0, δ_i)``-DP, ``δ_i = Σ_{l<i} C(k,l)(e^{(k−l)ε_0} − e^{(k−2i+l)ε_0})
    /(1 + e^{ε_0})^k``, and no smaller ``δ`` holds for every such mechanism."""
    total = sum(math.comb(k, j) * (math.exp((k - j) * epsilon0)
                                   - math.exp((k - 2 * i + j) * epsilon0)) for j in range(i))
    return total / (1.0 + math.exp(epsilon0)) ** k


def pure_pld_epsilon(groups: list[tuple[float, int]], delta: float) -> float:
    """dp-accounting's ``ε`` at ``δ`` of ``count`` generic ``ε``-DP releases per group (its
    pessimistic PLD of ``(ε, 0)``-DP parameters, composed)."""
    total = None
    for epsilon, count in groups:
        one = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(epsilon, 0.0),
                                          value_discretization_interval=1e-6)
        one = one.self_compose(count)
        total = one if total is None else total.compose(one)
    return total.get_epsilon_for_delta(delta)


@pytest.mark.parametrize(("epsilon0", "k"), [(0.05, 30), (0.3, 12), (1.0, 5), (0.01, 200)])
def test_loss_distribution_reproduces_the_closed_form(epsilon0, k):
    """At ``ε = (k − 2i)ε_0`` the hockey stick of the enumerated loss is KOV's ``δ_i``."""
    loss, log_p = loss_distribution([(epsilon0, k)])
    np.testing.assert_allclose(np.exp(log_p).sum(), 1.0, rtol=1e-12)
    for i in range(0, k // 2, max(k // 10, 1)):
        np.testing.assert_allclose(hockey_stick((k - 2 * i) * epsilon0, loss, log_p),
                                   kov_delta(epsilon0, k, i), rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize(("groups", "delta"), [
    ([(0.05, 30)], 1e-6), ([(0.01, 1), (0.02, 40)], 1e-6), ([(0.5, 3)], 1e-5),
    ([(0.1, 1), (0.03, 8), (0.0175, 32)], 1e-6), ([(0.2, 20), (0.4, 5)], 1e-8)])
def test_composed_epsilon_agrees_with_dp_accounting(groups, delta):
    """dpjax's exact enumeration and dp-accounting's PLD (a pessimistic discretisation, so
    at or above the exact value) agree to its grid; both below basic composition."""
    ours = composed_epsilon([e for e, _ in groups], [c for _, c in groups], delta)
    theirs = pure_pld_epsilon(groups, delta)
    steps = sum(c for _, c in groups)
    assert ours <= theirs + 1e-9
    assert theirs - ours <= 2e-6 * steps + 1e-6
    assert ours <= math.fsum(e * c for e, c in groups)


def test_composed_epsilon_is_basic_without_delta_and_groups_beyond_the_support():
    """Without ``δ`` the sum; past :data:`MAX_SUPPORT` loss values the releases are grouped by
    rounds (the gcd of the counts), a valid bound between the exact and the sequential one."""
    assert composed_epsilon([0.1, 0.2], [3, 2], 0.0) == pytest.approx(0.7)
    epsilons, counts = [0.01 + 1e-4 * j for j in range(6)], [40] * 6
    assert support_size(list(zip(epsilons, counts, strict=True))) > MAX_SUPPORT
    grouped = composed_epsilon(epsilons, counts, 1e-6)
    assert grouped == composed_epsilon([sum(epsilons)], [40], 1e-6)
    assert grouped < 40 * sum(epsilons)
    assert coarser_groups([(0.1, 8), (0.05, 32)]) == [(pytest.approx(0.3), 8)]


SPLITS = list(itertools.product([0.1, 1.0, 10.0], [1, 8, 30, 120], [1e-6, 1e-4]))


@pytest.mark.parametrize(("epsilon", "rounds", "delta"), SPLITS)
def test_the_split_composes_back_within_its_total(epsilon, rounds, delta):
    """``R`` rounds of the route's split after a 10% release compose (the release
    sequentially, the rounds exactly in float64) to at most ``ε`` at ``δ``; the split is at
    least the sequential and zCDP ones, and :func:`round_epsilon`'s rounds alone stay within
    ``(1 − DELTA_MARGIN)·δ``."""
    fixed = float(jnp.float32(0.1 * epsilon))
    each = float(OPTIMAL.per_round(epsilon, fixed, rounds, delta, most=128))
    assert fixed + composed_epsilon([each], [rounds], delta) <= epsilon
    alone = float(round_epsilon(epsilon, rounds, delta, most=128))
    assert composed_epsilon([alone], [rounds], (1.0 - DELTA_MARGIN) * delta * 1.001) <= epsilon
    assert each >= float(BASIC.per_round(epsilon, fixed, rounds, delta))
    assert each >= float(ZCDP.per_round(epsilon, fixed, rounds, delta)) * (1 - 1e-6)


@pytest.mark.parametrize(("epsilon", "share"),
                         list(itertools.product([0.1, 1.0, 10.0], [0.3, 0.7])))
def test_a_round_of_several_releases_is_split_as_such(epsilon, share):
    """An oblivious round (leaves ``1 − s``, four draws of ``s/4``): its split composes back
    within ``ε`` counting the releases apart, and is larger than a round taken as one."""
    rounds, levels = 8, 4
    shares = ((1.0 - share, 1), (share / levels, levels))
    each = float(round_epsilon(epsilon, rounds, 1e-6, most=rounds, shares=shares))
    whole = float(round_epsilon(epsilon, rounds, 1e-6, most=rounds))
    releases = [float(np.float32((1 - share) * each)), float(np.float32(share * each / levels))]
    assert composed_epsilon(releases, [rounds, rounds * levels], 1e-6) <= epsilon
    assert each > whole


def test_the_split_is_one_program_over_budgets_and_counts():
    """Traced ``ε`` and ``R`` (a sweep's ``vmap``) give the scalar splits; past ``most`` the
    sequential split."""
    epsilons, rounds = jnp.array([0.1, 1.0, 10.0]), jnp.array([30.0, 8.0, 120.0])
    swept = jax.jit(jax.vmap(lambda e, r: round_epsilon(e, r, 1e-6, most=128)))(
        epsilons, rounds)
    one = [float(round_epsilon(float(e), float(r), 1e-6, most=128))
           for e, r in zip(epsilons, rounds, strict=True)]
    np.testing.assert_allclose(np.asarray(swept), one, rtol=1e-6)
    assert float(round_epsilon(1.0, 40, 1e-6, most=20)) == float(
        BASIC.per_round(1.0, 0.0, 40, 1e-6))


def test_the_route_needs_a_bound_for_traced_rounds():
    assert float(OPTIMAL.per_round(1.0, 0.1, 30, 1e-6)) > float(ZCDP.per_round(1.0, 0.1, 30,
                                                                                 1e-6))
    with pytest.raises(ValueError, match="most="):
        jax.jit(lambda r: OPTIMAL.per_round(1.0, 0.1, r, 1e-6))(30.0)


LEDGERS = {
    "laplace rounds": [LedgerEntry("prior", "Laplace", 0.1),
                       LedgerEntry("rounds", "Laplace", 0.05, count=40)],
    "gaussian rounds": [LedgerEntry("prior", "Laplace", 0.2),
                        LedgerEntry("rounds", "Gaussian", 0.4, delta=1e-7, count=30,
                                    rho=0.002)],
    "oblivious": [LedgerEntry("prior", "Laplace", 0.01), LedgerEntry("leaves", "Laplace",
                                                                     0.006, count=8),
                  LedgerEntry("draws", "permute-and-flip", 0.0035, count=32)],
}


@pytest.mark.parametrize("name", sorted(LEDGERS))
def test_the_ledger_reports_the_tighter_view(name):
    """A ledger with ``composition="optimal"`` reports at most the zCDP route's and basic
    composition's ``ε``, and at least its single releases plus the exact composition of its
    repeated ones (the block)."""
    entries, delta = LEDGERS[name], 1e-6
    ledger = PrivacyLedger(tuple(entries), requested_epsilon=math.inf, requested_delta=delta,
                           composition="optimal")
    zcdp = PrivacyLedger(tuple(entries), requested_epsilon=math.inf, requested_delta=delta,
                         composition="zcdp")
    assert ledger.epsilon <= min(zcdp.epsilon, ledger.basic_epsilon)
    block = [e for e in entries if e.delta == 0 and e.count > 1]
    singles = sum(e.epsilon for e in entries if e.delta == 0 and e.count == 1)
    assert ledger.epsilon >= singles + composed_epsilon([e.epsilon for e in block],
                                                        [e.count for e in block], delta) - 1e-12
    assert "optimal" in str(ledger)
    if name != "gaussian rounds":
        assert ledger.epsilon < 0.9 * zcdp.epsilon


def test_the_accountant_refuses_the_optimal_route():
    """Fits accounted one after another choose their budgets from what came back: the
    optimal composition (budgets fixed in advance) does not cover them."""
    with pytest.raises(ValueError, match="fixed in advance"):
        BudgetAccountant(epsilon=10.0, delta=1e-6, composition="optimal")


@pytest.mark.parametrize("composition", ["zcdp", "optimal"])
def test_round_budget_routes_the_shares(composition):
    """:func:`round_budget` passes a round's releases to the route."""
    shares = ((0.3, 1), (0.175, 4))
    got = float(round_budget(1.0, 0.1, 8, 1e-6, composition, shares=shares, most=8))
    want = float((OPTIMAL if composition == "optimal" else ZCDP).per_round(
        1.0, 0.1, 8, 1e-6, shares, 8))
    assert got == want


@pytest.mark.parametrize("weak_learner", ["stump", "tree"])
def test_smooth_boosting_takes_the_optimal_route_within_its_request(weak_learner):
    """``smooth_boost(accounting="optimal")``: its rounds get at least the zCDP route's budget
    and the ledger (the released size, then the rounds as one block) stays within ``ε``."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0, 1, 300), "b": rng.uniform(0, 1, 300)})
    y = (X.a > 0.5).astype(int).to_numpy()
    bounds = {"a": (0.0, 1.0), "b": (0.0, 1.0)}
    per_round = {}
    for accounting in ("zcdp", "optimal"):
        model = dpjax.fit(X, y, method="smooth_boost", epsilon=1.0, delta=1e-6, bounds=bounds,
                          key=0, accounting=accounting, weak_learner=weak_learner,
                          n_rounds=30, min_signal=1e-3)
        assert model.privacy.epsilon <= 1.0
        per_round[accounting] = max(e.epsilon for e in model.privacy.entries if e.count > 1)
    assert per_round["optimal"] > per_round["zcdp"]
