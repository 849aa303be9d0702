"""Private Newton boosting (the default ``boosted`` learner, ``dpjax.ensembles.newton``): the
release's sensitivity, the budgets and their two compositions, the public schedule, the prior,
the Newton moves, and learning end to end."""

from __future__ import annotations

import inspect
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.ensembles.newton import active_rounds, auto_uses_random, newton_decision
from dpjax.ensembles.newton.releases import (
    GAUSSIAN_CELL_BOUND,
    GRAD_UNIT,
    PRIOR_FLOOR_SDS,
    PRIOR_LABEL,
    ROUND_LABELS,
    SCOUT_LABEL,
    SELECT_LABEL,
    cell_bound,
    noise_scale,
    pooled_prior,
    release_sums,
)
from dpjax.ensembles.newton.rounds import STEP_CLIP, gradient_stats, merged_cells, newton_moves
from dpjax.ensembles.newton.schedule import (
    MANY_FEATURES,
    ROOT_CELLS,
    cyclic_rounds,
    gaussian_pays,
    max_rounds,
    noise_kinds,
    resolution_cells,
    split_round,
    threshold_served,
)
from dpjax.learner import FitContext
from dpjax.learners import Boosted
from dpjax.privacy import zcdp_to_dp
from dpjax.privacy.composition import (
    affordable_rounds,
    round_budget,
    round_rho,
    zcdp_budget,
)
from dpjax.privacy.optimal import composed_epsilon
from dpjax.trees.dense import level_slice
from tests.helpers.fits import fit_newton_boosted
from tests.helpers.newton_budget import newton_split, prior_epsilon

N_CODES = np.full(3, 8, np.int32)
LAPLACE_ROUNDS, GAUSSIAN_ROUNDS = ROUND_LABELS["laplace"], ROUND_LABELS["gaussian"]
PURE = {"min_signal": 4.0, "delta": 0.0, "gaussian": False}
"""The schedule's settings where a test names none: ``min_signal`` 4, pure rounds, ``δ = 0``."""


