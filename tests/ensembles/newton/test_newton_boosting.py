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
from dpjax.ensembles.newton.boosting import (
    EPOCHS_EPSILON,
    GAUSSIAN_CELL_BOUND,
    GRAD_UNIT,
    PRIOR_LABEL,
    ROUNDS_LABEL,
    STEP_CLIP,
    cell_bound,
    gradient_stats,
    newton_moves,
    noise_scale,
    release_sums,
)
from dpjax.learners import Boosted
from dpjax.privacy import zcdp_to_dp
from dpjax.privacy.composition import prior_and_rounds, zcdp_budget
from tests.helpers.fits import fit_newton_boosted

N_CODES = np.full(3, 8, np.int32)
NO_PRIOR = {"min_signal": 4.0, "prior_share": 0.0, "noise": "laplace", "delta": 0.0}
"""The schedule's settings where a test names none: ``min_signal`` 4, no prior share."""
ALPHA_PRIOR = {**NO_PRIOR, "prior_share": 0.1}


def planted(m: int = 400, seed: int = 0, flip: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 8, (m, 3)).astype(np.uint8)
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

@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("rounds", [3, 14, 41, 400])
@pytest.mark.parametrize("delta", [0.0, 1e-6, 1e-3])
def test_round_budgets_stay_within_the_request_under_the_composition_used(epsilon, rounds,
                                                                         delta):
    budget = {k: float(v) for k, v in prior_and_rounds(epsilon, rounds, prior_share=0.1,
                                                       delta=delta).items()}
    basic = budget["prior"] + rounds * budget["round"]
    rho = (budget["prior"] ** 2 + rounds * budget["round"] ** 2) / 2
    zcdp = zcdp_to_dp(rho, delta) if delta > 0 else math.inf
    assert min(basic, zcdp) <= epsilon
    assert min(basic, zcdp) >= epsilon * (1 - 1e-3)
    if delta == 0:
        assert budget["round"] == pytest.approx(0.9 * epsilon / rounds, rel=1e-5)


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
@pytest.mark.parametrize("delta", [1e-6, 1e-3])
def test_gaussian_budgets_compose_in_zcdp_within_the_request(epsilon, rounds, delta):
    budget = {k: float(v) for k, v in prior_and_rounds(epsilon, rounds, prior_share=0.1,
                                                       delta=delta, gaussian=True).items()}
    rho = budget["prior"] ** 2 / 2 + rounds * budget["round"]   # Laplace prior: ε_0²/2
    assert zcdp_to_dp(rho, delta) <= epsilon
    assert zcdp_to_dp(rho, delta) >= epsilon * (1 - 1e-3)


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
    rounds = [e for e in ledger.entries if e.what == ROUNDS_LABEL]
    assert rounds and all(e.rho is not None and "Gaussian" in e.mechanism for e in rounds)
    assert sum(e.count for e in rounds) == 40
    assert ledger.epsilon == ledger.zcdp_view[0] <= 1.0
    assert ledger.epsilon >= 0.9 and ledger.delta == 1e-6
    assert "zCDP composition" in str(ledger) and "basic epsilon" in str(ledger)
    assert np.mean(model.predict(X) == Y) > 0.8


def test_zcdp_budget_converts_back_to_epsilon():
    for epsilon in (0.01, 1.0, 30.0):
        rho = float(zcdp_budget(epsilon, 1e-6))
        assert zcdp_to_dp(rho, 1e-6) == pytest.approx(epsilon, rel=1e-4)
        assert zcdp_to_dp(rho, 1e-6) <= epsilon
    assert float(zcdp_budget(1.0, 0.0)) == 0.0


@pytest.mark.slow
def test_many_rounds_with_delta_use_the_zcdp_split_and_the_ledger_shows_both_views():
    X = pd.DataFrame((CODES + 0.5) / 8, columns=["a", "b", "c"])
    bounds = {c: (0.0, 1.0) for c in X.columns}
    model = dpjax.fit(X, Y, method="boosted", epsilon=1.0, delta=1e-5, bounds=bounds, key=0,
                      n_bins=8, shape="random", n_trees=200, depth=2, min_signal=1e-3)
    ledger = model.privacy
    assert ledger.composition == "zcdp" and ledger.zcdp_view is not None
    assert ledger.basic_epsilon > 1.0          # 200 rounds: the basic sum is over the request
    assert ledger.epsilon == ledger.zcdp_view[0] <= 1.0
    assert ledger.delta == 1e-5
    assert "zCDP composition" in str(ledger) and "basic epsilon" in str(ledger)
    pure = dpjax.fit(X, Y, method="boosted", epsilon=1.0, bounds=bounds, key=0, n_bins=8,
                     shape="random", n_trees=200, depth=2, min_signal=1e-3)
    assert pure.privacy.delta == 0.0 and pure.privacy.epsilon <= 1.0
    assert pure.privacy.zcdp_view is None
    rounds = {e.what: e.epsilon for e in ledger.entries}
    assert rounds[ROUNDS_LABEL] > {e.what: e.epsilon for e in pure.privacy.entries}[
        ROUNDS_LABEL]


# --- the public schedule: reads ε, the feature count and the configuration only ------------

