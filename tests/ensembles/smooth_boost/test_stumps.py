"""DP-1R decision stumps for LazyBregBoost (``dpjax.ensembles.smooth_boost.stumps``, spec
``private-boosted-stumps-smooth-reweighting.md`` §3) and the level form of the measure they read
(``dpjax.ensembles.smooth_boost.level_weights``): the spec's worked example, the level weights
against the dense projection, the replace-one sensitivity of the computed errors, learning at a
large ε, the costs, and an audit of the whole booster."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.auditing import audit_release
from dpjax.ensembles.smooth_boost import (
    LevelMeasure,
    level_weights,
    normalise,
    project_dense,
    smooth_boost,
    smooth_boost_predict,
)
from dpjax.ensembles.smooth_boost.stumps import (
    Stump,
    dp_stump_learner,
    stump_errors,
    stump_predict,
    stump_sensitivity,
)
from dpjax.privacy import Cost
from tests.helpers.data import one_bin_rule
from tests.helpers.smooth_boost import correct_votes, random_vote_problem, replace_one_row


def test_stump_errors_reproduce_the_spec_worked_example():
    """§3.3: rows (1,0), (1,1), (0,1), (0,0), y = (+,+,−,−), μ̂ = (0.4, 0.3, 0.2, 0.1); errors
    of [+x₁, +x₂, −x₁, −x₂, +1, −1] are [0, 0.6, 1, 0.4, 0.3, 0.7] (x_j = 1[code_j = 1])."""
    codes = jnp.array([[1, 0], [1, 1], [0, 1], [0, 0]], jnp.uint8)
    measure = LevelMeasure(jnp.arange(4), jnp.array([0.4, 0.3, 0.2, 0.1]),
                           jnp.ones(4, jnp.int32))
    errors = np.asarray(stump_errors(codes, jnp.array([1, 1, -1, -1]), measure, 2))
    # layout: +x_{f,b} for (f, b) row-major, then −x_{f,b}, then +1, −1
    plus, minus, const = errors[:4].reshape(2, 2), errors[4:8].reshape(2, 2), errors[8:]
    np.testing.assert_allclose([plus[0, 1], plus[1, 1], minus[0, 1], minus[1, 1], *const],
                               [0.0, 0.6, 1.0, 0.4, 0.3, 0.7], atol=1e-6)
    np.testing.assert_allclose(plus + minus, 1.0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_level_weights_are_the_normalised_dense_projection(seed):
    """``level_weights`` on the level counts is :func:`project_dense` of
    ``κ·e^{−λ·level}`` normalised, example by example (empty levels and underflowing factors
    included); the mass is 1 and the measure κ-smooth."""
    rng = np.random.default_rng(seed)
    levels, n = int(rng.integers(2, 40)), int(rng.integers(1, 3000))
    level = rng.integers(0, levels, n) if seed % 2 else rng.integers(0, levels // 2 + 1, n)
    kappa, rate = float(rng.uniform(0.02, 0.95)), float(rng.choice([0.05, 0.5, 3.0, 20.0]))
    counts = np.bincount(level, minlength=levels)
    weight = np.asarray(level_weights(counts, kappa, rate), np.float64)
    dense = np.asarray(normalise(project_dense(np.log(kappa) - rate * level, kappa)))
    np.testing.assert_allclose(weight[level], dense, rtol=(levels + 8) * 2**-22,
                               atol=2**-24 / n)
    assert abs((weight * counts).sum() - 1.0) < (levels + 8) * 2**-22
    assert weight.max() * kappa * n <= 1.0 + (levels + 8) * 2**-22


def exact_level_weights(counts: np.ndarray, kappa: float, rate: float) -> np.ndarray:
    """float64 reference: the sorted rule of spec §2.3 on the levels, factors relative to the
    first non-empty level (no under- or overflow at these sizes)."""
    counts = np.asarray(counts, np.float64)
    levels, target = len(counts), kappa * counts.sum()
    for k in range(levels):
        room, present = target - counts[:k].sum(), np.nonzero(counts[k:])[0]
        if room <= 0 or not len(present):
            break
        first = k + present[0]
        factor = np.exp(-rate * (np.arange(levels) - first))
        scale = room / (counts[first:] * factor[first:]).sum()
        if scale <= 1.0:
            mu = np.where(np.arange(levels) < k, 1.0, np.minimum(scale * factor, 1.0))
            return np.where(np.arange(levels) >= first, mu, np.where(np.arange(levels) < k,
                                                                     1.0, 0.0)) / target
    raise AssertionError("no valid number of capped levels")


@pytest.mark.parametrize(("kappa", "rate", "levels", "low", "high"), [
    (0.5, 5.0, 26, 20, 21),     # factors e^{−λ·17} and beyond flush to zero in float32
    (0.35, 0.5, 201, 177, 178),  # the default κ and λ after 200 rounds
])
def test_far_apart_levels_neither_underflow_nor_move_the_errors(kappa, rate, levels, low, high):
    """A review's counterexample to the first version (factors relative to the first level
    ``k`` flushed to zero when ``λ·(gap)`` passed ~87, and the neighbours' ``k`` differed): one
    example at level 3 and 5,000 each at two far levels; its neighbour moves that example up.
    The weights match the float64 reference and the 1-rule errors move by at most the
    sensitivity."""
    counts = np.zeros(levels, np.int32)
    counts[3], counts[low], counts[high] = 1, 5000, 5000
    neighbour = counts.copy()
    neighbour[3], neighbour[low] = 0, 5001
    wrong = np.zeros(levels, np.float32)
    wrong[high] = 5000
    errors = []
    for c in (counts, neighbour):
        weight = np.asarray(jax.jit(level_weights)(jnp.asarray(c), kappa, rate), np.float64)
        np.testing.assert_allclose(weight, exact_level_weights(c, kappa, rate),
                                   rtol=(levels + 8) * 2**-22, atol=2**-100)
        errors.append(float(weight @ wrong))
    assert abs(errors[0] - errors[1]) <= float(stump_sensitivity(10001, kappa, levels))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_replacing_one_row_moves_every_error_by_at_most_the_sensitivity(seed):
    """§3.5: the same history of 1-rules on neighbouring samples (one row replaced) gives levels
    that differ at that row only; every computed error moves by at most
    ``stump_sensitivity = 2/(κn) + rounding``. Replaced rows are drawn at random and
    adversarially (the heaviest row, label and codes flipped)."""
    rng = np.random.default_rng(100 + seed)
    problem = random_vote_problem(rng, max_rows=400, n_codes=4, max_rounds=12)
    n, n_codes, rounds, kappa, rate = (problem.n, problem.n_codes, problem.rounds,
                                       problem.kappa, problem.rate)

    def errors(codes, y):
        level = correct_votes(codes, y, problem.history)
        counts = np.bincount(level, minlength=rounds + 1)
        measure = LevelMeasure(jnp.asarray(level), level_weights(counts, kappa, rate),
                               jnp.ones(n, jnp.int32))
        return np.asarray(stump_errors(jnp.asarray(codes), jnp.asarray(y), measure, n_codes))

    bound = float(stump_sensitivity(n, kappa, rounds + 1))
    base = errors(problem.codes, problem.y)
    worst = 0.0
    for trial in range(40):
        codes2, y2 = replace_one_row(rng, problem, trial)
        worst = max(worst, float(np.abs(errors(codes2, y2) - base).max()))
    assert worst <= bound
    assert bound <= 2.0 / (kappa * n) * 1.01


@pytest.mark.slow
def test_boosted_stumps_learn_a_planted_rule_at_large_epsilon():
    """At ε = 10 on 2,000 rows (T = 21, κ = 0.3) the boosted 1-rules recover the planted rule
    (feature 0's upper bins, 10% label noise: Bayes accuracy 0.9); every round spends its
    ``ε_b``; at a tiny ε the picks are near uniform (accuracy near chance)."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 10, (2000, 5)).astype(np.uint8)
    y = np.where((codes[:, 0] >= 5) ^ (rng.uniform(size=2000) < 0.1), 1, -1)
    accuracy = {}
    for epsilon in (1e-3, 10.0):
        learner = dp_stump_learner(np.full(5, 10), epsilon / 21, 0.3, 2000)
        stumps = jax.jit(lambda key, learner=learner: smooth_boost(
            key, jnp.asarray(codes), jnp.asarray(y), learner, 21, 0.3, 0.5))(jax.random.key(1))
        predicted = smooth_boost_predict(stumps, learner.predict, jnp.asarray(codes))
        accuracy[epsilon] = float((np.asarray(predicted) == y).mean())
        np.testing.assert_allclose(stumps.cost.epsilon, np.float32(epsilon / 21))
    assert accuracy[10.0] >= 0.85
    assert accuracy[1e-3] <= 0.6
    assert np.all(np.asarray(stumps.feature)[np.asarray(~stumps.constant)] >= 0)


def test_stump_predict_reads_its_literal_and_constants():
    codes = jnp.array([[0, 3], [2, 3], [2, 1]], jnp.uint8)
    cost = Cost(jnp.float32(0.0), jnp.float32(0.0))
    literal = Stump(jnp.int32(1), jnp.int32(3), jnp.int32(-1), jnp.bool_(False), cost)
    constant = Stump(jnp.int32(0), jnp.int32(0), jnp.int32(-1), jnp.bool_(True), cost)
    np.testing.assert_array_equal(stump_predict(literal, codes), [-1, -1, 1])
    np.testing.assert_array_equal(stump_predict(constant, codes), [-1, -1, -1])


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_boosted_stumps_audit_within_their_claim(epsilon):
    """Two rounds on a 6-row sample and its replace-one neighbour (an outlier row with the
    other label in place of the last): the empirical ε lower bound of the released 1-rules
    stays at or below ``ε = 2·ε_b``."""
    codes = jnp.array([[0, 1], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]], jnp.uint8)
    y = jnp.array([1, -1, -1, 1, -1, 1])
    neighbour = (codes.at[-1].set(jnp.array([1, 0], jnp.uint8)), y.at[-1].set(-1))
    learner = dp_stump_learner(np.array([2, 2]), epsilon / 2, 0.5, 6)

    def release(key, data):
        stumps = smooth_boost(key, data[0], data[1], learner, 2, 0.5, 1.0)
        return (stumps.feature * 2 + stumps.code) * 4 + (stumps.polarity + 1) + stumps.constant

    report = audit_release(release, (codes, y), neighbour, epsilon=epsilon, n=20_000, key=3,
                           name="smooth-boosted stumps")
    assert report.passed, report.summary()