def zcdp_rho(epsilon: float, delta: float) -> float:
    """``ρ(ε, δ)`` in closed form: ``ρ + 2·sqrt(ρ·L) = ε`` with ``L = ln(1/δ)`` is
    ``(sqrt(L + ε) − sqrt(L))²`` (the hand value :func:`zcdp_budget` computes)."""
    log_term = math.log(1.0 / delta)
    return (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2


def planted(m: int = 400, seed: int = 0, flip: float = 0.1,
            n_features: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Codes 0..7 of ``n_features`` features; the label is ``code_0 > 3``, flipped at rate
    ``flip`` (Bayes rate ``1 − flip``): only feature 0 carries signal."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 8, (m, n_features)).astype(np.uint8)
    y = (codes[:, 0] > 3) ^ (rng.uniform(size=m) < flip)
    return codes, y.astype(np.int32)


CODES, Y = planted()


# --- the release: one record moves a round's sums by at most 2**GRAD_BITS + 2 units (L1) -----

def test_per_record_gradient_and_hessian_have_l1_norm_at_most_one_unit_plus_two():
    scores = jnp.concatenate([jnp.linspace(-40.0, 40.0, 20_001),
                              jnp.array([0.0, -0.0, 1e-30, jnp.inf, -jnp.inf])])
    for label in (0, 1):
        y = jnp.full(scores.shape, label, jnp.int32)
        stats = np.asarray(gradient_stats(scores, y, private=True))
        assert stats.dtype == np.int32
        assert np.all(np.abs(stats).sum(-1) <= GRAD_UNIT + 2)
        assert np.all(stats[:, 1] >= 0)
        exact = np.asarray(gradient_stats(scores, y, private=False))
        np.testing.assert_allclose(stats / GRAD_UNIT, exact, atol=1.0 / GRAD_UNIT)


@pytest.mark.parametrize("seed", range(5))
def test_adding_a_record_moves_a_round_release_by_at_most_its_sensitivity(seed):
    rng = np.random.default_rng(seed)
    score = jnp.asarray(rng.normal(0, 3, 300), jnp.float32)
    y = jnp.asarray(rng.integers(0, 2, 300), jnp.int32)
    cell = jnp.asarray(rng.integers(0, 8, 300), jnp.int32)

    def sums(rows):
        return np.asarray(jax.ops.segment_sum(gradient_stats(score[rows], y[rows], True),
                                              cell[rows], 8))

    full = np.arange(300)
    for drop in rng.choice(300, 20, replace=False):
        # exact int32 sums: removing one record changes them by exactly its own statistics
        difference = np.abs(sums(full) - sums(np.delete(full, drop))).sum()
        assert difference <= GRAD_UNIT + 2


# --- budgets --------------------------------------------------------------------------------

SCOUTED = [(0.0, False), (1e-6, False), (1e-6, True), (1e-3, False), (1e-3, True)]
"""``(δ, scout)``: the counts released once (``noise="laplace"`` or ``"gaussian"``), or at
``δ > 0`` also as ``noise="auto"`` releases them (a scout, then the prior's rest)."""


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("rounds", [3, 14, 41, 400])
@pytest.mark.parametrize(("delta", "scout"), SCOUTED)
def test_pure_rounds_after_the_prior_stay_within_the_request_in_the_better_view(epsilon, rounds,
                                                                                delta, scout):
    """The counts at ``ε_0 = 0.1·ε`` (or a scout at ``0.02·ε`` and the prior at the rest) then
    ``R`` pure rounds of the optimal route's :func:`round_budget` (the learner's): basic
    composition or (``δ > 0``) the optimal composition of all the releases stays within
    ``(ε, δ)``. Without a scout the better view spends the request up to the split's margin
    (float32 rounding; at ``δ > 0`` the ``DELTA_MARGIN`` of ``δ``, a fraction of a per cent
    of ``ε``); with one, the releases are counted apart and leave a few per cent unspent. At
    ``δ > 0`` a round's budget is at least the sequential and zCDP shares."""
    counts, each = newton_split(epsilon, rounds, delta, "laplace", scout)
    assert sum(counts) == pytest.approx(0.1 * epsilon, rel=1e-5)
    basic = sum(counts) + rounds * each
    # the counts first (they set the rounds), then the rounds as one block
    optimal = (sum(counts) + composed_epsilon([each], [rounds], delta)
               if delta > 0 else math.inf)
    assert min(basic, optimal) <= epsilon
    assert min(basic, optimal) >= epsilon * (0.9 if scout else 0.98)
    if delta == 0:
        assert each == pytest.approx(0.9 * epsilon / rounds, rel=1e-5)
    else:
        zcdp_share = math.sqrt(2 * (zcdp_rho(epsilon, delta) - (0.1 * epsilon)**2 / 2) / rounds)
        assert each >= max(0.9 * epsilon / rounds, zcdp_share) * (1 - 1e-4)


def test_per_record_gradient_and_hessian_have_l2_norm_at_most_one_unit_plus_root_two():
    """The Gaussian rounds' L2 sensitivity: ``g² + h² <= 1`` (``max_p p²(1 + (1 − p)²) = 1``)
    and the two floors add at most ``√2`` units."""
    scores = jnp.linspace(-40.0, 40.0, 20_001)
    for label in (0, 1):
        stats = np.asarray(gradient_stats(scores, jnp.full(scores.shape, label), private=True),
                           np.float64)
        assert np.all(np.hypot(stats[:, 0], stats[:, 1]) <= GRAD_UNIT + math.sqrt(2))
        exact = np.asarray(gradient_stats(scores, jnp.full(scores.shape, label), False))
        assert np.all(np.hypot(exact[:, 0], exact[:, 1]) <= 1.0 + 1e-6)


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("rounds", [3, 14, 400])
@pytest.mark.parametrize(("delta", "scout"), [d for d in SCOUTED if d[0] > 0])
def test_gaussian_rounds_and_the_laplace_prior_compose_in_zcdp_within_the_request(
        epsilon, rounds, delta, scout):
    """Before Gaussian rounds the (pure) counts take ``ε_0 = sqrt(2·0.1·ρ)``, ``0.1·ρ`` in
    zCDP (or a scout at ``0.02·ε`` and the prior at ``sqrt(ε_0² − 0.02²ε²)``: the same
    ``ρ``); ``R`` rounds of :func:`round_rho` take the other ``0.9·ρ``: the total converts to
    at most ``ε`` and spends it (to the float32 rounding down)."""
    counts, each = newton_split(epsilon, rounds, delta, "gaussian", scout)
    rho = sum(c**2 for c in counts) / 2 + rounds * each
    assert zcdp_to_dp(rho, delta) <= epsilon
    assert zcdp_to_dp(rho, delta) >= epsilon * (1 - 1e-3)
    assert sum(c**2 for c in counts) / 2 == pytest.approx(0.1 * zcdp_rho(epsilon, delta),
                                                           rel=1e-4)
    assert each == pytest.approx(0.9 * zcdp_rho(epsilon, delta) / rounds, rel=1e-4)


@pytest.mark.slow
def test_gaussian_round_release_is_centred_with_the_stated_noise():
    """The discrete Gaussian round: the released sums are the sums (in rows) plus noise of the
    grid's standard deviation, within the variance-derived tolerance over 4000 draws; sums
    beyond the cell bound (``2**12`` standard deviations at most) are clipped to it."""
    sums = jnp.array([[512, 128], [-2560, 64], [GRAD_UNIT * 10**6, 0]], jnp.int32)
    rho = jnp.float32(0.02)
    keys = jax.random.split(jax.random.key(0), 4000)
    released, cost = jax.vmap(lambda k: release_sums(k, sums, rho, 1.0, "gaussian", 1e-6))(keys)
    sigma = float(noise_scale(rho, 1.0, "gaussian", 3))
    assert float(cost.rho[0]) <= 0.02
    assert sigma == pytest.approx((1 + 2 / GRAD_UNIT) / math.sqrt(2 * 0.02), rel=0.08)
    released = np.asarray(released, np.float64)
    bound = float(cell_bound(1 + 2 / GRAD_UNIT, rho))       # 2**12 σ, below 2**16 rows here
    assert 3500 * sigma < bound < GAUSSIAN_CELL_BOUND
    target = np.array([[2.0, 0.5], [-10.0, 0.25], [bound, 0.0]])
    mean_tolerance = 5 * sigma / math.sqrt(len(keys))
    np.testing.assert_allclose(released.mean(0), target, atol=mean_tolerance)
    np.testing.assert_allclose(released.std(0), sigma, rtol=5 / math.sqrt(2 * len(keys)))


@pytest.mark.slow
def test_gaussian_noise_needs_delta_and_its_ledger_composes_rhos():
    X = pd.DataFrame((CODES + 0.5) / 8, columns=["a", "b", "c"])
    bounds = {c: (0.0, 1.0) for c in X.columns}
    with pytest.raises(ValueError, match="delta"):
        dpjax.fit(X, Y, method="boosted", epsilon=1.0, bounds=bounds, noise="gaussian")
    model = dpjax.fit(X, Y, method="boosted", epsilon=1.0, delta=1e-6, bounds=bounds, key=0,
                      n_bins=8, noise="gaussian", shape="random", n_trees=40, depth=2,
                      min_signal=1e-3)
    ledger = model.privacy
    rounds = [e for e in ledger.entries if e.what == GAUSSIAN_ROUNDS]
    assert rounds and all(e.rho is not None and "Gaussian" in e.mechanism for e in rounds)
    assert not any(e.what == LAPLACE_ROUNDS for e in ledger.entries)
    assert sum(e.count for e in rounds) == 40
    assert ledger.epsilon == ledger.optimal_view[0] <= ledger.zcdp_view[0] <= 1.0
    assert ledger.epsilon >= 0.9 and ledger.delta == 1e-6
    assert "optimal composition" in str(ledger) and "basic epsilon" in str(ledger)
    assert np.mean(model.predict(X) == Y) > 0.8


def test_zcdp_budget_converts_back_to_epsilon():
    for epsilon in (0.01, 1.0, 30.0):
        rho = float(zcdp_budget(epsilon, 1e-6))
        assert zcdp_to_dp(rho, 1e-6) == pytest.approx(epsilon, rel=1e-4)
        assert zcdp_to_dp(rho, 1e-6) <= epsilon
    assert float(zcdp_budget(1.0, 0.0)) == 0.0


@pytest.mark.slow
def test_many_rounds_with_delta_use_the_optimal_split_and_the_ledger_shows_both_views():
    """Laplace rounds (``noise="laplace"``: ``"auto"`` would pick the Gaussian plan for 200
    rounds) at ``δ > 0`` take the optimal composition's share, above the sequential and zCDP
    ones, and the ledger composes them optimally."""
    X = pd.DataFrame((CODES + 0.5) / 8, columns=["a", "b", "c"])
    bounds = {c: (0.0, 1.0) for c in X.columns}
    model = dpjax.fit(X, Y, method="boosted", epsilon=1.0, delta=1e-5, bounds=bounds, key=0,
                      n_bins=8, shape="random", n_trees=200, depth=2, min_signal=1e-3,
                      noise="laplace")
    ledger = model.privacy
    assert ledger.composition == "optimal" and ledger.zcdp_view is not None
    assert ledger.basic_epsilon > 1.0          # 200 rounds: the basic sum is over the request
    assert ledger.epsilon == ledger.optimal_view[0] <= 1.0 < ledger.zcdp_view[0]
    assert ledger.epsilon >= 0.98 and ledger.delta == 1e-5
    assert "optimal composition" in str(ledger) and "basic epsilon" in str(ledger)
    pure = dpjax.fit(X, Y, method="boosted", epsilon=1.0, bounds=bounds, key=0, n_bins=8,
                     shape="random", n_trees=200, depth=2, min_signal=1e-3)
    assert pure.privacy.delta == 0.0 and pure.privacy.epsilon <= 1.0
    assert pure.privacy.zcdp_view is None
    rounds = {e.what: e.epsilon for e in ledger.entries}
    assert rounds[LAPLACE_ROUNDS] > {e.what: e.epsilon for e in pure.privacy.entries}[
        LAPLACE_ROUNDS]


# --- the public schedule: reads ε, δ, the prior's ε_0, the released size, the configuration ---

def active(epsilon: float, prior: float, size: float, cells: float, most: int,
           **settings: object) -> float:
    """:func:`active_rounds` at :data:`PURE` unless ``settings`` say otherwise."""
    return float(active_rounds(epsilon, prior, size, cells, most, **{**PURE, **settings}))


def test_schedule_is_a_function_of_public_quantities_only():
    """``active_rounds`` reads ``ε``, the prior's ``ε_0``, the released size, the cells, the most
    rounds and the configuration (no data argument); its values by hand: the most rounds whose
    per-round noise scale stays at most ``signal = ñ/(cells·min_signal)`` (the average cell
    keeps ``min_signal`` noise scales), at least one and at most ``most``."""
    assert list(inspect.signature(active_rounds).parameters) == [
        "epsilon", "prior", "size", "cells", "most", "min_signal", "delta", "gaussian",
        "least"]
    # 700 released rows in cells of 10 at min_signal 4: signal 700/40 = 17.5; pure rounds at
    # δ = 0: R = ⌊(ε − ε_0)·17.5⌋; few released rows at a small ε: fewer, less noisy rounds
    assert active(0.05, 0.005, 700.0, 10.0, 41) == 1       # ⌊0.7875⌋ = 0: at least one
    assert float(active_rounds(0.05, 0.005, 700.0, 10.0, 41, least=0.0,
                               **PURE)) == 0               # the softmax booster's fallback
    assert active(0.1, 0.01, 700.0, 10.0, 41) == 1         # ⌊1.575⌋
    assert active(1.0, 0.1, 700.0, 10.0, 41) == 15         # ⌊15.75⌋
    assert active(1.0, 0.1, 14_000.0, 10.0, 14) == 14      # ⌊315⌋, at most 14
    # δ = 1e-6: ρ(1, δ) = (√(L + 1) − √L)² = 0.017469 (L = ln 10⁶), and the prior leaves
    # ρ' = ρ − 0.1²/2 = 0.012469
    assert zcdp_rho(1.0, 1e-6) - 0.1**2 / 2 == pytest.approx(0.012469, abs=1e-6)
    assert float(zcdp_budget(1.0, 1e-6)) == pytest.approx(zcdp_rho(1.0, 1e-6), rel=1e-4)
    # pure: the larger of ⌊0.9·17.5⌋ = 15 and ⌊2ρ'·17.5²⌋ = ⌊7.64⌋ = 7; Gaussian: 7
    assert active(1.0, 0.1, 700.0, 10.0, 41, delta=1e-6) == 15
    assert active(1.0, 0.1, 700.0, 10.0, 41, delta=1e-6, gaussian=True) == 7
    # 14,000 rows, signal 350: ⌊2ρ'·350²⌋ = ⌊3054.8⌋ beats ⌊0.9·350⌋ = 315
    assert active(1.0, 0.1, 14_000.0, 10.0, 5000, delta=1e-6) == 3054
    assert active(1.0, 0.1, 14_000.0, 10.0, 5000, delta=1e-6, gaussian=True) == 3054
    assert active(1.0, 0.1, 14_000.0, 10.0, 100, delta=1e-6, gaussian=True) == 100
    # the most rounds compiled for: a pass over the n features, then passes − 1 passes over
    # min(focus, n) of them (cyclic), n_trees (random), the larger of the two (auto)
    assert (cyclic_rounds(7, 3, 6), cyclic_rounds(3, 3, 6), cyclic_rounds(7, 1, 6)) == (19, 9, 7)
    assert max_rounds(7, "cyclic", 20, 3, 6) == 19
    assert max_rounds(7, "random", 20, 3, 6) == 20
    assert max_rounds(30, "auto", 20, 3, 6) == 42
    assert max_rounds(7, "auto", 20) == 20
    # the noises a fit may use: Laplace alone at δ = 0
    assert noise_kinds("auto", 0.0) == ("laplace",)
    assert noise_kinds("auto", 1e-6) == ("laplace", "gaussian")
    assert noise_kinds("laplace", 1e-6) == ("laplace",)
    assert noise_kinds("gaussian", 1e-6) == ("gaussian",)


def test_the_prior_reads_a_count_the_noise_cannot_tell_from_zero_at_two_standard_deviations():
    """A private prior floors each pooled count, for its log-odds, at ``2·√2·Δ/√(Σ ε_k²)``
    (two standard deviations of the pooled discrete Laplace noise); the released size and an
    exact prior (``sensitivity=None``) floor at 1 alone."""
    assert PRIOR_FLOOR_SDS == 2.0
    counts = jnp.asarray([300.0, -40.0])
    floor = 2.0 * math.sqrt(2.0) / 0.01                 # 282.8 at ε_0 = 0.01, Δ = 1
    prior, size = pooled_prior([(counts, 0.01)], 1.0)
    assert float(prior) == pytest.approx(math.log(floor / 300.0), rel=1e-5)
    assert float(size) == pytest.approx(301.0)
    exact, _ = pooled_prior([(counts, 0.01)])
    assert float(exact) == pytest.approx(math.log(1.0 / 300.0), rel=1e-5)
    # Δ = 2 (replace-one): twice the floor, 565.7, above both counts: even odds
    replace_one, _ = pooled_prior([(counts, 0.01)], 2.0)
    assert float(replace_one) == 0.0
    # two releases pool their weights ε_k²: the floor of √(0.01² + 0.02²)
    pooled, _ = pooled_prior([(counts, 0.01), (counts, 0.02)], 1.0)
    both = 2.0 * math.sqrt(2.0) / math.sqrt(0.01**2 + 0.02**2)
    assert float(pooled) == pytest.approx(math.log(both / 300.0), rel=1e-5)
    # counts well above the noise are read as they are
    far, _ = pooled_prior([(jnp.asarray([3000.0, 1000.0]), 1.0)], 1.0)
    assert float(far) == pytest.approx(math.log(1000.0 / 3000.0), rel=1e-6)


def test_a_small_fit_at_a_small_epsilon_keeps_its_prior_within_the_noise():
    """250 rows (70% class 1, weak features) at ``ε = 0.1`` (``ε_0 = 0.01``: counts of
    standard deviation 141): over 20 keys every released prior stays within
    ``log(ñ/floor)`` of even odds, where a count floored at 1 gave priors of about ``±5``."""
    rng = np.random.default_rng(3)
    codes = jnp.asarray(rng.integers(0, 8, (250, 4)), jnp.int32)
    y = jnp.asarray(rng.random(250) < 0.7, jnp.int32)
    priors = [float(fit_newton_boosted(jax.random.key(seed), codes, y, 0.1,
                                       n_codes_per_feature=[8] * 4)[0].prior)
              for seed in range(20)]
    floor = PRIOR_FLOOR_SDS * math.sqrt(2.0) / 0.01
    assert max(abs(p) for p in priors) < math.log(3.0 * 250.0 / floor)


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_two_datasets_of_one_shape_get_the_same_schedule_and_costs(delta):
    """Two datasets of the same shape but different values (the released size noised by the
    same key), ``noise="auto"``, the cyclic shape: the same releases, the same costs. The
    Laplace plan makes one pass: at ε = 0.5 on ñ ≈ 400 rows (cells of 8, min_signal 4)
    ``⌊(ε − ε_0)·ñ/32⌋ = 5`` rounds, at most the 3 features; at ε = 8 three too (at ``δ > 0``
    the Gaussian plan does not pay for 3 rounds)."""
    other_codes, other_y = planted(seed=9, flip=0.4)
    for epsilon in (0.5, 8.0):
        costs = [fit_newton_boosted(jax.random.key(0), jnp.asarray(c), jnp.asarray(y),
                                    jnp.float32(epsilon), n_codes_per_feature=N_CODES,
                                    delta=delta, noise="auto", shape="cyclic")[1]
                 for c, y in ((CODES, Y), (other_codes, other_y))]
        chex.assert_trees_all_equal(costs[0], costs[1])
        labels = {PRIOR_LABEL, LAPLACE_ROUNDS} | ({SCOUT_LABEL, GAUSSIAN_ROUNDS} if delta > 0
                                                 else set())
        assert set(costs[0]) == labels
        live = np.asarray(costs[0][LAPLACE_ROUNDS].epsilon) > 0
        assert live.sum() == 3 and live[:3].all()
        if delta > 0:
            assert not np.any(np.asarray(costs[0][GAUSSIAN_ROUNDS].epsilon))


@pytest.mark.slow
def test_auto_shape_boosts_random_trees_where_the_cyclic_schedule_cannot_afford_a_pass():
    """``shape="auto"`` reads the public schedule only: at ε = 0.05 on 400 rows the cyclic
    shape affords one round for three features, so the fit boosts random trees (the table is
    empty, the rounds are the random schedule's); at ε = 3 it makes one cyclic pass (the
    Laplace plan's, at δ = 0; five oblivious trees affordable, not all eight); at ε = 8 the
    budget affords all eight oblivious trees (its features numeric: a code threshold serves
    them). With more than two classes, random trees also
    where their schedule affords fewer than ``n_trees``."""
    assert list(inspect.signature(auto_uses_random).parameters) == [
        "cyclic_rounds", "trees", "n_features", "most", "multi", "shape"]
    twenty = jnp.float32(20.0)
    assert bool(auto_uses_random(jnp.float32(2.0), twenty, 3, 20, False, "auto"))
    assert not bool(auto_uses_random(jnp.float32(3.0), twenty, 3, 20, False, "auto"))
    assert not bool(auto_uses_random(jnp.float32(1.0), twenty, 3, 20, False, "cyclic"))
    assert not bool(auto_uses_random(jnp.float32(3.0), jnp.float32(19.0), 3, 20, False,
                                     "auto"))
    assert bool(auto_uses_random(jnp.float32(3.0), jnp.float32(19.0), 3, 20, True, "auto"))
    assert not bool(auto_uses_random(jnp.float32(3.0), twenty, 3, 20, True, "auto"))
    codes, y = jnp.asarray(CODES), jnp.asarray(Y)
    small, small_costs = fit_newton_boosted(jax.random.key(0), codes, y, jnp.float32(0.05),
                                            n_codes_per_feature=N_CODES)
    assert np.all(np.asarray(small.table) == 0) and np.any(np.asarray(small.trees.leaf) != 0)
    live = np.asarray(small_costs[LAPLACE_ROUNDS].epsilon) > 0
    assert 1 <= live.sum() <= 20 and not live[20:].any()       # at most the 20 random trees
    large, large_costs = fit_newton_boosted(jax.random.key(0), codes, y, jnp.float32(3.0),
                                            n_codes_per_feature=N_CODES)
    assert np.all(np.asarray(large.trees.leaf) == 0) and np.any(np.asarray(large.table) != 0)
    assert int((np.asarray(large_costs[LAPLACE_ROUNDS].epsilon) > 0).sum()) == 3
    assert np.mean(np.asarray(newton_decision(large, codes) > 0) == Y) > 0.6
    rich, rich_costs = fit_newton_boosted(jax.random.key(0), codes, y, jnp.float32(8.0),
                                          n_codes_per_feature=N_CODES, n_ordered=N_CODES)
    assert np.all(np.asarray(rich.table) == 0) and np.any(np.asarray(rich.trees.leaf) != 0)
    assert int((np.asarray(rich_costs[SELECT_LABEL].epsilon) > 0).any(axis=1).sum()) == 8
    # at ε = 0.05 on 400 rows one fit is mostly noise (accuracy 0.46-0.72 over keys); over 40
    # keys the mean accuracy (0.58; sd of one fit ~0.1, of the mean ~0.016) beats the majority
    # class (0.52) by more than three standard errors
    def small_accuracy(key):
        model = fit_newton_boosted(key, codes, y, jnp.float32(0.05),
                                   n_codes_per_feature=N_CODES)[0]
        return jnp.mean((newton_decision(model, codes) > 0) == y)

    accuracy = jax.jit(jax.vmap(small_accuracy))(jax.random.split(jax.random.key(1), 40))
    assert float(accuracy.mean()) > max(Y.mean(), 1 - Y.mean())


# --- the prior and the moves ----------------------------------------------------------------

@pytest.mark.slow
def test_a_model_without_signal_predicts_the_released_majority():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 8, (3000, 3)).astype(np.uint8)
    y = (rng.uniform(size=3000) < 0.3).astype(np.int32)      # labels independent of x
    model, costs = fit_newton_boosted(jax.random.key(1), jnp.asarray(codes), jnp.asarray(y),
                                      jnp.float32(0.5), n_codes_per_feature=N_CODES)
    assert float(model.prior) == pytest.approx(math.log(0.3 / 0.7), abs=0.15)
    predicted = np.asarray(newton_decision(model, jnp.asarray(codes)) > 0)
    assert predicted.mean() < 0.02
    assert float(costs[PRIOR_LABEL].epsilon) <= 0.05


@pytest.mark.slow
def test_single_class_data_fits_and_predicts_that_class():
    y = np.ones(400, np.int32)
    model, _ = fit_newton_boosted(jax.random.key(2), jnp.asarray(CODES), jnp.asarray(y),
                                  jnp.float32(1.0), n_codes_per_feature=N_CODES)
    assert np.all(np.asarray(newton_decision(model, jnp.asarray(CODES))) > 0)


def test_newton_moves_shrink_noisy_cells_and_are_clipped():
    sums = jnp.array([[-50.0, 20.0], [5.0, 1.0], [1e6, -1e6], [0.0, 0.0]])
    moves = np.asarray(newton_moves(sums, ridge=10.0, learning_rate=1.0))
    assert moves[0] == pytest.approx(50.0 / 30.0)
    assert moves[1] == pytest.approx(-5.0 / 11.0)
    assert moves[2] == -STEP_CLIP                    # negative noisy hessian: ridge alone
    assert moves[3] == 0.0


@pytest.mark.slow
def test_non_private_fit_is_newton_boosting_of_the_logistic_loss():
    """Without DP the cyclic shape is exact Newton boosting of an additive logistic model:
    the training log-loss falls below the prior's and keeps falling with the passes."""
    model, costs = fit_newton_boosted(jax.random.key(0), jnp.asarray(CODES), jnp.asarray(Y),
                                      None, n_codes_per_feature=N_CODES)
    assert costs == {}
    score = np.asarray(newton_decision(model, jnp.asarray(CODES)))
    p = 1 / (1 + np.exp(-score))
    loss = -np.mean(Y * np.log(p) + (1 - Y) * np.log(1 - p))
    base = Y.mean()
    prior_loss = -(base * np.log(base) + (1 - base) * np.log(1 - base))
    assert loss < 0.8 * prior_loss
    assert np.mean((score > 0) == Y) > 0.85


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["cyclic", "random", "oblivious"])
def test_private_fit_learns_the_planted_problem(shape):
    codes, y = planted(m=3000, seed=4)
    test_codes, test_y = planted(m=2000, seed=5)
    accuracy = []
    for seed in range(3):
        model, _ = fit_newton_boosted(jax.random.key(seed), jnp.asarray(codes),
                                      jnp.asarray(y), jnp.float32(1.0),
                                      n_codes_per_feature=N_CODES, shape=shape)
        score = newton_decision(model, jnp.asarray(test_codes))
        accuracy.append(np.mean(np.asarray(score > 0) == test_y))
    # Bayes rate 0.9; the noise at ε = 1 on 3000 rows costs a few points at most
    assert min(accuracy) > 0.85, accuracy


