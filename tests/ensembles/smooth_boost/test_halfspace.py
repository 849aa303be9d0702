"""The Gaussian large-margin halfspace weak learner for LazyBregBoost
(``dpjax.ensembles.smooth_boost.halfspace``, spec ``private-smooth-boosting.md`` §4.2–4.3, BCS20
Thm 27): the weighted mean against a float64 brute force, the level form of the measure against
the dense projection for votes on the ``1/Q`` grid, the replace-one L2 sensitivity of the
computed weighted mean against ``4/(κn)``, the vote grid and range, learning and costs of the
boosted halfspaces, ``method="smooth_boost", weak_learner="halfspace"`` through the API and the
estimator, and an audit of one round."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.auditing import audit_release
from dpjax.ensembles.smooth_boost import (
    LevelMeasure,
    WeakLearner,
    level_weights,
    smooth_boost,
    smooth_boost_decision,
)
from dpjax.ensembles.smooth_boost.halfspace import (
    RESOLUTION,
    Halfspace,
    dp_halfspace_learner,
    halfspace_predict,
    halfspace_sensitivity,
    halfspace_value,
    weighted_mean,
)
from dpjax.privacy import Cost, zcdp_to_dp

Q = RESOLUTION


def _onehot(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """``x = onehot(codes)/sqrt(d)``, float64 ``[n, d, K]`` (unit norm)."""
    return np.eye(n_codes)[codes] / math.sqrt(codes.shape[1])


def _unit_weights(rng: np.random.Generator, d: int, n_codes: int) -> np.ndarray:
    """A random direction ``w [d, K]`` with ``‖w‖₂ = 1`` (float32)."""
    w = rng.normal(size=(d, n_codes))
    return (w / np.linalg.norm(w)).astype(np.float32)


def _halfspace(weight) -> Halfspace:
    return Halfspace(jnp.asarray(weight, jnp.float32), None)


# --------------------------------------------------------------------------------------------
# the weighted mean and its sensitivity
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_weighted_mean_matches_a_float64_brute_force(seed):
    """``z = Σ_i μ̂(i)·y_i·x_i`` with ``μ̂(i) = weight[level(i)]·multiplicity_i`` and
    ``x_i = onehot(codes_i)/sqrt(d)``: the int32 level counts reproduce the float64 sum. The
    weights sum to 1 over the examples, so ``|z| <= 1/sqrt(d)`` and the float32 rounding of the
    ``L``-term sums is below ``(L + 2)·2**−24`` (``L <= 12``): tolerance 1e-6."""
    rng = np.random.default_rng(seed)
    n, d, n_codes, levels = int(rng.integers(1, 60)), int(rng.integers(1, 5)), 6, 12
    codes = rng.integers(0, n_codes, (n, d)).astype(np.uint8)
    y = rng.choice([-1, 1], n)
    level = rng.integers(0, levels, n)
    multiplicity = rng.integers(0, 4, n)
    multiplicity[0] = max(multiplicity[0], 1)
    weight = rng.uniform(0.1, 1.0, levels)
    weight /= (weight[level] * multiplicity).sum()
    measure = LevelMeasure(jnp.asarray(level, jnp.int32), jnp.asarray(weight, jnp.float32),
                           jnp.asarray(multiplicity, jnp.int32))
    z = np.asarray(weighted_mean(jnp.asarray(codes), jnp.asarray(y), measure, n_codes))
    mass = np.float32(weight).astype(np.float64)[level] * multiplicity
    expected = np.einsum("i,idk->dk", mass * y, _onehot(codes, n_codes))
    assert z.shape == (d, n_codes)
    np.testing.assert_allclose(z, expected, atol=1e-6, rtol=0)


def _history_levels(codes, y, weights, multiplicity, kappa, rate):
    """What ``smooth_boost``'s ``round_levels`` hands the learner after the history
    ``weights [T, d, K]``: quantised votes → summed gains in units of ``1/Q`` → level counts
    (by multiplicity) → :func:`level_weights` at ``λ/Q`` → :func:`weighted_mean`."""
    votes = jax.vmap(halfspace_predict, in_axes=(0, None))(Halfspace(weights, None), codes)
    gains = jnp.round(0.5 * Q * (1.0 + y * votes)).astype(jnp.int32)
    level = gains.sum(0)
    counts = jnp.zeros(weights.shape[0] * Q + 1, jnp.int32).at[level].add(multiplicity)
    measure = LevelMeasure(level, level_weights(counts, kappa, rate / Q), multiplicity)
    return weighted_mean(codes, y, measure, weights.shape[2]), level


@pytest.mark.parametrize("seed", range(4))
def test_replacing_one_example_moves_the_weighted_mean_by_at_most_the_sensitivity(seed):
    """Thm 27 (replace-one, ``ζ = 1/(κn)``): the same history of halfspaces on neighbouring
    samples (one example replaced) gives κ-smooth measures at most ``ζ`` apart in total
    variation, so ``‖z − z'‖₂ <= μ̂(i) + μ̂'(i) + ‖μ̂ − μ̂'‖₁ <= 4/(κn)``; the computed float32
    weighted means stay within ``halfspace_sensitivity`` (``4/(κn)`` plus the rounding), which
    is within 1.3·4/(κn). Every other example's mass moves the same way, by ``|μ̂'(i) − μ̂(i)|``
    in all, so the joint bound ``2·max(μ̂(i), μ̂'(i)) <= 2/(κn)`` of spec A6 holds as well. The
    sample has rows of multiplicity 0 and two padding rows of multiplicity 3 (as
    ``sample_to_size`` makes them); replaced examples are drawn at random and adversarially
    (the heaviest example with its label flipped, its codes kept or all changed)."""
    rng = np.random.default_rng(200 + seed)
    rows, d, n_codes, rounds = (30, 150, 400, 1000)[seed], 4, 5, int(rng.integers(1, 10))
    kappa, rate = float(rng.uniform(0.05, 0.9)), float(rng.uniform(0.1, 2.0))
    codes = rng.integers(0, n_codes, (rows, d)).astype(np.uint8)
    y = rng.choice([-1, 1], rows)
    multiplicity = np.ones(rows, np.int32)
    multiplicity[:3] = 0
    multiplicity[-2:] = 3
    n = int(multiplicity.sum())
    history = jnp.asarray(np.stack([_unit_weights(rng, d, n_codes) for _ in range(rounds)]))
    compute = jax.jit(lambda c, yy: _history_levels(c, yy, history, jnp.asarray(multiplicity),
                                                    kappa, rate))
    base, level = compute(jnp.asarray(codes), jnp.asarray(y))
    base, level = np.asarray(base, np.float64), np.asarray(level)
    single = np.nonzero(multiplicity == 1)[0]
    heaviest = int(single[np.argmin(level[single])])
    bound = float(halfspace_sensitivity(n, kappa, rounds * Q + 1))
    unit = 1.0 / (kappa * n)
    worst = 0.0
    for trial in range(42):
        kind = trial % 3          # 0: heaviest, label flipped; 1: and codes changed; 2: random
        i = heaviest if kind < 2 else int(rng.choice(single))
        codes2, y2 = codes.copy(), y.copy()
        if kind == 1:
            codes2[i] = (codes[i] + 1 + rng.integers(0, n_codes - 1, d)) % n_codes
        elif kind == 2:
            codes2[i] = rng.integers(0, n_codes, d)
        y2[i] = -y[i] if kind < 2 else rng.choice([-1, 1])
        moved = np.asarray(compute(jnp.asarray(codes2), jnp.asarray(y2))[0], np.float64)
        worst = max(worst, float(np.linalg.norm(moved - base)))
    ratio = worst / unit
    message = f"worst ‖z − z'‖₂ = {ratio:.4f}/(κn) (n = {n}, κ = {kappa:.3f})"
    assert worst <= bound, f"{message} > bound {bound / unit:.4f}/(κn)"
    assert bound <= 1.3 * 4.0 * unit, (bound, 4.0 * unit)
    # the joint bound 2/(κn) (spec A6) holds too, up to the same float rounding
    assert worst <= 2.0 * unit + (bound - 4.0 * unit), message
    assert ratio > 0.5, message


# --------------------------------------------------------------------------------------------
# the level measure equals the dense measure for quantised votes
# --------------------------------------------------------------------------------------------


def _dense_halfspace_learner(n_codes: int) -> WeakLearner:
    """The non-private centering learner on the dense float distribution (resolution 0):
    ``z = Σ_i μ̂(i)·y_i·x_i`` computed directly from the one-hot rows, normalised, with the
    quantised votes of :func:`halfspace_predict`."""
    def fit(key, distribution, codes, y):
        x = jax.nn.one_hot(codes, n_codes, dtype=jnp.float32) / math.sqrt(codes.shape[1])
        z = jnp.sum((distribution * y)[:, None, None] * x, axis=0)
        norm = jnp.sqrt(jnp.sum(z * z))
        return Halfspace(jnp.where(norm > 0, z / jnp.where(norm > 0, norm, 1.0), 0.0),
                         Cost(jnp.float32(0.0), jnp.float32(0.0), "none (not private)"))

    return WeakLearner(fit, halfspace_predict, resolution=0)


def test_level_measure_reproduces_the_dense_measure_for_quantised_votes():
    """With votes on the grid ``{−1 + 2j/Q}`` every gain ``½(1 + y·h)`` is a multiple of ``1/Q``,
    so ``μ̃ = κ·e^{−λ·L} = κ·e^{−(λ/Q)·level}``: the booster's level path (resolution ``Q``,
    int32 counts, :func:`level_weights` at ``λ/Q``) and its dense path (resolution 0,
    :func:`next_measure`) hand the centering learner the same measure, and after ``T = 6``
    rounds the released directions agree to float32 rounding (1e-4), the quantised votes
    exactly. The measure moves (the rounds differ), so the check is not vacuous."""
    rng = np.random.default_rng(3)
    n, d, n_codes, rounds, kappa, rate = 300, 4, 5, 6, 0.3, 0.7
    codes = rng.integers(0, n_codes, (n, d)).astype(np.uint8)
    score = rng.normal(size=(d, n_codes))[np.arange(d), codes].sum(1)
    y = np.where((score > 0) ^ (rng.uniform(size=n) < 0.15), 1, -1)
    level_learner = dp_halfspace_learner(np.full(d, n_codes), None, kappa, n, 1e-6)
    assert level_learner.resolution == Q
    out = {}
    for name, learner in (("level", level_learner), ("dense", _dense_halfspace_learner(n_codes))):
        out[name] = jax.jit(lambda key, learner=learner: smooth_boost(
            key, jnp.asarray(codes), jnp.asarray(y), learner, rounds, kappa, rate))(
                jax.random.key(0))
    level_w, dense_w = np.asarray(out["level"].weight), np.asarray(out["dense"].weight)
    np.testing.assert_allclose(level_w, dense_w, atol=1e-4, rtol=0)
    votes = [np.asarray(jax.vmap(halfspace_predict, in_axes=(0, None))(out[k], codes))
             for k in ("level", "dense")]
    np.testing.assert_array_equal(votes[0], votes[1])
    np.testing.assert_allclose(np.linalg.norm(level_w.reshape(rounds, -1), axis=1), 1.0,
                               atol=1e-5)
    assert np.abs(level_w[1:] - level_w[0]).max() > 0.05    # the reweighting changed the fit


# --------------------------------------------------------------------------------------------
# the hypothesis: its value and its votes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_votes_lie_on_the_grid_within_one_step_of_the_value(seed):
    """``halfspace_value`` is ``Σ_f w[f, code_f]/sqrt(d) = w·x``, in ``[−1, 1]`` for a unit
    ``w`` by Cauchy–Schwarz (``‖x‖₂ = 1``: its clip is inactive), ``±1`` for ``w = ±x``;
    ``halfspace_predict`` is exactly on ``{−1 + 2j/Q}`` and at most ``1/Q`` from it (round to
    the nearest of a grid of step ``2/Q``). All-zero weights (an abstaining round) give 0."""
    rng = np.random.default_rng(seed)
    n, d, n_codes = 500, int(rng.integers(1, 8)), int(rng.integers(2, 12))
    codes = rng.integers(0, n_codes, (n, d)).astype(np.uint8)
    x = _onehot(codes, n_codes)
    for weight in (_unit_weights(rng, d, n_codes), x[0].astype(np.float32),
                   -x[1].astype(np.float32)):
        value = np.asarray(halfspace_value(_halfspace(weight), jnp.asarray(codes)))
        vote = np.asarray(halfspace_predict(_halfspace(weight), jnp.asarray(codes)))
        w = weight.astype(np.float64)
        dot = np.einsum("dk,idk->i", w, x)
        assert np.all(np.abs(dot) <= np.linalg.norm(w) * (1 + 1e-12))     # Cauchy–Schwarz
        assert np.linalg.norm(w) <= 1.0 + 1e-6
        np.testing.assert_allclose(value, dot, atol=1e-6)
        steps = (vote.astype(np.float64) + 1.0) * Q / 2
        np.testing.assert_array_equal(steps, np.round(steps))
        assert steps.min() >= 0 and steps.max() <= Q
        assert np.all(np.abs(vote.astype(np.float64) - value) <= 1.0 / Q + 1e-6)
    assert value[1] == pytest.approx(-1.0, abs=1e-6) and vote[1] == -1.0
    zero = _halfspace(np.zeros((d, n_codes)))
    np.testing.assert_array_equal(halfspace_value(zero, jnp.asarray(codes)), 0.0)
    np.testing.assert_array_equal(halfspace_predict(zero, jnp.asarray(codes)), 0.0)


# --------------------------------------------------------------------------------------------
# boosted halfspaces: learning and costs
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_boosted_halfspaces_learn_an_additive_rule_at_large_rho_and_spend_their_budget():
    """On 2,000 rows of 5 features with 10 codes, ``y`` the sign of an additive score
    ``Σ_f a_f(code_f)`` (centred at its median) with 5% label noise (Bayes accuracy 0.95; a
    halfspace over the one-hot bins represents it), ``T = 15`` rounds at ``ρ = 10`` per round
    (noise ``σ ≈ 4/(κn·sqrt(2ρ))``, far below ``‖z‖``) reach 0.85 training accuracy with the
    averaged halfspace; at ``ρ = 1e-7`` the noise swamps the weighted mean (accuracy near
    chance). Each round's cost has ``ρ`` at most the requested and at least 0.85 of it (the
    4-bit grid mantissa costs at most ``1 − (1 − 1/17)² ≈ 11%``)."""
    rng = np.random.default_rng(0)
    n, d, n_codes, rounds, kappa = 2000, 5, 10, 15, 0.3
    codes = rng.integers(0, n_codes, (n, d)).astype(np.uint8)
    score = rng.normal(size=(d, n_codes))[np.arange(d), codes].sum(1)
    y = np.where((score > np.median(score)) ^ (rng.uniform(size=n) < 0.05), 1, -1)
    accuracy = {}
    for rho in (1e-7, 10.0):
        learner = dp_halfspace_learner(np.full(d, n_codes), rho, kappa, n, 1e-6)
        halfspaces = jax.jit(lambda key, learner=learner: smooth_boost(
            key, jnp.asarray(codes), jnp.asarray(y), learner, rounds, kappa, 0.5))(
                jax.random.key(1))
        decision = smooth_boost_decision(halfspaces, halfspace_value, jnp.asarray(codes))
        accuracy[rho] = float((np.where(np.asarray(decision) >= 0, 1, -1) == y).mean())
        spent = np.asarray(halfspaces.cost.rho, np.float64)
        assert spent.shape == (rounds,)
        assert np.all(spent <= np.float32(rho)) and np.all(spent >= 0.85 * rho), spent / rho
        assert np.all(np.isfinite(np.asarray(halfspaces.cost.epsilon)))
    assert accuracy[10.0] >= 0.85, accuracy
    assert accuracy[1e-7] <= 0.65, accuracy


@pytest.mark.slow
@pytest.mark.parametrize("rho", [0.5])
def test_boosted_halfspace_audit_within_its_claim(rho):
    """One round on a 6-row sample and its replace-one neighbour (an outlier row with the other
    label in place of the last; ``κn = 3``): the empirical ε lower bound of the released
    direction stays at or below the round's own ``(ε, δ)`` at ``ρ``."""
    codes = jnp.array([[0, 1], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]], jnp.uint8)
    y = jnp.array([1, -1, -1, 1, -1, 1])
    neighbour = (codes.at[-1].set(jnp.array([1, 0], jnp.uint8)), y.at[-1].set(-1))
    learner = dp_halfspace_learner(np.array([2, 2]), rho, 0.5, 6, 1e-5)

    def release(key, data):
        return smooth_boost(key, data[0], data[1], learner, 1, 0.5, 1.0).weight

    cost = smooth_boost(jax.random.key(0), codes, y, learner, 1, 0.5, 1.0).cost
    epsilon, delta = float(cost.epsilon[0]), float(cost.delta[0])
    assert float(cost.rho[0]) <= rho and 1e-5 <= delta <= 1.01e-5
    report = audit_release(release, (codes, y), neighbour, epsilon=epsilon, delta=delta,
                           n=10_000, key=3, name="smooth-boosted Gaussian halfspace")
    assert report.passed, report.summary()


