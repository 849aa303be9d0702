"""Accounting of the smooth booster's rounds (``dpjax.privacy.composition``, the ledger's
``"advanced"`` and ``"zcdp"`` views, ``method="smooth_boost", accounting=...``; spec
``private-boosted-stumps-smooth-reweighting.md`` §6): the advanced-composition inverse against
the spec's §6.2 table and the heterogeneous theorem, the zCDP route against its conversion, the
ledger's advanced view, and end-to-end fits within the requested ``(ε, δ)`` whose rounds get
more than basic composition's share where a ``δ`` allows it."""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.privacy import LedgerEntry, PrivacyLedger, advanced_composition, zcdp_to_dp
from dpjax.privacy.composition import advanced_round_epsilon, round_rho, zcdp_budget
from dpjax.privacy.composition import route as composition_route

MARGIN = 1e-5
"""The budgets' relative safety margin (``dpjax.privacy.composition.MARGIN``)."""

# --------------------------------------------------------------------------------------------
# the advanced-composition inverse
# --------------------------------------------------------------------------------------------

SPEC_TABLE = [  # §6.2, δ' = 1e-5: (ε, τ, basic ε/τ, advanced ε_b, use)
    (0.05, 5, 0.010000, 0.004650, 0.010000),
    (0.4, 9, 0.044444, 0.027313, 0.044444),
    (1.0, 39, 0.025641, 0.032015, 0.032015),
    (1.0, 99, 0.010101, 0.020099, 0.020099),
    (3.0, 99, 0.030303, 0.056118, 0.056118),
    (5.0, 75, 0.066667, 0.100961, 0.100961),
]


def _advanced_total(e: float, fixed: float, rounds: int, delta: float) -> float:
    """The heterogeneous advanced composition of one ``fixed``-DP release and ``rounds``
    ``e``-DP rounds (the ledger's own function)."""
    return advanced_composition([fixed] * (fixed > 0) + [e] * rounds, delta)


@pytest.mark.parametrize(("epsilon", "rounds", "basic", "advanced", "use"), SPEC_TABLE)
def test_advanced_round_epsilon_reproduces_the_spec_table(epsilon, rounds, basic, advanced,
                                                          use):
    """``advanced_round_epsilon(ε, 0, τ, 1e-5)`` is the table's advanced ``ε_b`` (6 digits,
    less the 1e-5 relative safety margin) and ``round_epsilon(..., "advanced")`` its 'use'
    column, ``max(basic, advanced)``; ``"basic"`` is ``ε/τ``."""
    tol = 5e-7 + 2 * MARGIN * advanced           # the table's last digit and the margin
    got = float(advanced_round_epsilon(epsilon, 0.0, rounds, 1e-5))
    assert abs(got - advanced) <= tol and got <= advanced + 5e-7, (got, advanced)
    used = float(composition_route("advanced").per_round(epsilon, 0.0, rounds, 1e-5))
    assert abs(used - use) <= 5e-7 + 2 * MARGIN * use, (used, use)
    basic_round = float(composition_route("basic").per_round(epsilon, 0.0, rounds, 1e-5))
    np.testing.assert_allclose(used, max(basic_round, got), rtol=1e-7)
    np.testing.assert_allclose(basic_round, basic, atol=5e-7)
    assert _advanced_total(got, 0.0, rounds, 1e-5) <= epsilon


@pytest.mark.parametrize(("epsilon", "share", "rounds"), list(itertools.product(
    [0.3, 1.0, 3.0], [0.01, 0.05, 0.2], [1, 5, 39, 99])))
def test_advanced_round_epsilon_with_a_fixed_release_is_the_largest_that_fits(epsilon, share,
                                                                             rounds):
    """Beside one ``ε_f``-DP release (``ε_f = share·ε`` in float32, as the ledger records
    it), the ``r`` rounds of ``e = advanced_round_epsilon(ε, ε_f, r, δ)`` compose by the
    heterogeneous theorem (float64, the ledger's function) to at most ``ε`` and to at least
    ``ε·(1 − 1e-4)`` (it is the largest such ``e`` up to the margin); ``e = 0`` exactly when
    the fixed release alone already exceeds ``ε`` in that theorem (``share = 0.2``: its
    ``sqrt(2 ln(1/δ))·ε_f ≈ 5.3·ε_f``)."""
    delta = 1e-6
    fixed = float(np.float32(share * epsilon))
    e = float(advanced_round_epsilon(epsilon, fixed, rounds, delta))
    total = _advanced_total(e, fixed, rounds, delta)
    floor = _advanced_total(0.0, fixed, rounds, delta)
    if floor > epsilon:
        assert e == 0.0
    else:
        assert total <= epsilon, (e, total)
        if floor < epsilon * (1 - 1e-4):
            assert e > 0.0 and total >= epsilon * (1 - 1e-4), (e, total)
    route = float(composition_route("advanced").per_round(epsilon, fixed, rounds, delta))
    basic = float(composition_route("basic").per_round(epsilon, fixed, rounds, delta))
    assert route == max(e, basic)
    assert min(_advanced_total(route, fixed, rounds, delta), rounds * route + fixed) <= epsilon