def test_boosted_config_validates():
    with pytest.raises(ValueError, match="shape"):
        Boosted(shape="symmetric")
    with pytest.raises(ValueError, match="regularisation"):
        Boosted(regularisation=0.0)


@pytest.mark.slow
def test_sweep_groups_models_by_plan_and_each_equals_its_single_pure_fit():
    """The boosted sweep settles each model's plan before the program that grows it (the
    models of one plan vectorised together, each with its plan's work alone): grid point ``i``
    of seed ``j`` is exactly the learner's pure fit (every plan compiled, decided per round by
    ``lax.cond``) with its own noise key and the seed's shared structure key (and the model's
    ordered codes, which the fit merges), on both sides of the auto shape's switch (few rounds
    at the small ε: random trees; a full cyclic pass at the larger one)."""
    from dpjax._keys import grid_keys

    assert Boosted().planned
    X = pd.DataFrame((CODES + 0.5) / 8, columns=["a", "b", "c"])
    fit = dict(method="boosted", bounds={c: (0.0, 1.0) for c in X.columns}, n_bins=8)
    sweep = dpjax.sweep(X, Y, epsilon=[0.02, 3.0], learning_rate=[0.5, 1.0], seeds=2, **fit)
    spec = sweep.spec
    assert spec.n_ordered.tolist() == [8, 8, 8]     # numeric: the fit may merge their bins
    # the learner's own fit, jitted once: the model's context (its ordered codes included)
    context = FitContext(spec.n_codes, 2, 1.0, None, None, 0.0, None, spec.n_ordered)
    learner_fit = jax.jit(lambda key, epsilon, structure_key, **traced: sweep.configs[0].fit(
        key, sweep.model(0).encode(X), jnp.asarray(Y), epsilon,
        context._replace(structure_key=structure_key), **traced))
    cyclic = set()
    for i, point in enumerate(sweep.grid):
        config = sweep.configs[i]
        traced = {n: jnp.float32(config.encode_traced(n)) for n in config.traced_names()}
        spent = []
        for j, seed in enumerate(sweep.seeds):
            structure_key, point_keys = grid_keys(dpjax.as_key(seed), len(sweep.grid))
            params, costs = learner_fit(point_keys[i], jnp.float32(point["epsilon"]),
                                        structure_key, **traced)
            chex.assert_trees_all_equal(sweep.model(i, j).params, params)
            ledger = dpjax.PrivacyLedger(requested_epsilon=point["epsilon"]).with_costs(costs)
            spent.append(ledger.epsilon)
            cyclic.add(bool(np.any(np.asarray(params.table))))
        assert sweep.ledgers[i].epsilon == max(spent)     # a grid point's: its seeds' largest
    assert cyclic == {True, False}


