"""``dpjax.BudgetAccountant``: a total budget across fits, sweeps and scikit-learn searches."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

import dpjax
from dpjax.privacy import (
    BudgetAccountant,
    BudgetExceededError,
    LedgerEntry,
    PrivacyLedger,
    advanced_composition,
    zcdp_to_dp,
)

SMALL = dict(method="random_trees", n_trees=3, depth=2)


def test_fits_spend_until_the_total_and_the_next_is_refused_before_any_work(data):
    X, y = data
    accountant = BudgetAccountant(epsilon=2.5)
    spent = [dpjax.fit(X, y, epsilon=1.0, bounds=(0, 1), key=k, accountant=accountant,
                       **SMALL).privacy.epsilon for k in range(2)]
    assert accountant.total() == (pytest.approx(math.fsum(spent), rel=1e-12), 0.0)
    assert accountant.remaining()[0] == pytest.approx(2.5 - math.fsum(spent))
    # refused before anything is read: even a fit that would fail on its data raises the budget
    with pytest.raises(BudgetExceededError, match="would be exceeded"):
        dpjax.fit(X[:, :1] * np.nan, y, epsilon=1.0, bounds=(0, 1), accountant=accountant,
                  **SMALL)
    assert len(accountant.spends) == 2
    # a smaller fit still fits in what is left
    dpjax.fit(X, y, epsilon=0.4, bounds=(0, 1), key=3, accountant=accountant, **SMALL)
    assert accountant.total()[0] <= 2.5
    assert "random_trees at epsilon 0.4" in str(accountant)


def test_non_private_fits_are_refused(data):
    X, y = data
    accountant = BudgetAccountant(epsilon=10.0)
    with pytest.raises(BudgetExceededError, match="non-private"):
        dpjax.fit(X, y, epsilon=None, bounds=(0, 1), accountant=accountant, **SMALL)
    with pytest.raises(ValueError, match="non-private fit cannot be accounted"):
        with pytest.warns(dpjax.data.DataDependentWarning):
            dpjax.fit(X, np.where(y == 1, "a", "b"), epsilon=1.0, bounds=(0, 1),
                      classes="data", accountant=accountant, **SMALL)
    assert accountant.spends == ()


def test_sweep_spends_every_model(data):
    X, y = data
    accountant = BudgetAccountant(epsilon=5.0)
    sweep = dpjax.sweep(X, y, epsilon=[0.1, 0.5], seeds=3, bounds=(0, 1),
                        accountant=accountant, **SMALL)
    assert len(accountant.spends) == 6
    assert accountant.total()[0] == pytest.approx(
        math.fsum(s.ledger.epsilon for s in accountant.spends))
    assert accountant.total()[0] <= 3 * math.fsum(ledger.epsilon for ledger in sweep.ledgers)
    with pytest.raises(BudgetExceededError):   # 2 x 3 more at 0.5 and 1 do not fit in 5
        dpjax.sweep(X, y, epsilon=[0.5, 1.0], seeds=3, bounds=(0, 1),
                    accountant=accountant, **SMALL)
    assert len(accountant.spends) == 6


def test_advanced_and_zcdp_totals_are_the_closed_forms_and_never_above_basic(data):
    X, y = data
    fits = {}
    for composition in ("basic", "advanced", "zcdp"):
        accountant = BudgetAccountant(epsilon=100.0, delta=1e-5, composition=composition)
        for k in range(30):
            dpjax.fit(X, y, epsilon=0.1, bounds=(0, 1), key=k, accountant=accountant, **SMALL)
        fits[composition] = accountant
    epsilons = [s.ledger.epsilon for s in fits["basic"].spends]
    basic = math.fsum(epsilons)
    assert fits["basic"].total() == (pytest.approx(basic), 0.0)
    advanced = advanced_composition(epsilons, 1e-5)
    assert fits["advanced"].total() == (pytest.approx(min(advanced, basic)), 1e-5)
    # random trees' releases are pure: each rho = eps^2 / 2 per release
    rho = math.fsum(0.5 * e.epsilon**2 * e.count for s in fits["zcdp"].spends
                    for e in s.ledger.entries)
    assert fits["zcdp"].total() == (pytest.approx(min(zcdp_to_dp(rho, 1e-5), basic)), 1e-5)
    assert fits["zcdp"].total()[0] < basic      # many small fits: zCDP composes better


def test_the_accountant_is_one_shared_account():
    accountant = BudgetAccountant(epsilon=1.0)
    assert copy.deepcopy(accountant) is accountant and copy.copy(accountant) is accountant
    with pytest.raises(TypeError, match="n_jobs=1"):
        pickle.dumps(accountant)
    with pytest.raises(ValueError, match="composition"):
        BudgetAccountant(epsilon=1.0, composition="renyi")
    with pytest.raises(ValueError, match="delta > 0"):
        BudgetAccountant(epsilon=1.0, composition="zcdp")
    with pytest.raises(ValueError, match="epsilon"):
        BudgetAccountant(epsilon=-1.0)


@pytest.mark.slow
def test_grid_search_spends_from_one_accountant_and_stops_at_its_total(data):
    from sklearn.model_selection import GridSearchCV

    from dpjax.sklearn import DPRandomTreesClassifier

    X, y = data
    accountant = BudgetAccountant(epsilon=4.0)
    search = GridSearchCV(
        DPRandomTreesClassifier(epsilon=0.5, n_trees=3, bounds=(0, 1), random_state=0,
                                accountant=accountant),
        {"depth": [2, 3]}, cv=5, error_score="raise")
    # 2 settings x 5 folds + the refit = 11 fits at 0.5 each: 8 fit in 4, the 9th is refused
    with pytest.raises(BudgetExceededError):
        search.fit(X, y)
    assert len(accountant.spends) == 8
    assert accountant.total()[0] <= 4.0
    assert accountant.remaining()[0] < 0.5


def test_zcdp_check_counts_a_delta_request_at_its_worst(data):
    """A request with δ > 0 may spend its ε in pure releases (ρ = ε²/2 each) or in releases
    without a ρ: the check charges the worse, so a fit that passes it is always recorded."""
    from dpjax.privacy import LedgerEntry, PrivacyLedger

    X, y = data
    accountant = BudgetAccountant(epsilon=20.0, delta=1e-5, composition="zcdp")
    for _ in range(200):
        accountant.spend(PrivacyLedger((LedgerEntry("x", "laplace", 0.1),),
                                       requested_epsilon=0.1))
    with pytest.raises(BudgetExceededError, match="would be exceeded"):
        dpjax.fit(X, y, epsilon=10.0, delta=1e-6, bounds=(0, 1), accountant=accountant, **SMALL)
    assert len(accountant.spends) == 200
    left = accountant.remaining()[0]
    dpjax.fit(X, y, epsilon=left, bounds=(0, 1), key=0, accountant=accountant, **SMALL)
    assert accountant.total()[0] <= 20.0


def test_one_neighbouring_relation_per_accountant(data):
    X, y = data
    accountant = BudgetAccountant(epsilon=10.0)
    dpjax.fit(X, y, epsilon=1.0, bounds=(0, 1), key=0, accountant=accountant, **SMALL)
    with pytest.raises(ValueError, match="one neighbouring relation per accountant"):
        dpjax.fit(X, y, epsilon=1.0, bounds=(0, 1), neighbouring="replace_one",
                  accountant=accountant, **SMALL)
    assert len(accountant.spends) == 1


def test_route_totals_spend_exactly_the_total_delta_and_fall_back_to_basic():
    """The advanced route's total δ is the accountant's δ itself (not Σδ_i + slack, which can
    round a last bit above it); a zCDP accountant whose fits hold no release with a ρ (nor a
    pure one) composes them by basic composition; a ledger's zCDP view needs δ in (0, 1)."""
    deltas = [3.58e-9, 1.23e-8, 6.28e-10, 2.88e-9] * 25
    approximate = [PrivacyLedger((LedgerEntry("release", "m", 0.02, delta=d),),
                                 requested_epsilon=0.02, requested_delta=d) for d in deltas]
    advanced = BudgetAccountant(epsilon=10.0, delta=1e-5, composition="advanced")
    for ledger in approximate:
        advanced.spend(ledger)
    assert advanced.total()[0] < 0.6 * sum(ledger.epsilon for ledger in approximate)
    assert advanced.total()[1] == 1e-5
    zcdp = BudgetAccountant(epsilon=10.0, delta=1e-5, composition="zcdp")
    for ledger in approximate:
        zcdp.spend(ledger)
    assert zcdp.total() == (pytest.approx(2.0), pytest.approx(sum(deltas)))
    pure = PrivacyLedger((LedgerEntry("counts", "Laplace", 0.1, count=3),),
                         requested_epsilon=1.0)
    with pytest.raises(ValueError, match="delta"):
        pure.zcdp(0.0)