@pytest.mark.parametrize("route", ["basic", "advanced", "zcdp"])
def test_round_epsilon_broadcasts_over_a_vector_of_round_counts(route):
    """:func:`~dpjax.ensembles.smooth_boost.affordable_rounds` evaluates the budget at every
    ``r = 1..n_rounds`` at once: a vector of round counts gives the scalar answers
    elementwise (δ = 1e-6, beside a 0.15 release)."""
    rounds = np.arange(1, 61, dtype=np.float32)
    vector = np.asarray(composition_route(route).per_round(3.0, 0.15, rounds, 1e-6))
    scalar = [float(composition_route(route).per_round(3.0, 0.15, float(r),
                                                       1e-6)) for r in rounds[::7]]
    assert vector.shape == rounds.shape
    np.testing.assert_allclose(vector[::7], scalar, rtol=1e-6)
    if route == "advanced":
        advanced = np.asarray(advanced_round_epsilon(3.0, 0.15, rounds, 1e-6))
        assert advanced.shape == rounds.shape


def test_advanced_round_epsilon_is_zero_when_the_fixed_release_alone_overflows():
    """A fixed release whose advanced-composition term alone exceeds ``ε`` leaves 0; the
    route then falls back to basic composition's ``(ε − ε_f)/r``."""
    assert float(advanced_round_epsilon(1.0, 0.9, 10, 1e-5)) == 0.0
    np.testing.assert_allclose(float(composition_route("advanced").per_round(1.0, 0.9, 10, 1e-5)),
                               0.01, rtol=1e-5)


# --------------------------------------------------------------------------------------------
# the zCDP route
# --------------------------------------------------------------------------------------------

GRID = list(itertools.product([0.05, 0.3, 1.0, 3.0, 10.0], [1, 5, 15, 50, 200],
                              [1e-9, 1e-6, 1e-3]))