# --- cells: a numeric feature's ordered codes merged to the public resolution -------------

@pytest.mark.parametrize("n_ordered", [2, 8, 10, 32, 255])
@pytest.mark.parametrize("resolution", [1, 2, 3, 7, 8, 16, 300])
def test_merged_cells_are_runs_of_adjacent_ordered_codes_with_missing_apart(n_ordered,
                                                                            resolution):
    """``B`` ordered codes and a missing code at resolution ``K = min(resolution, B)``: the
    ordered codes fall into ``K`` runs of adjacent codes (cells ``0..K-1``, non-decreasing in
    the code, no cell skipped, run lengths ``⌊B/K⌋`` or ``⌈B/K⌉``); the missing code is cell
    ``K``, apart from them; every cell is at most its code (below the feature's code count);
    ``K = B`` leaves every code its own cell."""
    codes = jnp.arange(n_ordered + 1)       # the ordered codes, then the missing code
    cells = np.asarray(merged_cells(codes, n_ordered, jnp.float32(resolution)))
    k = min(resolution, n_ordered)
    ordered, missing = cells[:n_ordered], int(cells[n_ordered])
    steps = np.diff(ordered)
    assert np.all((steps == 0) | (steps == 1))
    assert ordered[0] == 0 and ordered[-1] == k - 1
    runs = np.bincount(ordered, minlength=k)
    assert runs.min() == n_ordered // k and runs.max() == -(-n_ordered // k)
    assert missing == k
    assert np.all(cells <= np.asarray(codes)) and cells.max() < n_ordered + 1
    if resolution >= n_ordered:
        np.testing.assert_array_equal(cells, codes)