# --------------------------------------------------------------------------------------------
# method="smooth_boost" and its scikit-learn estimator
# --------------------------------------------------------------------------------------------



@pytest.mark.slow
@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_smooth_boost_fit_ledger_and_accuracy(neighbouring):
    """``dpjax.fit(method="smooth_boost")``: the ledger spends within ``[ε(1 − 2e-3), ε]`` (the
    noisy row count only under add/remove), the rounds follow the public schedule (later
    rounds abstain and spend nothing), and the model finds the planted 1-rule."""
    X, y, bounds = one_bin_rule()
    model = dpjax.fit(X.iloc[:400], y[:400], method="smooth_boost", epsilon=2.0, bounds=bounds,
                      key=0, neighbouring=neighbouring)
    ledger = model.privacy
    assert ledger.private and 2.0 * (1 - 2e-3) <= ledger.epsilon <= 2.0
    whats = [entry.what for entry in ledger.entries]
    assert ("row count" in whats) == (neighbouring == "add_remove")
    size = 400 if neighbouring == "replace_one" else None
    live = np.asarray(model.params.polarity) != 0
    if size is not None:   # R = ⌊ε·κ·n/(4·50)⌋ = ⌊2·0.35·400/200⌋ = 1
        assert live.sum() == 1
    assert np.all(np.asarray(model.params.constant)[~live])
    accuracy = (np.asarray(model.predict(X.iloc[400:])) == y[400:]).mean()
    assert accuracy >= 0.85