@pytest.mark.slow
def test_default_schedule_is_a_function_of_public_quantities_only():
    # ε, the feature count, the configuration and the *released* size: no data argument
    assert list(inspect.signature(active_rounds).parameters) == [
        "epsilon", "n_features", "shape", "n_trees", "size", "cells", "min_signal",
        "prior_share", "noise", "delta"]
    # few released rows at a small ε: fewer, less noisy rounds (at least one)
    assert float(active_rounds(0.1, 41, "cyclic", 20, 700.0, 10.0, **ALPHA_PRIOR)) == 1
    assert float(active_rounds(1.0, 41, "cyclic", 20, 700.0, 10.0, **ALPHA_PRIOR)) == 15
    assert float(active_rounds(1.0, 14, "cyclic", 20, 14_000.0, 10.0, **ALPHA_PRIOR)) == 14
    assert float(active_rounds(1.0, 7, "cyclic", 20, **NO_PRIOR)) == 7
    assert float(active_rounds(EPOCHS_EPSILON, 7, "cyclic", 20, **NO_PRIOR)) == 14
    assert float(active_rounds(None, 7, "cyclic", 20, **NO_PRIOR)) == 14
    assert float(active_rounds(0.1, 7, "random", 20, **NO_PRIOR)) == 20
    # two datasets of the same shape but different values: the same releases, the same costs
    other_codes, other_y = planted(seed=9, flip=0.4)
    for epsilon in (0.5, 8.0):
        costs = [fit_newton_boosted(jax.random.key(0), jnp.asarray(c), jnp.asarray(y),
                                    jnp.float32(epsilon), n_codes_per_feature=N_CODES)[1]
                 for c, y in ((CODES, Y), (other_codes, other_y))]
        chex.assert_trees_all_equal(costs[0], costs[1])
        live = np.asarray(costs[0][ROUNDS_LABEL].epsilon) > 0
        assert live.sum() == float(active_rounds(epsilon, 3, "cyclic", 20, **NO_PRIOR))


@pytest.mark.slow
def test_auto_shape_boosts_random_trees_where_the_cyclic_schedule_cannot_afford_a_pass():
    """``shape="auto"`` reads the public schedule only: at ε = 0.05 on 400 rows the cyclic
    shape affords one round for three features, so the fit boosts random trees (the table is
    empty, the rounds are the random schedule's); at ε = 8 it makes two cyclic passes."""
    assert list(inspect.signature(auto_uses_random).parameters) == [
        "cyclic_rounds", "n_features", "shape"]
    assert bool(auto_uses_random(jnp.float32(2.0), 3, "auto"))
    assert not bool(auto_uses_random(jnp.float32(3.0), 3, "auto"))
    assert not bool(auto_uses_random(jnp.float32(1.0), 3, "cyclic"))
    codes, y = jnp.asarray(CODES), jnp.asarray(Y)
    small, small_costs = fit_newton_boosted(jax.random.key(0), codes, y, jnp.float32(0.05),
                                            n_codes_per_feature=N_CODES)
    assert np.all(np.asarray(small.table) == 0) and np.any(np.asarray(small.trees.leaf) != 0)
    live = np.asarray(small_costs[ROUNDS_LABEL].epsilon) > 0
    assert 1 <= live.sum() <= 20 and not live[20:].any()       # at most the 20 random trees
    large, large_costs = fit_newton_boosted(jax.random.key(0), codes, y, jnp.float32(8.0),
                                            n_codes_per_feature=N_CODES)
    assert np.all(np.asarray(large.trees.leaf) == 0) and np.any(np.asarray(large.table) != 0)
    assert int((np.asarray(large_costs[ROUNDS_LABEL].epsilon) > 0).sum()) == 6
    assert np.mean(np.asarray(newton_decision(large, codes) > 0) == Y) > 0.6
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
@pytest.mark.parametrize("shape", ["cyclic", "random"])
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


def test_boosted_config_validates_and_refuses_more_than_two_classes():
    with pytest.raises(ValueError, match="shape"):
        Boosted(shape="oblivious")
    with pytest.raises(ValueError, match="regularisation"):
        Boosted(regularisation=0.0)
    X = pd.DataFrame({"a": np.linspace(0, 1, 30)})
    with pytest.raises(ValueError, match="binary"):
        dpjax.fit(X, np.arange(30) % 3, method="boosted", epsilon=1.0, bounds={"a": (0, 1)},
                  classes=[0, 1, 2])


@pytest.mark.slow
def test_sweep_maps_grid_points_and_each_equals_its_single_fit():
    """The boosted sweep fits its grid points one after the other (``sweep_by_map``: each
    round skips the branch it does not use): grid point ``i`` of seed ``j`` is exactly the
    learner's fit with its own noise key and the seed's shared structure key, on both sides of
    the auto shape's switch (few rounds at the small ε: random trees; a full cyclic pass at
    the large one)."""
    from dpjax._keys import grid_keys
    from dpjax._preparation import fit_grid
    from tests.conftest import learner_fit

    assert Boosted.sweep_by_map and "by_map" in inspect.signature(fit_grid).parameters
    X = pd.DataFrame((CODES + 0.5) / 8, columns=["a", "b", "c"])
    fit = dict(method="boosted", bounds={c: (0.0, 1.0) for c in X.columns}, n_bins=8)
    sweep = dpjax.sweep(X, Y, epsilon=[0.05, 5.0], learning_rate=[0.5, 1.0], seeds=2, **fit)
    cyclic = set()
    for i, point in enumerate(sweep.grid):
        for j, seed in enumerate(sweep.seeds):
            model = sweep.model(i, j)
            structure_key, point_keys = grid_keys(dpjax.as_key(seed), len(sweep.grid))
            params, costs = learner_fit(model, X, Y, point_keys[i], point["epsilon"],
                                        structure_key=structure_key,
                                        learning_rate=point["learning_rate"])
            chex.assert_trees_all_equal(model.params, params)
            ledger = dpjax.PrivacyLedger(requested_epsilon=point["epsilon"]).with_costs(costs)
            assert model.privacy.epsilon == ledger.epsilon
            cyclic.add(bool(np.any(np.asarray(params.table))))
    assert cyclic == {True, False}