@pytest.mark.parametrize("resolution", [1, 2, 5, 300])
def test_merged_cells_keep_every_code_of_a_feature_without_ordered_codes(resolution):
    """A categorical (or constant) feature, ``n_ordered = 0``, keeps its codes whatever the
    resolution."""
    codes = jnp.arange(12)
    np.testing.assert_array_equal(merged_cells(codes, 0, jnp.float32(resolution)), codes)


def test_resolution_is_the_most_cells_of_the_dyadic_ladder_keeping_cell_signal_scales():
    """``K``: the largest of ``most, most/2, most/4, …`` (floored, at least 2) at most
    ``min(L, √(8·L))``, ``L = ñ/(cell_signal·scale)`` (linear up to 8 cells, then the square
    root): non-decreasing in the released size, non-increasing in the noise scale, an integer;
    with 32 bins every coarser run is a union of finer ones."""
    assert ROOT_CELLS == 8.0
    assert float(resolution_cells(100.0, 1.0, 16.0, 32)) == 4         # L = 6.25: linear
    assert float(resolution_cells(128.0, 1.0, 16.0, 32)) == 8         # L = 8 = √64
    assert float(resolution_cells(1000.0, 4.0, 16.0, 32)) == 8        # L = 15.6: √125 = 11.2
    assert float(resolution_cells(1000.0, 2.0, 16.0, 32)) == 8        # L = 31.2: √250 = 15.8
    assert float(resolution_cells(1000.0, 1.0, 16.0, 32)) == 16       # L = 62.5: √500 = 22.4
    assert float(resolution_cells(2048.0, 1.0, 16.0, 32)) == 32       # L = 128: √1024 = 32
    assert float(resolution_cells(1000.0, 100.0, 16.0, 32)) == 2      # L = 0.6: at least 2
    assert float(resolution_cells(1000.0, 1.0, 16.0, 255)) == 15      # 22.4 -> 255/16 floored
    assert float(resolution_cells(1e6, 1.0, 16.0, 1)) == 2            # two cells even so
    sizes = jnp.geomspace(1.0, 1e7, 301)
    scales = jnp.geomspace(1e-2, 1e4, 301)
    for most in (1, 2, 8, 32, 255):
        by_size = np.asarray(resolution_cells(sizes, 3.0, 16.0, most))
        by_scale = np.asarray(resolution_cells(5000.0, scales, 16.0, most))
        for values in (by_size, by_scale):
            assert np.all(values == np.floor(values))
            assert values.min() == 2 and values.max() == max(most, 2)
        assert np.all(np.diff(by_size) >= 0) and np.all(np.diff(by_scale) <= 0)
    # nested runs: at 32 bins each resolution's boundaries are among the next finer one's
    codes = jnp.arange(32)
    for coarse in (2, 4, 8, 16):
        fine = np.asarray(merged_cells(codes, 32, jnp.float32(2 * coarse)))
        merged = np.asarray(merged_cells(codes, 32, jnp.float32(coarse)))
        np.testing.assert_array_equal(merged, fine // 2)


@pytest.mark.slow
@pytest.mark.parametrize(("m", "epsilon", "coarse"), [(400, 0.5, True), (20_000, 5.0, False)])
def test_private_fit_merges_ordered_bins_where_the_data_is_small_for_the_noise(m, epsilon,
                                                                               coarse):
    """Eight ordered bins and a missing code per feature (5% missing). On 400 rows at ε = 0.5
    (three rounds of ``ε_r = 0.15``, Laplace scale ``b ≈ 6.7``) ``⌊ñ/(16·b)⌋`` is 3 or 4 at
    ``ñ ≈ 400``, so the resolution is 2 or 4 of the dyadic ladder 8, 4, 2: each
    feature's moves are a step function, constant on the ``K`` runs of
    :func:`merged_cells`, the missing code a cell of its own. On 20,000 rows at ε = 5 every bin
    is its own cell (``K = 8``)."""
    rng = np.random.default_rng(14)
    codes, y = planted(m=m, seed=14)
    codes[rng.uniform(size=codes.shape) < 0.05] = 8
    model, _ = fit_newton_boosted(jax.random.key(0), jnp.asarray(codes), jnp.asarray(y),
                                  jnp.float32(epsilon), n_codes_per_feature=np.full(3, 9),
                                  n_ordered=np.full(3, 8), shape="cyclic")
    for row in np.asarray(model.table):
        ordered, missing = row[:8], row[8]
        k = len(np.unique(ordered))
        assert (k in (2, 4)) if coarse else k == 8
        cells = np.asarray(merged_cells(jnp.arange(8), 8, jnp.float32(k)))
        for cell in range(k):
            assert len(np.unique(ordered[cells == cell])) == 1
        assert missing != 0 and missing not in ordered


# --- the affordable rounds: each round's noise at most the signal ------------------------

@pytest.mark.parametrize("epsilon", [0.05, 0.5, 5.0])
@pytest.mark.parametrize("signal", [0.5, 3.0, 17.5, 250.0, 1000.0])
@pytest.mark.parametrize(("delta", "gaussian"), [(0.0, False), (1e-6, False), (1e-6, True),
                                                 (1e-3, True)])
def test_affordable_rounds_are_the_most_whose_noise_stays_within_the_signal(
        epsilon, signal, delta, gaussian):
    """``R = affordable_rounds(ε, ε_0, signal, δ)`` (``signal``: the statistic's size in units
    of noise, ``ñ/(cells·min_signal)``; ``ε_0`` the route's prior): at ``R`` rounds after the
    prior each round's noise (the Laplace scale ``1/ε_r`` of the zCDP route's
    :func:`round_budget`, so
    ``ε_r·signal >= 1``, or the Gaussian ``σ = sqrt(1/(2ρ_r))`` of :func:`round_rho`) is at
    most ``signal``, and at ``R + 1`` it is not (up to the float32 rounding of the budgets,
    relative ``1e-4``)."""
    prior = prior_epsilon(epsilon, "gaussian" if gaussian else "laplace", delta)
    rounds = float(affordable_rounds(epsilon, prior, signal, delta, gaussian))
    assert rounds >= 0 and rounds == math.floor(rounds)

    def noise(r: float) -> float:
        if gaussian:
            return 1.0 / math.sqrt(2.0 * float(round_rho(epsilon, prior, r, delta)))
        return 1.0 / float(round_budget(epsilon, prior, r, delta, "zcdp"))

    if rounds > 0:
        assert noise(rounds) <= signal * (1.0 + 1e-4)
    assert noise(rounds + 1) > signal * (1.0 - 1e-4)


# --- the noise: Laplace, or with δ > 0 the Gaussian plan where it pays ---------------------

def laplace_plan(epsilon: float, rounds: int, delta: float, cells: int) -> dict:
    """A pure plan of ``rounds`` rounds after the prior (the fields :func:`gaussian_pays`
    reads)."""
    budget = round_budget(epsilon, prior_epsilon(epsilon), rounds, delta, "zcdp")
    return {"rounds": jnp.float32(rounds), "scale": noise_scale(budget, 1.0, "laplace", cells)}


def gaussian_threshold(epsilon: float, delta: float) -> float:
    """The rounds beyond which Gaussian noise beats Laplace noise at the same ``R``: the
    Gaussian's ``σ = sqrt(R/(2ρ'))`` (``ρ' = 0.9·ρ(ε, δ)`` after its prior) is below the
    Laplace standard deviation ``√2·R/(0.9·ε)`` iff ``R > (0.9·ε)²/(4ρ')``."""
    return (0.9 * epsilon) ** 2 / (4.0 * 0.9 * zcdp_rho(epsilon, delta))


@pytest.mark.parametrize(("pure_rounds", "gaussian_rounds", "pays"), [
    (3, 9, False), (8, 24, False), (30, 42, True), (60, 60, True), (60, 59, False)])
def test_gaussian_pays_for_many_rounds_only(pure_rounds, gaussian_rounds, pays):
    """``gaussian_pays`` reads public values only (the plans, ``ε``, ``δ``, the Gaussian
    route's prior ``ε_0``, the sensitivity and the cells): at ε = 1, δ = 1e-6 the Gaussian plan
    pays where it affords the pure plan's rounds and those are well past
    ``(0.9·ε)²/(4·0.9·ρ) = 12.9`` (the grid's rounding of σ moves the edge by a few per cent:
    the cases keep 25% away)."""
    assert list(inspect.signature(gaussian_pays).parameters) == [
        "plans", "epsilon", "gaussian_prior", "delta", "sensitivity", "cells"]
    assert gaussian_threshold(1.0, 1e-6) == pytest.approx(12.88, abs=0.01)
    plans = {"laplace": laplace_plan(1.0, pure_rounds, 1e-6, 8),
             "gaussian": {"rounds": jnp.float32(gaussian_rounds)}}
    gaussian_prior = prior_epsilon(1.0, "gaussian", 1e-6)
    assert bool(gaussian_pays(plans, 1.0, gaussian_prior, 1e-6, 1.0, 8)) is pays


@pytest.mark.slow
@pytest.mark.parametrize(("m", "n_features", "epsilon", "delta", "chosen"), [
    (20_000, 30, 1.0, 1e-6, "gaussian"), (20_000, 3, 1.0, 1e-6, "laplace"),
    (150, 30, 0.1, 1e-6, "laplace"), (20_000, 30, 1.0, 0.0, "laplace")])
def test_auto_noise_releases_the_rounds_with_the_plan_that_pays(m, n_features, epsilon, delta,
                                                                chosen):
    """``noise="auto"`` (cyclic rounds): at ``δ > 0`` a scout count picks the plan, both are
    drawn and the unused one costs nothing. 20,000 rows of 30 features at ε = 1 afford a
    30-round pass either way, past the 12.9 rounds from which the Gaussian pays: Gaussian
    rounds. A
    3-feature pass (3 rounds) or 150 rows at ε = 0.1 (one round): Laplace rounds. At
    ``δ = 0`` the Laplace plan alone exists, and no scout."""
    codes, y = planted(m=m, seed=11, n_features=n_features)
    _, costs = fit_newton_boosted(jax.random.key(0), jnp.asarray(codes), jnp.asarray(y),
                                  jnp.float32(epsilon), delta=delta, noise="auto",
                                  shape="cyclic",
                                  n_codes_per_feature=np.full(n_features, 8, np.int32))
    kinds = ("laplace", "gaussian") if delta > 0 else ("laplace",)
    scout = {SCOUT_LABEL} if delta > 0 else set()
    assert set(costs) == {PRIOR_LABEL} | scout | {ROUND_LABELS[kind] for kind in kinds}
    for kind in kinds:
        live = np.asarray(costs[ROUND_LABELS[kind]].epsilon) > 0
        assert bool(live.any()) == (kind == chosen)


# --- the focus passes: later passes revisit the features of largest released gain ---------

def test_focus_passes_revisit_the_feature_of_largest_gain_only():
    """Without DP (exact gains) on a problem where feature 0 alone carries signal: with
    ``passes=3, focus=1`` the two rounds after the first pass both visit feature 0. Every other
    feature's moves are those of the one-pass fit (one round each, the same first pass on the
    same scores); feature 0 gains two more rounds of moves, in the direction of its first (a
    Newton step of the logistic loss falls short of the minimum), and the training loss falls."""
    codes, y = planted(m=1000, seed=6, n_features=6)
    n_codes = np.full(6, 8, np.int32)
    one, three = (jax.jit(lambda c, y, p=passes: fit_newton_boosted(
        jax.random.key(3), c, y, None, n_codes_per_feature=n_codes, passes=p, focus=1)[0])(
            jnp.asarray(codes), jnp.asarray(y)) for passes in (1, 3))
    first, more = np.asarray(one.table), np.asarray(three.table)
    np.testing.assert_allclose(more[1:], first[1:], rtol=1e-6, atol=1e-7)
    extra = more[0] - first[0]
    assert np.all(np.abs(extra) > 0.05)
    assert np.all(np.sign(extra) == np.sign(first[0]))

    def log_loss(model) -> float:
        score = np.asarray(newton_decision(model, jnp.asarray(codes)), np.float64)
        return float(np.mean(np.logaddexp(0.0, score) - y * score))

    assert log_loss(three) < log_loss(one) - 1e-3


# --- the ledger stays within the request, whatever the configuration ----------------------

LEDGER_X = pd.DataFrame(np.random.default_rng(12).uniform(0.0, 1.0, (400, 3)),
                        columns=["a", "b", "c"])
LEDGER_Y = ((LEDGER_X["a"].to_numpy() > 0.5)
            ^ (np.random.default_rng(13).uniform(size=400) < 0.1)).astype(np.int32)
LEDGER_CONFIGS = [
    pytest.param(delta, noise, shape, passes,
                 marks=(() if (delta, noise, shape, passes) == (1e-6, "auto", "auto", 3)
                        else pytest.mark.slow),
                 id=f"{delta:g}-{noise}-{shape}-{passes}")
    for delta in (0.0, 1e-6)
    for noise in (("auto", "laplace") if delta == 0 else ("auto", "laplace", "gaussian"))
    for shape in ("auto", "cyclic", "random", "oblivious")
    for passes in ((1,) if shape == "oblivious" else (1, 3))]
"""Every noise (Gaussian only at ``δ > 0``), shape and pass count at ``δ`` 0 and 1e-6; the
fast tier runs ``noise="auto"`` at ``δ = 1e-6`` (both plans drawn)."""


@pytest.mark.parametrize(("delta", "noise", "shape", "passes"), LEDGER_CONFIGS)
def test_boosted_ledger_stays_within_the_request(delta, noise, shape, passes):
    """``dpjax.fit(method="boosted")``'s ledger (here a sweep's over ε ∈ {0.05, 0.5, 5} and two
    seeds: one compile per configuration; a grid point's ledger is its seeds' largest) spends
    at most the ``(ε, δ)`` asked for, on the prior and on rounds, numeric features merged."""
    sweep = dpjax.sweep(LEDGER_X, LEDGER_Y, method="boosted", epsilon=[0.05, 0.5, 5.0],
                        seeds=2, delta=delta, bounds={c: (0.0, 1.0) for c in LEDGER_X},
                        n_bins=16, noise=noise, shape=shape, passes=passes)
    for point, ledger in zip(sweep.grid, sweep.ledgers, strict=True):
        epsilon = point["epsilon"]
        assert ledger.epsilon <= epsilon * (1 + 1e-6)
        assert ledger.delta <= delta
        spent = {e.what for e in ledger.entries}
        assert PRIOR_LABEL in spent and spent & set(ROUND_LABELS.values())
        if shape != "auto":   # "auto" draws oblivious splits where the budget affords them
            assert (SELECT_LABEL in spent) == (shape == "oblivious")


# --- Gaussian rounds beside any prior share -----------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize(("epsilon", "prior_share"), [
    (1.0, 0.5), (100.0, 0.1), (0.05, 0.3), (0.5, 0.9)])