@pytest.mark.slow
def test_smooth_boost_sweep_is_one_program_over_epsilon_and_kappa():
    X, y, bounds = one_bin_rule()
    sweep = dpjax.sweep(X, y, method="smooth_boost", epsilon=[0.5, 4.0], kappa=[0.2, 0.5],
                        seeds=2, bounds=bounds)
    assert len(sweep.configs) == 4 and sweep.params.polarity.shape == (4, 2, 15)
    for point, ledger in zip(sweep.grid, sweep.ledgers, strict=True):
        assert ledger.private
        assert point["epsilon"] * (1 - 2e-3) <= ledger.epsilon <= point["epsilon"]
    assert sweep.model(3, 1).predict(X).shape == (600,)


@pytest.mark.slow
def test_smooth_boost_estimator_params_clone_and_fit():
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    from dpjax.sklearn import DPSmoothBoostClassifier

    X, y, bounds = one_bin_rule()
    clf = DPSmoothBoostClassifier(epsilon=4.0, bounds=bounds, random_state=0)
    params = clf.get_params()
    assert params["kappa"] == 0.35 and params["n_rounds"] == 15
    assert clone(clf).get_params() == params
    clf.fit(X.iloc[:400], y[:400])
    proba = clf.predict_proba(X.iloc[400:])
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
    decision = clf.decision_function(X.iloc[400:])
    assert np.all(np.abs(decision) <= 1.0)
    assert 4.0 * (1 - 2e-3) <= clf.privacy_.epsilon <= 4.0
    assert np.all(cross_val_score(clf, X, y, cv=3) >= 0.85)