# --------------------------------------------------------------------------------------------
# method="smooth_boost", weak_learner="halfspace"
# --------------------------------------------------------------------------------------------


def _planted(m: int = 1200, seed: int = 11) -> tuple[pd.DataFrame, np.ndarray, dict]:
    """Three features in [0, 1] (public bounds, 10 bins); y = 1 iff a + b > 1, with 5% label
    noise: an additive rule over the bins."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(0.0, 1.0, (m, 3)), columns=["a", "b", "c"])
    y = ((X["a"] + X["b"] > 1.0) ^ (rng.uniform(size=m) < 0.05)).astype(np.int64).to_numpy()
    return X, y, {name: (0.0, 1.0) for name in X.columns}


@pytest.mark.slow
def test_smooth_boost_with_halfspaces_fit_ledger_summary_and_estimator():
    """``dpjax.fit(method="smooth_boost", weak_learner="halfspace", ε = 1, δ = 1e-6)``: the
    ledger is private, composed in zCDP, spends at most ``ε`` at ``δ = 1e-6`` and at least what
    the Gaussian's grid rounding leaves (about 0.945 here), and has a "halfspaces
    (Gaussian)" entry whose releases carry their ``ρ``; rounds after the public
    schedule abstain (all-zero weights); the summary describes the averaged halfspace; the
    probabilities sum to 1; the scikit-learn estimator fits and scores every row."""
    X, y, bounds = _planted()
    model = dpjax.fit(X, y, method="smooth_boost", weak_learner="halfspace", epsilon=1.0,
                      delta=1e-6, bounds=bounds, key=0, n_rounds=5)
    ledger = model.privacy
    assert ledger.private and ledger.composition == "zcdp", str(ledger)
    assert ledger.epsilon <= 1.0 and ledger.delta == 1e-6, str(ledger)
    # The Gaussian's grid step m·2**e (16 <= m <= 32) is at most 17/16 of the smallest
    # admissible one, so a round spends at least (16/17)² of its ρ_0 (gaussian_cost): the
    # ledger spends at least the zCDP ε of ρ_size + (16/17)²·(ρ − ρ_size), here ≈ 0.945.
    size_rho = sum(0.5 * e.epsilon**2 * e.count for e in ledger.entries if e.rho is None)
    log_term = 2.0 * math.sqrt(math.log(1e6))
    total_rho = ((math.sqrt(log_term**2 + 4.0) - log_term) / 2) ** 2    # zcdp_to_dp⁻¹(1, δ)
    floor = zcdp_to_dp(size_rho + (16 / 17) ** 2 * (1 - 1e-5) * (total_rho - size_rho), 1e-6)
    assert 0.94 <= floor <= ledger.epsilon, (floor, str(ledger))
    entries = [e for e in ledger.entries if e.what == "halfspaces (Gaussian)"]
    assert entries and all(e.rho is not None and e.rho > 0 for e in entries), str(ledger)
    weight = np.asarray(model.params.weight)
    assert weight.shape[:2] == (5, 3)
    live = np.abs(weight).reshape(5, -1).sum(1) > 0
    assert live.sum() == sum(e.count for e in entries) >= 1
    assert np.all(live[: live.sum()]) and not np.any(weight[~live])
    assert "average of" in model.summary()
    proba = model.predict_proba(X.iloc[:200])
    assert proba.shape == (200, 2)
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)

    from dpjax.sklearn import DPSmoothBoostClassifier

    clf = DPSmoothBoostClassifier(weak_learner="halfspace", delta=1e-6, bounds=bounds,
                                  n_rounds=5, random_state=0).fit(X, y)
    decision = clf.decision_function(X.iloc[:300])
    assert decision.shape == (300,) and np.all(np.abs(decision) <= 1.0)
    assert clf.privacy_.private and clf.privacy_.epsilon <= 1.0
