"""dpjax's own composition arithmetic cross-checked against Google's ``dp-accounting`` (a
well-kept accountant: Rényi DP and privacy-loss distributions, Mironov 2017; Koskela et al.
2020; Doroshenko et al. 2022).

Two directions: what dpjax *reports* (a ledger's or the accountant's total, a mechanism's own
``(ε, δ)``) must be at least the tight accountant's ``ε`` for the same releases (else dpjax would
claim less than it spent); what dpjax *splits* (per-release budgets from a total) must compose,
under the tight accountant, to at most the total (else the split would overspend). Each
release is the event dp-accounting knows: a pure ``ε_i``-DP Laplace release is
``LaplaceDpEvent(1/ε_i)`` (sensitivity 1), a ``ρ``-zCDP Gaussian release
``GaussianDpEvent(1/sqrt(2ρ))``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpjax.mechanisms.gaussian import gaussian_cost
from dpjax.privacy import (
    ADVANCED,
    BASIC,
    ZCDP,
    BudgetAccountant,
    LedgerEntry,
    PrivacyLedger,
    zcdp_to_dp,
)
from dpjax.privacy.composition import (
    round_budget,
    route,
    zcdp_budget,
    zcdp_epsilon,
)
from tests.helpers.newton_budget import newton_split

dp_event = pytest.importorskip("dp_accounting.dp_event")
pld = pytest.importorskip("dp_accounting.pld")
rdp = pytest.importorskip("dp_accounting.rdp")

SLACK = 1e-9
"""Float slack of a comparison (dp-accounting rounds its own way, outward)."""


def laplace(epsilon: float) -> object:
    return dp_event.LaplaceDpEvent(1.0 / epsilon)


def gaussian(rho: float) -> object:
    return dp_event.GaussianDpEvent(1.0 / math.sqrt(2.0 * rho))


def pld_epsilon(events: list[tuple[object, int]], delta: float) -> float:
    """The privacy-loss-distribution accountant's ``ε`` at ``δ`` (a pessimistic estimate: an
    upper bound of the exact value, within its discretisation)."""
    accountant = pld.PLDAccountant()
    for event, count in events:
        accountant.compose(event, count)
    return accountant.get_epsilon(delta)


def entry_events(entries: list[LedgerEntry]) -> list[tuple[object, int]]:
    return [(gaussian(e.rho) if e.rho is not None else laplace(e.epsilon), e.count)
            for e in entries]


# --- what dpjax reports is at least the tight accountant's ε -----------------------------


@pytest.mark.parametrize(("rho", "delta"), list(itertools.product([1e-3, 0.05, 0.5, 3.0],
                                                                  [1e-9, 1e-6, 1e-3])))
def test_zcdp_conversion_upper_bounds_the_renyi_accountant(rho, delta):
    """Bun & Steinke's ``ρ + 2·sqrt(ρ ln(1/δ))`` holds: at least the Rényi accountant's
    conversion of the same ``ρ``-zCDP event (Canonne et al.'s tighter one), and within a factor
    of two of it."""
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_event.ZCDpEvent(rho))
    tight = accountant.get_epsilon(delta)
    ours = zcdp_to_dp(rho, delta)
    assert ours >= tight - SLACK
    assert ours <= 2.0 * tight


LEDGERS = {
    "laplace rounds": [LedgerEntry("prior", "Laplace", 0.1),
                       LedgerEntry("rounds", "Laplace", 0.05, count=40)],
    "gaussian rounds": [LedgerEntry("prior", "Laplace", 0.2),
                        LedgerEntry("rounds", "Gaussian", 0.4, delta=1e-7, count=30,
                                    rho=0.002)],
    "few large": [LedgerEntry("splits", "permute-and-flip", 0.5, count=3)],
}


@pytest.mark.parametrize("name", sorted(LEDGERS))
@pytest.mark.parametrize("delta", [1e-6, 1e-4])
def test_ledger_totals_upper_bound_the_pld_of_their_releases(name, delta):
    """Every composition route's total of a ledger (basic, advanced, zCDP; what the model's
    ledger reports is the smallest of those that apply) is at least the PLD accountant's ``ε``
    of the same releases at the same ``δ``."""
    entries = LEDGERS[name]
    tight = pld_epsilon(entry_events(entries), delta)
    basic = BASIC.compose(entries, delta)[0]
    assert basic >= tight - SLACK
    zcdp = ZCDP.compose(entries, delta)
    assert zcdp is not None and zcdp[0] >= tight - SLACK
    if all(e.delta == 0 for e in entries):
        advanced = ADVANCED.compose(entries, delta)
        assert advanced is not None and advanced[0] >= tight - SLACK
    for composition in ("zcdp", "advanced"):
        ledger = PrivacyLedger(tuple(entries), requested_epsilon=math.inf,
                               requested_delta=delta, composition=composition)
        assert ledger.epsilon >= tight - SLACK
        assert ledger.epsilon <= basic


def test_a_single_pure_release_is_tight():
    """One ``ε``-DP Laplace release: basic composition is exact (PLD at a negligible ``δ``
    agrees to its discretisation)."""
    for epsilon in (0.1, 1.0, 3.0):
        entries = [LedgerEntry("counts", "Laplace", epsilon)]
        assert BASIC.compose(entries, 0.0)[0] == epsilon
        assert pld_epsilon(entry_events(entries), 1e-12) == pytest.approx(epsilon, abs=1e-3)


@pytest.mark.parametrize("composition", ["basic", "advanced", "zcdp"])
def test_the_budget_accountant_upper_bounds_the_pld_of_every_fit(composition):
    """The accountant's total over several fits (each a ledger of pure releases) is at least
    the PLD accountant's ``ε`` of all their releases, at the accountant's ``δ``."""
    delta = 1e-5
    accountant = BudgetAccountant(epsilon=100.0, delta=delta, composition=composition)
    fits = [[LedgerEntry("rounds", "Laplace", 0.02, count=25)],
            [LedgerEntry("prior", "Laplace", 0.1), LedgerEntry("rounds", "Laplace", 0.03,
                                                                count=30)],
            [LedgerEntry("splits", "permute-and-flip", 0.2, count=4)]]
    for entries in fits:
        accountant.spend(PrivacyLedger(tuple(entries), requested_epsilon=100.0,
                                       requested_delta=delta))
    spent, spent_delta = accountant.total()
    assert spent_delta <= delta * (1 + 1e-12)
    tight = pld_epsilon(entry_events([e for entries in fits for e in entries]), delta)
    assert spent >= tight - SLACK


@pytest.mark.parametrize(("l2", "rho", "delta"), list(itertools.product(
    [1.0, 3.5], [1e-4, 0.02, 0.8], [1e-8, 1e-5])))
def test_a_gaussian_release_states_at_least_its_pld_epsilon(l2, rho, delta):
    """The discrete Gaussian's own cost (the ``ρ`` its grid spends and the ``(ε, δ)`` it states
    for itself, float32 rounded up) is at least the PLD ``ε`` of a Gaussian of that ``ρ``."""
    cost = gaussian_cost(l2, rho, 4, bound=1e3, delta=delta)
    spent = float(cost.rho)
    assert spent <= rho
    assert float(cost.epsilon) >= pld_epsilon([(gaussian(spent), 1)], delta) - SLACK
    assert float(cost.epsilon) >= zcdp_to_dp(spent, delta) * (1 - 1e-6)
    assert float(zcdp_epsilon(spent, delta)) == float(cost.epsilon)


# --- what dpjax splits composes within the total under the tight accountant ----------------


@pytest.mark.parametrize(("epsilon", "delta"), list(itertools.product([0.1, 1.0, 8.0],
                                                                      [1e-6, 1e-4])))
def test_zcdp_budget_converts_back_within_epsilon(epsilon, delta):
    """``ρ(ε, δ)`` of :func:`zcdp_budget` is at most ``ε`` for the Rényi accountant too."""
    rho = float(zcdp_budget(epsilon, delta))
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_event.ZCDpEvent(rho))
    assert accountant.get_epsilon(delta) <= epsilon
    assert zcdp_to_dp(rho, delta) <= epsilon


@pytest.mark.parametrize(("epsilon", "rounds", "delta", "gaussian_rounds"), [
    (0.1, 10, 1e-6, False), (1.0, 40, 1e-6, False), (1.0, 200, 1e-5, False),
    (8.0, 3, 1e-6, False), (0.5, 30, 1e-6, True), (4.0, 100, 1e-5, True),
    (0.05, 3, 1e-6, True)])
@pytest.mark.parametrize("scout", [False, True])
def test_prior_and_rounds_split_stays_within_the_total(epsilon, rounds, delta,
                                                       gaussian_rounds, scout):
    """Newton boosting's split (Laplace class counts: the prior, or ``noise="auto"``'s scout
    and the prior's rest; then ``R`` equal rounds: pure ones of the zCDP route's ``round_budget``,
    sequential or zCDP share, or Gaussian ones of ``round_rho``) composes to at most ``ε``
    under the PLD accountant at ``δ``."""
    counts, each = newton_split(epsilon, rounds, delta,
                                "gaussian" if gaussian_rounds else "laplace", scout)
    rounds_event = gaussian(each) if gaussian_rounds else laplace(each)
    events = [*((laplace(c), 1) for c in counts), (rounds_event, rounds)]
    assert pld_epsilon(events, delta) <= epsilon


@pytest.mark.parametrize(("composition", "gaussian_rounds"), [
    ("basic", False), ("advanced", False), ("zcdp", False), ("zcdp", True)])
@pytest.mark.parametrize(("epsilon", "rounds"), [(0.5, 15), (2.0, 60), (6.0, 200)])
def test_round_budgets_beside_a_fixed_release_stay_within_the_total(composition,
                                                                    gaussian_rounds,
                                                                    epsilon, rounds):
    """Smooth boosting's split (a released size at 5% of ``ε``, then ``r`` equal rounds by the
    route, or Gaussian rounds) composes to at most ``ε`` under the PLD accountant."""
    delta = 1e-6
    fixed = 0.05 * epsilon
    each = float(round_budget(epsilon, fixed, rounds, delta, composition, gaussian_rounds))
    rounds_event = gaussian(0.5 * each**2) if gaussian_rounds else laplace(each)
    assert pld_epsilon([(laplace(fixed), 1), (rounds_event, rounds)], delta) <= epsilon
    # and the route's own total of those releases holds the request too
    entries = [LedgerEntry("size", "Laplace", fixed),
               LedgerEntry("rounds", "Laplace", each, count=rounds)]
    if not gaussian_rounds:
        total = route(composition).compose(entries, delta)
        basic = BASIC.compose(entries, delta)[0]
        assert min(basic, np.inf if total is None else total[0]) <= epsilon * (1 + 1e-6)