def test_gaussian_rounds_get_a_budget_beside_any_prior_share(epsilon, prior_share):
    """``noise="gaussian"`` with a valid ``prior_share`` and ``ε``: the prior takes
    ``prior_share·ρ`` in zCDP and the rounds the rest (a pure ``prior_share·ε`` prior would
    leave them nothing here: its ``ε_0²/2`` is over ``ρ(ε, δ)``); they are released with a
    positive ``ρ`` and move the model, and the ledger states at most the ``(ε, δ)`` asked
    for (the zCDP view where basic composition's summed ``δ`` would exceed it)."""
    assert (prior_share * epsilon) ** 2 / 2 >= zcdp_rho(epsilon, 1e-6)
    X = pd.DataFrame((CODES + 0.5) / 8, columns=["a", "b", "c"])
    model = dpjax.fit(X, Y, method="boosted", epsilon=epsilon, delta=1e-6, key=0, n_bins=8,
                      bounds={c: (0.0, 1.0) for c in X.columns}, noise="gaussian",
                      prior_share=prior_share)
    rounds = [e for e in model.privacy.entries if e.what == GAUSSIAN_ROUNDS]
    assert rounds and all(e.rho > 0 for e in rounds)
    assert np.any(np.asarray(model.params.table)) or np.any(np.asarray(model.params.trees.leaf))
    assert model.privacy.epsilon <= epsilon and model.privacy.delta <= 1e-6