@pytest.mark.parametrize("share", [0.0, 0.05])
def test_zcdp_route_is_the_larger_of_basic_and_its_conversion_and_stays_within_epsilon(share):
    """Over ε ∈ {0.05, …, 10}, r ∈ {1, …, 200}, δ ∈ {1e-9, 1e-6, 1e-3}: ``zcdp_budget`` is the
    float64 ``(sqrt(ln(1/δ) + ε) − sqrt(ln(1/δ)))²`` less the margin; the zCDP route's
    ``ε_0`` is ``max(basic, sqrt(2(ρ − ε_f²/2)/r))``; and composing its rounds
    (``r·ε_0²/2 + ε_f²/2``, converted by ``zcdp_to_dp`` at δ, float64) — or, where basic
    composition's share is the larger, ``r·ε_0 + ε_f`` — stays within ε."""
    for epsilon, rounds, delta in GRID:
        fixed = float(np.float32(share * epsilon))
        log_term = math.log(1 / delta)
        rho = (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2
        got_rho = float(zcdp_budget(epsilon, delta))
        assert rho * (1 - 3 * MARGIN) <= got_rho <= rho, (epsilon, delta, got_rho, rho)
        assert zcdp_to_dp(got_rho, delta) <= epsilon
        e0 = float(composition_route("zcdp").per_round(epsilon, fixed, rounds, delta))
        basic = (epsilon - fixed) / rounds
        candidate = math.sqrt(2 * max(rho - fixed**2 / 2, 0.0) / rounds)
        np.testing.assert_allclose(e0, max(basic, candidate), rtol=5 * MARGIN,
                                   err_msg=f"{(epsilon, rounds, delta)}")
        np.testing.assert_allclose(float(round_rho(epsilon, fixed, rounds, delta)),
                                   max(rho - fixed**2 / 2, 0.0) / rounds, rtol=5 * MARGIN,
                                   atol=1e-12)
        zcdp_total = zcdp_to_dp(rounds * e0**2 / 2 + fixed**2 / 2, delta)
        basic_total = rounds * e0 + fixed
        assert min(zcdp_total, basic_total) <= epsilon, (epsilon, rounds, delta, e0)
        if candidate > basic * (1 + 1e-4):
            assert zcdp_total <= epsilon, (epsilon, rounds, delta, e0, zcdp_total)


@pytest.mark.parametrize("route", ["basic", "advanced", "zcdp"])
def test_without_delta_every_route_is_basic(route):
    """δ = 0: no route can do better than basic composition, ``(ε − ε_f)/r``."""
    for epsilon, rounds in itertools.product([0.1, 1.0, 5.0], [1, 7, 60]):
        got = float(composition_route(route).per_round(epsilon, 0.05 * epsilon, rounds, 0.0))
        assert got <= 0.95 * epsilon / rounds
        np.testing.assert_allclose(got, 0.95 * epsilon / rounds, rtol=1e-6)


def test_unknown_accounting_route_is_refused():
    with pytest.raises(ValueError, match="accounting"):
        composition_route("renyi").per_round(1.0, 0.0, 10, 1e-6)


# --------------------------------------------------------------------------------------------
# the ledger's advanced view
# --------------------------------------------------------------------------------------------


def test_ledger_advanced_view_takes_the_slack_delta_leaves():
    """``composition="advanced"``: 200 releases of 0.01 and a 0.05 release compose to the
    heterogeneous advanced total at the requested δ (below basic's 2.05) and spend δ; with no
    slack left (the releases' own δ reach the request) the ledger is basic composition."""
    entries = (LedgerEntry("row count", "Laplace", 0.05),
               LedgerEntry("rounds", "permute-and-flip", 0.01, count=200))
    ledger = PrivacyLedger(entries, requested_epsilon=2.05, requested_delta=1e-6,
                           composition="advanced")
    expected = advanced_composition([0.05] + [0.01] * 200, 1e-6)
    assert ledger.private and expected < ledger.basic_epsilon
    np.testing.assert_allclose(ledger.basic_epsilon, 2.05, rtol=1e-12)
    np.testing.assert_allclose(ledger.epsilon, expected, rtol=1e-12)
    assert ledger.delta == 1e-6
    assert ledger.advanced_view == ledger.composed_view
    assert "advanced composition" in str(ledger)
    assert ledger.zcdp_view is None

    spent = ledger.record(LedgerEntry("approximate", "Gaussian", 0.01, delta=1e-6))
    assert spent.advanced_view is None and spent.composed_view is None
    np.testing.assert_allclose(spent.epsilon, 2.06, rtol=1e-12)
    assert spent.delta == 1e-6
    assert "basic composition" in str(spent)

    few = PrivacyLedger(entries[:1], requested_epsilon=1.0, requested_delta=1e-6,
                        composition="advanced")   # one release: advanced is worse than basic
    assert few.composed_view is None and few.epsilon == 0.05 and few.delta == 0.0


# --------------------------------------------------------------------------------------------
# method="smooth_boost", accounting=...
# --------------------------------------------------------------------------------------------


def _one_bin_rule(m: int = 600, seed: int = 7) -> tuple[pd.DataFrame, np.ndarray, dict]:
    """Three features in [0, 1] (public bounds, 10 bins); y = 1 iff a is in the first bin,
    with 5% label noise."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(0.0, 1.0, (m, 3)), columns=["a", "b", "c"])
    X.loc[: m // 2, "a"] *= 0.1
    y = ((X["a"] < 0.1) ^ (rng.uniform(size=m) < 0.05)).astype(np.int64).to_numpy()
    return X, y, {name: (0.0, 1.0) for name in X.columns}


EPSILON, N_ROUNDS, SPLITS = 3.0, 60, 2
ROUND_ENTRY = {"stump": "1-rules (DP-1R)", "tree": "tree splits (DP-TopDown)"}


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("accounting", ["basic", "advanced", "zcdp", "auto"])
@pytest.mark.parametrize("weak_learner", ["stump", "tree"])
def test_smooth_boost_spends_within_the_request_on_every_route(weak_learner, accounting,
                                                                delta):
    """ε = 3, 60 rounds and a small ``min_signal`` (every round runs), add/remove neighbours:
    the ledger is private and within ``(ε, δ)``. With δ > 0 the ``"advanced"``, ``"zcdp"`` and
    ``"auto"`` routes give each round more than basic composition's ``(ε − ε_size)/R``
    (the ledger's composed view then keeps the total within ε, and nearly reaches it); with
    δ = 0, or
    ``"basic"``, a round gets exactly that share and nothing of δ is spent."""
    X, y, bounds = _one_bin_rule()
    model = dpjax.fit(X, y, method="smooth_boost", weak_learner=weak_learner,
                      accounting=accounting, epsilon=EPSILON, delta=delta, bounds=bounds,
                      key=0, n_rounds=N_ROUNDS, min_signal=0.05, tree_splits=SPLITS)
    ledger = model.privacy
    assert ledger.private, str(ledger)
    assert ledger.epsilon <= EPSILON and ledger.delta <= delta, str(ledger)
    if weak_learner == "stump":
        live = np.asarray(model.params.polarity) != 0
    else:
        live = np.any(np.asarray(model.params.label) != 0, axis=1)
    rounds = int(live.sum())
    assert rounds == N_ROUNDS and np.all(live[:rounds])
    entries = {entry.what: entry for entry in ledger.entries}
    size_eps = entries["row count"].epsilon
    entry = entries[ROUND_ENTRY[weak_learner]]
    leaf_share = model.config.leaf_share
    per_round = entry.epsilon * (SPLITS / (1 - leaf_share) if weak_learner == "tree" else 1)
    assert entry.count == rounds * (SPLITS if weak_learner == "tree" else 1)
    basic = (EPSILON - size_eps) / rounds
    message = f"per round {per_round:.6g} vs basic {basic:.6g}\n{ledger}"
    if delta > 0 and accounting != "basic":
        assert per_round > 1.2 * basic, message
        assert ledger.basic_epsilon > EPSILON and ledger.composed_view is not None, message
        # a tree round is t splits at ε_0/(2t) and leaves at ε_0/2: sized by Σ s_k², the
        # route spends (nearly) all of ε (advanced: up to its convexity bound on the drift)
        assert ledger.epsilon >= (0.95 if accounting == "advanced" else 0.99) * EPSILON, message
    else:
        np.testing.assert_allclose(per_round, basic, rtol=1e-4, err_msg=message)
        assert ledger.delta == 0.0 and ledger.composed_view is None
        assert EPSILON * 0.99 <= ledger.epsilon


def test_halfspace_weak_learner_needs_zcdp_and_a_delta():
    """The Gaussian halfspace learner composes in zCDP: ``accounting="basic"`` or
    ``"advanced"`` is refused when the configuration is made, and a private fit without δ
    is refused."""
    pytest.importorskip("dpjax.mechanisms.gaussian")
    X, y, bounds = _one_bin_rule(m=100)
    for accounting in ("basic", "advanced"):
        with pytest.raises(ValueError, match="zcdp"):
            dpjax.learners.LEARNERS["smooth_boost"](weak_learner="halfspace",
                                                    accounting=accounting)
        with pytest.raises(ValueError, match="accounting"):
            dpjax.fit(X, y, method="smooth_boost", weak_learner="halfspace",
                      accounting=accounting, epsilon=1.0, delta=1e-6, bounds=bounds, key=0)
    with pytest.raises(ValueError, match="delta"):
        dpjax.fit(X, y, method="smooth_boost", weak_learner="halfspace", epsilon=1.0,
                  delta=0.0, bounds=bounds, key=0, n_rounds=2)


@pytest.mark.slow
@pytest.mark.parametrize("weak_learner", ["stump", "tree", "halfspace"])
def test_rounds_after_the_schedule_release_nothing(weak_learner):
    """A huge ``min_signal`` leaves one live round of six: every field of the later rounds is
    zero in the released parameters (they were computed, static shapes, but are not released
    and not charged), whatever the data and key (review finding: the trees' splits were
    kept)."""
    X, y, bounds = _one_bin_rule()
    released = []
    for key, rows in ((0, slice(0, 500)), (1, slice(100, 600))):
        model = dpjax.fit(X.iloc[rows], y[rows], method="smooth_boost", epsilon=1.0,
                          delta=1e-6, weak_learner=weak_learner, n_rounds=6, min_signal=1e6,
                          bounds=bounds, key=key)
        leaves = [np.asarray(leaf) for leaf in jax.tree.leaves(model.params)]
        released.append([leaf[1:] for leaf in leaves])
        assert model.privacy.epsilon <= 1.0
    for first, second in zip(*released, strict=True):
        np.testing.assert_array_equal(first, second)
        if first.dtype != bool:             # stumps' constant flag is True when abstaining
            assert not np.any(first)


@pytest.mark.slow
def test_gaussian_rounds_state_their_delta_within_the_request():
    """With one round and a tiny δ, basic composition can be the smaller view: the rounds'
    per-release δ (the largest float32 at most δ/n_rounds) still sums within δ (review
    finding: rounding it up made the fit fail its own ledger check)."""
    X, y, bounds = _one_bin_rule()
    for delta in (1e-12, 1e-10, 3e-7):
        model = dpjax.fit(X, y, method="smooth_boost", weak_learner="halfspace", n_rounds=1,
                          epsilon=1.0, delta=delta, bounds=bounds, key=0)
        assert model.privacy.epsilon <= 1.0 and model.privacy.delta <= delta