def test_smooth_boost_summary_prints_the_vote_and_the_features_used():
    """Asadi et al.'s interpretability output: one line per distinct 1-rule with its votes,
    read in the public binning, and the number of distinct features."""
    X, y, bounds = one_bin_rule()
    model = dpjax.fit(X, y, method="smooth_boost", epsilon=8.0, bounds=bounds, key=0,
                      neighbouring="replace_one")
    text = model.summary()
    live = int((np.asarray(model.params.polarity) != 0).sum())
    assert f"majority vote of {live} rules" in text
    counts = [int(line.rsplit("(x", 1)[1].rstrip(")")) for line in text.splitlines()
              if "(x" in line]
    assert sum(counts) == live
    assert "a in [0, 0.1) -> 1, else -> 0" in text
    features = {int(f) for f, c, p in zip(np.asarray(model.params.feature),
                                          np.asarray(model.params.constant),
                                          np.asarray(model.params.polarity), strict=True)
                if p != 0 and not c}
    assert f"{len(features)} distinct features" in text


@pytest.mark.slow
def test_sweep_ledger_is_the_largest_seed_ledger_when_schedules_differ():
    """The number of rounds is read off each seed's released size, so seeds of one grid point
    may release different numbers of 1-rules with different budgets (here R = 1 or 2 around
    ñ = 602): the grid point's ledger is its most-spending seed's, never a mix of seeds (the
    elementwise maximum over seeds once claimed more than ε)."""
    X, y, bounds = one_bin_rule()
    sweep = dpjax.sweep(X, y, method="smooth_boost", epsilon=[2.0], seeds=list(range(12)),
                        bounds=bounds)
    rounds = (np.asarray(sweep.params.polarity[0]) != 0).sum(-1)
    assert len(set(rounds.tolist())) > 1
    ledger = sweep.ledgers[0]
    assert ledger.private and 2.0 * (1 - 2e-3) <= ledger.epsilon <= 2.0