@pytest.mark.parametrize(("rows", "epsilon", "params"), [
    (5_000, 1.0, {"noise": "auto", "prior_share": 0.01}),
    (5_000, 1.0, {"noise": "auto", "prior_share": 0.005, "shape": "random"}),
    (5, 10.0, {"noise": "gaussian"})])
def test_small_prior_shares_and_single_gaussian_rounds_fit_within_the_request(rows, epsilon,
                                                                             params):
    """The scout takes at most half the prior's share in either route, so a prior share below
    the scout's 2% still leaves the prior a positive budget; a fit of one Gaussian round
    (basic composition's summed ``δ`` above the request) reports the zCDP view. Each fits and
    spends at most ``(ε, δ = 1e-6)``."""
    rng = np.random.default_rng(rows)
    X = pd.DataFrame({"a": rng.uniform(0.0, 1.0, rows)})
    y = (X["a"] > 0.5).astype(int).to_numpy()
    model = dpjax.fit(X, y, method="boosted", epsilon=epsilon, delta=1e-6, key=0,
                      bounds={"a": (0.0, 1.0)}, **params)
    assert model.privacy.epsilon <= epsilon and model.privacy.delta <= 1e-6
    prior = {e.what: e for e in model.privacy.entries}[PRIOR_LABEL]
    assert prior.epsilon > 0


