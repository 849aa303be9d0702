"""The privacy ledger's composition (basic, advanced, zCDP), non-private entries, its text and
the validation of epsilon."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpjax.privacy import (
    LedgerEntry,
    PrivacyLedger,
    advanced_composition,
    check_epsilon,
    zcdp_to_dp,
)

# --------------------------------------------------------------------------------------------
# Composition
# --------------------------------------------------------------------------------------------


def test_basic_composition_totals():
    ledger = PrivacyLedger(requested_epsilon=2.0)
    ledger = ledger.record(LedgerEntry("counts", "Laplace", 0.1, count=5))
    ledger2 = ledger.record(LedgerEntry("means", "Gaussian", 0.25, delta=1e-6, count=4))
    assert len(ledger.entries) == 1  # record returns a new ledger
    assert ledger.epsilon == pytest.approx(0.5)
    assert ledger2.epsilon == pytest.approx(1.5)
    assert ledger2.delta == pytest.approx(4e-6)
    assert ledger2.private
    assert ledger2.not_private_reasons == ()
    assert ledger2.entries[1].total_epsilon == pytest.approx(1.0)
    assert ledger2.entries[1].total_delta == pytest.approx(4e-6)


def test_non_private_entry_makes_epsilon_infinite():
    ledger = PrivacyLedger(requested_epsilon=1.0).record(LedgerEntry("counts", "Laplace", 0.5))
    bad = ledger.record(LedgerEntry("bounds from data", "none", 0.0, private=False))
    assert bad.entries[1].total_epsilon == math.inf
    assert not bad.private
    assert bad.epsilon == math.inf
    assert "bounds from data" in bad.not_private_reasons
    with pytest.raises(ValueError, match="not differentially private"):
        bad.advanced(1e-6)
    with pytest.raises(ValueError, match="not differentially private"):
        bad.zcdp(1e-6)


def test_epsilon_none_is_not_private():
    ledger = PrivacyLedger(requested_epsilon=None)
    assert not ledger.private
    assert ledger.epsilon == math.inf
    assert any("epsilon=None" in r for r in ledger.not_private_reasons)


def test_advanced_composition_hand_computation():
    eps, k, slack = 0.1, 10, 1e-5
    expected = math.sqrt(2 * math.log(1 / slack) * k * eps**2) + k * eps * (math.exp(eps) - 1)
    assert advanced_composition([eps] * k, slack) == pytest.approx(expected, rel=1e-12)
    hetero = [0.05, 0.2, 0.3]
    expected = (math.sqrt(2 * math.log(1e3) * sum(e * e for e in hetero))
                + sum(e * (math.exp(e) - 1) for e in hetero))
    assert advanced_composition(hetero, 1e-3) == pytest.approx(expected, rel=1e-12)
    for slack in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="delta_slack"):
            advanced_composition([0.1], slack)


def test_advanced_composition_vs_basic():
    many_small = PrivacyLedger(requested_epsilon=1.0).record(
        LedgerEntry("counts", "Laplace", 0.01, count=100))
    eps_adv, delta = many_small.advanced(1e-6)
    raw = advanced_composition([0.01] * 100, 1e-6)
    assert eps_adv == pytest.approx(raw, rel=1e-12)
    assert eps_adv < many_small.epsilon  # advanced wins with many small releases
    assert delta == pytest.approx(1e-6)
    few_large = PrivacyLedger(requested_epsilon=2.0).record(
        LedgerEntry("counts", "Laplace", 1.0, count=2))
    assert advanced_composition([1.0, 1.0], 1e-6) > few_large.epsilon
    eps_adv, _ = few_large.advanced(1e-6)
    assert eps_adv == pytest.approx(few_large.epsilon)  # the min of the two bounds


def test_zcdp_conversion():
    rho, delta = 0.05, 1e-6
    assert zcdp_to_dp(rho, delta) == pytest.approx(
        rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-12)
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="delta"):
            zcdp_to_dp(rho, bad)
    pure = PrivacyLedger(requested_epsilon=1.0).record(
        LedgerEntry("counts", "Laplace", 0.1, count=10))
    eps, d = pure.zcdp(delta)
    assert d == delta
    assert eps == pytest.approx(zcdp_to_dp(10 * 0.1**2 / 2, delta), rel=1e-12)
    gauss = pure.record(LedgerEntry("sums", "Gaussian", 0.5, delta=1e-7, count=3, rho=0.02))
    eps, _ = gauss.zcdp(delta)
    assert eps == pytest.approx(zcdp_to_dp(10 * 0.1**2 / 2 + 3 * 0.02, delta), rel=1e-12)
    no_rho = pure.record(LedgerEntry("sums", "Gaussian", 0.5, delta=1e-7))
    with pytest.raises(ValueError, match="rho"):
        no_rho.zcdp(delta)


def test_ledger_str():
    ledger = PrivacyLedger(requested_epsilon=1.0).record(
        LedgerEntry("leaf counts", "Laplace", 0.25, count=4))
    text = str(ledger)
    assert "leaf counts" in text
    assert "spent: epsilon = 1" in text
    assert "requested epsilon = 1" in text
    assert "NOT DIFFERENTIALLY PRIVATE" not in text
    assert "add/remove-one" in text
    bad = PrivacyLedger(requested_epsilon=1.0, neighbouring="replace_one").record(
        LedgerEntry("bounds read off the data", "none", 0.0, private=False))
    text = str(bad)
    assert "NOT DIFFERENTIALLY PRIVATE" in text
    assert "bounds read off the data" in text
    assert "replace-one" in text
    assert "NOT DIFFERENTIALLY PRIVATE" in str(PrivacyLedger(requested_epsilon=None))


@pytest.mark.parametrize("value", [0, 0.0, -1.0, -1e-9, float("nan"), float("inf"),
                                   -float("inf"), "abc", "1.0", None, [1.0], True])
def test_check_epsilon_rejects(value):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(value)


@pytest.mark.parametrize("value", [1e-9, 0.5, 1, 10.0, np.float32(2.0)])
def test_check_epsilon_accepts(value):
    assert check_epsilon(value) == pytest.approx(float(value))
    assert isinstance(check_epsilon(value), float)


def test_ledger_takes_the_zcdp_view_where_basic_composition_would_exceed_delta():
    """A large Laplace prior beside two small Gaussian releases whose own ``δ`` (each ``ρ``
    converted alone, rounded above ``δ``) sums past the requested ``δ``: basic composition's
    ``ε`` is the smaller, but its ``δ`` does not fit, so the ledger reports the zCDP view."""
    delta, rho = 1e-6, 1e-6
    ledger = PrivacyLedger((LedgerEntry("prior", "Laplace", 0.3),
                            LedgerEntry("rounds", "Gaussian", float(zcdp_to_dp(rho, delta)),
                                        delta=1.5 * delta, count=2, rho=rho)),
                           requested_epsilon=2.0, requested_delta=delta, composition="zcdp")
    assert ledger.basic_epsilon < ledger.zcdp_view[0] <= 2.0
    assert (ledger.epsilon, ledger.delta) == ledger.zcdp_view
    assert ledger.delta <= delta