# --- oblivious rounds -------------------------------------------------------------------------

@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("share", [0.1, 0.5, 0.7, 0.95])
@pytest.mark.parametrize("levels", [1, 4, 6])
def test_an_oblivious_round_splits_its_budget_within_both_views(noise, share, levels):
    """The leaves' ``(1 − s)·b`` and ``levels`` pure selections of ``ε_l``: pure rounds stay
    within ``ε_r`` summed and within ``ε_r²/2`` in zCDP; Gaussian rounds within ``ρ_r``."""
    budget = jnp.float32(0.37)
    leaves, select = split_round(budget, noise, jnp.float32(share), levels)
    leaves, select = float(leaves), float(select)
    if noise == "gaussian":
        assert leaves + levels * select**2 / 2 <= 0.37
        assert leaves + levels * select**2 / 2 > 0.37 * (1 - 1e-5)
    else:
        assert leaves + levels * select <= 0.37
        assert leaves**2 / 2 + levels * select**2 / 2 <= 0.37**2 / 2
    assert split_round(budget, noise, jnp.float32(share), 0) == (budget, 0.0)


def test_oblivious_fit_releases_oblivious_trees_and_ledgers_each_level_draw():
    codes, y = planted(m=1500, seed=8)
    model, costs = fit_newton_boosted(jax.random.key(2), jnp.asarray(codes), jnp.asarray(y),
                                      jnp.float32(2.0), n_codes_per_feature=N_CODES,
                                      shape="oblivious", oblivious_trees=6, depth=3,
                                      split_share=0.5)
    chex.assert_shape(model.trees.feature, (6, 7))
    for level in range(3):   # every node of a level holds the level's split
        for split in (model.trees.feature, model.trees.threshold):
            assert np.all(np.ptp(np.asarray(split[:, level_slice(level)]), axis=1) == 0)
    chex.assert_shape(costs[SELECT_LABEL].epsilon, (6, 3))
    live = np.asarray(costs[LAPLACE_ROUNDS].epsilon) > 0
    selections = np.asarray(costs[SELECT_LABEL].epsilon)
    assert np.all(selections[~live] == 0) and np.all(selections[live] > 0)
    total = (float(costs[PRIOR_LABEL].epsilon) + selections.sum()
             + float(np.sum(costs[LAPLACE_ROUNDS].epsilon)))
    assert total <= 2.0
    np.testing.assert_allclose(selections[live].sum(axis=1),
                               np.asarray(costs[LAPLACE_ROUNDS].epsilon)[live], rtol=1e-3)


@pytest.mark.parametrize(("m", "epsilon", "many", "few"),
                         [(6000, 1.0, True, True), (1000, 1.0, True, False),
                          (300, 0.1, False, False)])
def test_auto_shape_boosts_oblivious_trees_where_the_budget_affords_them(m, epsilon, many, few):
    """16 indicator features: the cyclic pass would split the budget 16 ways, so ``"auto"``
    boosts private oblivious trees where their public schedule affords two (1,000 rows or more
    at ``ε = 1``), and no oblivious tree on small data at small ``ε`` (300 rows at ``ε = 0.1``);
    on 8 features only where the budget affords all ``oblivious_trees`` (6,000 rows at
    ``ε = 1``, not 1,000)."""
    codes, y = planted(m=m, seed=3, n_features=MANY_FEATURES)
    codes = (codes > 3).astype(np.uint8)
    n_codes = np.full(MANY_FEATURES, 2, np.int32)
    model, costs = fit_newton_boosted(jax.random.key(1), jnp.asarray(codes), jnp.asarray(y),
                                      jnp.float32(epsilon), n_codes_per_feature=n_codes)
    assert bool(np.any(np.asarray(costs[SELECT_LABEL].epsilon) > 0)) == many
    if many:   # no cyclic moves; the planted feature splits the first tree's root
        assert np.all(np.asarray(model.table) == 0)
        assert int(model.trees.feature[0, 0]) == 0
    _, narrow = fit_newton_boosted(jax.random.key(1), jnp.asarray(codes[:, :8]),
                                   jnp.asarray(y), jnp.float32(epsilon),
                                   n_codes_per_feature=n_codes[:8])
    assert bool(np.any(np.asarray(narrow[SELECT_LABEL].epsilon) > 0)) == few


@pytest.mark.parametrize(("wide", "oblivious"), [(0, True), (7, True), (8, False), (16, False)])
def test_auto_shape_takes_no_oblivious_tree_where_most_features_have_many_categories(
        wide, oblivious):
    """An oblivious level splits a feature's codes at one threshold: ``"auto"`` grows oblivious
    trees only where a threshold serves more than half the features (numeric ones, and
    categorical ones of at most ``THRESHOLD_CODES`` codes). The 6,000-row, 16-feature fit of
    :func:`test_auto_shape_boosts_oblivious_trees_where_the_budget_affords_them` with ``wide``
    of its indicator features declared with 6 categorical codes (public facts only: the data
    are the same) takes oblivious trees with 7 such features (9 of 16 served), not with 8."""
    codes, y = planted(m=6000, seed=3, n_features=MANY_FEATURES)
    codes = (codes > 3).astype(np.uint8)
    n_codes = np.where(np.arange(MANY_FEATURES) < MANY_FEATURES - wide, 2, 6).astype(np.int32)
    assert threshold_served(tuple(n_codes), (0,) * MANY_FEATURES) == MANY_FEATURES - wide
    _, costs = fit_newton_boosted(jax.random.key(1), jnp.asarray(codes), jnp.asarray(y),
                                  jnp.float32(1.0), n_codes_per_feature=n_codes)
    assert (SELECT_LABEL in costs) == oblivious   # compiled without them
    if oblivious:
        assert bool(np.any(np.asarray(costs[SELECT_LABEL].epsilon) > 0))
    # numeric features are served whatever their bins
    assert threshold_served((34, 34, 6), (32, 32, 0)) == 2


def test_oblivious_fit_is_a_function_of_its_key():
    """The same key gives the same model and costs; another key other level draws."""
    codes, y = planted(m=800, seed=9, n_features=6)

    def fit(seed: int):
        return fit_newton_boosted(jax.random.key(seed), jnp.asarray(codes), jnp.asarray(y),
                                  jnp.float32(1.0), n_codes_per_feature=np.full(6, 8),
                                  shape="oblivious", depth=3)

    first, again, other = fit(4), fit(4), fit(5)
    chex.assert_trees_all_equal(first, again)
    assert not np.array_equal(first[0].trees.feature, other[0].trees.feature)
