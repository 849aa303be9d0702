"""LazyBregBoost (``dpjax.ensembles.smooth_boost``; BCS20, spec ``private-smooth-boosting.md``
§2–§3 and ``private-boosted-stumps-smooth-reweighting.md`` §2): the exact projection onto the
κ-dense measures against an independent float64 bisection and a generic convex solver, the
slickness of the normalised measure under replace-one neighbours (Lemma 25), and the boosting
loop (κ-smooth measures every round, training error, jit/vmap, determinism, the vote)."""

from __future__ import annotations

import collections
import functools
import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize

from dpjax.ensembles.smooth_boost import (
    WeakLearner,
    log_unprojected,
    majority_vote,
    next_measure,
    normalise,
    project_dense,
    sample_to_size,
    smooth_boost,
    smooth_boost_decision,
    smooth_boost_predict,
)

EPS32 = float(np.finfo(np.float32).eps)
KAPPAS = np.array([0.02, 0.1, 0.25, 0.5, 0.9], np.float32)
BATCH = 40
project_one = jax.jit(project_dense)
project_batch = jax.jit(jax.vmap(project_dense))      # [BATCH, n] log weights, [BATCH] κ
next_measure_one = jax.jit(next_measure, static_argnames="update")


# --------------------------------------------------------------------------------------------
# Independent references (float64 numpy)
# --------------------------------------------------------------------------------------------

def reference_projection(log_w: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """``argmin_{μ ∈ Γ_κ} KL(μ ‖ e^{log_w})`` row by row, by Lemma 9's characterisation with
    no sorting: ``min(1, μ̃)`` if that is already dense, else bisection (300 halvings, float64)
    on ``log c`` of the increasing ``Σ_i min(1, c·μ̃_i) = κn``, starting from ``[0, −min log_w]``
    (all entries capped at the right end, mass ``n > κn``)."""
    log_w = np.asarray(log_w, np.float64)
    target = np.asarray(kappa, np.float64) * log_w.shape[-1]

    def mass(log_c):
        return np.exp(np.minimum(0.0, log_w + log_c[:, None])).sum(-1)

    lo = np.zeros(len(log_w))
    hi = np.maximum(-log_w.min(-1), 0.0)
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        low = mass(mid) < target
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    log_c = np.where(mass(np.zeros(len(log_w))) >= target, 0.0, hi)
    return np.exp(np.minimum(0.0, log_w + log_c[:, None]))


def generalised_kl(mu: np.ndarray, mu_tilde: np.ndarray) -> float:
    """``KL(μ ‖ μ̃) = Σ μ log(μ/μ̃) − μ + μ̃`` (BCS20 §1), with ``0 log 0 = 0``."""
    mu = np.asarray(mu, np.float64)
    ratio = np.where(mu > 0, mu / mu_tilde, 1.0)
    return float(np.sum(mu * np.log(ratio) - mu + mu_tilde))


def sum_tolerance(n: int, target: float) -> float:
    """Float32 bound on ``|Σμ − κn|``: each entry has a relative error of a few ulps and the
    sum of ``n`` nonnegative terms at most ``(n − 1)·eps`` relative, so ``(n + 16)·eps·κn``."""
    return (n + 16) * EPS32 * max(target, 1.0)


def value_tolerance(n: int) -> float:
    """Float32 bound on ``|μ_i − μ_i^ref|``: the normaliser is a sum of ``n`` terms (relative
    error at most ``(n − 1)·eps``), and the log/exp steps act on arguments below about
    ``2 log n + 2`` in magnitude for every entry that is not negligible (a few dozen ulps)."""
    return (n + 64) * EPS32


def random_log_weights(rng: np.random.Generator, family: str, batch: int,
                       n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(log_w [batch, n] float32, kappa [batch] float32)`` of one family of inputs."""
    kappa = rng.choice(KAPPAS, batch)
    t = rng.integers(1, 40, (batch, 1))
    lam = rng.uniform(0.05, 1.5, (batch, 1))
    log_kappa = np.log(kappa)[:, None]
    if family == "gain":            # BCS20: scores in [0, t], μ̃ <= κ (projection active)
        log_w = log_kappa - lam * rng.uniform(0, 1, (batch, n)) * t
    elif family == "margin":        # Asadi et al.: margins in [−t, t], both branches
        log_w = log_kappa - lam * rng.integers(-1, 2, (batch, 1)) * t / 3 \
            - lam * rng.uniform(-1, 1, (batch, n)) * t
    elif family == "wide":          # log weights spread over about ±50
        log_w = rng.normal(0.0, 20.0, (batch, n))
    elif family == "extreme":       # ±50 only, plus a few ordinary values
        log_w = np.where(rng.uniform(size=(batch, n)) < 0.5, 50.0, -50.0)
        log_w[:, ::3] = rng.normal(0.0, 2.0, log_w[:, ::3].shape)
    elif family == "equal":         # every weight equal, at levels below, at and above κ
        log_w = np.repeat(rng.uniform(-60, 10, (batch, 1)), n, axis=1)
    elif family == "dense":         # already in Γ_κ: entries in (0, 1], mean >= κ
        log_w = np.log(rng.uniform(kappa[:, None], 1.0, (batch, n)))
    else:
        raise ValueError(family)
    return log_w.astype(np.float32), kappa


# --------------------------------------------------------------------------------------------
# The projection (spec §2.3, Lemma 9)
# --------------------------------------------------------------------------------------------

FAMILIES = ("gain", "margin", "wide", "extreme", "equal", "dense")


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1000])
@pytest.mark.parametrize("family", FAMILIES)
def test_projection_is_dense_sums_to_kappa_n_and_matches_the_bisection_reference(n, family):
    rng = np.random.default_rng([n, FAMILIES.index(family)])
    log_w, kappa = random_log_weights(rng, family, BATCH, n)
    mu = np.asarray(project_batch(jnp.asarray(log_w), jnp.asarray(kappa)))
    chex.assert_shape(mu, (BATCH, n))
    assert mu.dtype == np.float32
    assert np.all(np.isfinite(mu)) and np.all(mu >= 0.0) and np.all(mu <= 1.0)

    target = kappa.astype(np.float64) * n
    total = mu.astype(np.float64).sum(-1)
    tolerance = np.array([sum_tolerance(n, k) for k in target])
    clipped_mass = np.exp(np.minimum(0.0, log_w.astype(np.float64))).sum(-1)
    active = clipped_mass < target                    # below κn: the scaling branch
    assert np.all(np.abs(total - target)[active] <= tolerance[active])
    assert np.all(total[~active] >= target[~active] - tolerance[~active])
    if family in ("gain", "equal") and n > 1:
        assert active.any()
    if family == "dense":                             # already in Γ_κ: the identity
        assert not active.any()
        np.testing.assert_allclose(mu, np.exp(log_w), rtol=8 * EPS32)

    reference = reference_projection(log_w, kappa)
    np.testing.assert_allclose(mu, reference, rtol=0, atol=value_tolerance(n))
    # κ-smooth after normalising (spec §1)
    smooth = np.asarray(normalise(mu)).max(-1) * target
    assert np.all(smooth <= 1.0 + 64 * EPS32 * n)


def test_projection_reproduces_the_spec_worked_examples():
    """Stumps spec §2.3 (the three worked examples, to 1e−6)."""
    mu = project_one(jnp.log(jnp.array([0.5, 0.02, 0.02, 0.01])), 0.5)
    np.testing.assert_allclose(mu, [1.0, 0.4, 0.4, 0.2], atol=1e-6)

    sigma = jnp.array([3.0, 1, 1, -1, 3, 3, 1, 1])
    mu = project_one(jnp.log(0.25) - 0.5 * sigma, 0.25)
    np.testing.assert_allclose(mu, [0.094064, 0.255692, 0.255692, 0.695042, 0.094064,
                                    0.094064, 0.255692, 0.255692], atol=1e-6)
    np.testing.assert_allclose(normalise(mu), [0.047032, 0.127846, 0.127846, 0.347521,
                                               0.047032, 0.047032, 0.127846, 0.127846],
                               atol=1e-6)

    mu = project_one(jnp.log(0.3) - 0.5 * jnp.array([-5.0, 0, 0, 2]), 0.3)   # clip only
    np.testing.assert_allclose(mu, [1.0, 0.3, 0.3, 0.110364], atol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_projection_minimises_the_kl_divergence_against_a_generic_solver(seed):
    """KL-optimality on small n, checked with SLSQP on ``min KL(μ ‖ μ̃)`` over
    ``{0 <= μ <= 1, Σμ >= κn}`` (no use of Lemma 9): the projection's KL is no larger, and the
    two minimisers agree (strict convexity)."""
    rng = np.random.default_rng(100 + seed)
    n = 7
    kappa = float(np.float32(rng.choice([0.25, 0.5, 0.7])))
    log_w = (np.log(kappa) + rng.normal(0.0, 1.5, n)).astype(np.float32)
    mu_tilde = np.exp(log_w.astype(np.float64))
    ours = np.asarray(project_one(jnp.asarray(log_w), kappa), np.float64)

    def objective(mu):
        mu = np.maximum(mu, 1e-300)
        return np.sum(mu * np.log(mu / mu_tilde) - mu + mu_tilde), np.log(mu / mu_tilde)

    solved = minimize(objective, np.full(n, max(kappa, 0.5)), jac=True, method="SLSQP",
                      bounds=[(1e-12, 1.0)] * n,
                      constraints=[{"type": "ineq", "fun": lambda mu: mu.sum() - kappa * n,
                                    "jac": lambda mu: np.ones(n)}],
                      options={"ftol": 1e-14, "maxiter": 500})
    assert solved.success
    assert ours.sum() >= kappa * n - 1e-5
    assert generalised_kl(ours, mu_tilde) <= generalised_kl(solved.x, mu_tilde) + 1e-6
    np.testing.assert_allclose(ours, solved.x, atol=2e-4)


def test_projection_structure_order_shift_invariance_and_idempotence():
    """Order of the ``μ_i`` follows the weights; exactly the entries with ``c·μ̃_i >= 1`` are
    capped; the scaling branch ignores a shift of the log weights (spec §2.3 invariants); a
    second projection changes nothing."""
    rng = np.random.default_rng(7)
    log_w, kappa = random_log_weights(rng, "gain", BATCH, 64)
    mu = np.asarray(project_batch(jnp.asarray(log_w), jnp.asarray(kappa)))
    order = np.argsort(log_w, axis=-1)
    assert np.all(np.diff(np.take_along_axis(mu, order, -1), axis=-1) >= 0.0)
    shifted = np.asarray(project_batch(jnp.asarray(log_w - 7.5), jnp.asarray(kappa)))
    np.testing.assert_allclose(shifted, mu, atol=64 * EPS32)
    again = np.asarray(project_batch(jnp.log(jnp.asarray(mu)), jnp.asarray(kappa)))
    np.testing.assert_allclose(again, mu, atol=64 * EPS32)
    # capped iff c·μ̃ >= 1, with c read off an uncapped entry
    for row, weights in zip(mu, np.exp(log_w.astype(np.float64)), strict=True):
        uncapped = row < 1.0
        c = np.median(row[uncapped] / weights[uncapped])
        np.testing.assert_array_equal(row == 1.0, c * weights >= 1.0 - 1e-5)


def test_projection_jits_vmaps_and_takes_a_traced_kappa():
    rng = np.random.default_rng(3)
    log_w = rng.normal(-2.0, 3.0, (BATCH, 7)).astype(np.float32)
    kappas = rng.choice(KAPPAS, BATCH)
    batched = np.asarray(project_batch(jnp.asarray(log_w), jnp.asarray(kappas)))
    for b in range(3):
        np.testing.assert_allclose(batched[b], project_one(log_w[b], kappas[b]), atol=8 * EPS32)
    with pytest.raises(ValueError, match="shape"):
        project_dense(log_w, 0.5)


def test_projection_in_float64_is_exact_to_float64_precision():
    """The same code in float64 (``jax.enable_x64``) meets the reference to float64 precision,
    on the margin family (both branches) and on log weights of ±500 (no overflow)."""
    rng = np.random.default_rng(11)
    log_w, kappa = random_log_weights(rng, "margin", BATCH, 64)
    log_w = log_w.astype(np.float64) + rng.normal(0, 1e-3, log_w.shape)
    log_w[:4] = np.where(rng.uniform(size=(4, 64)) < 0.3, 500.0, -500.0)
    log_w[:4, ::5] = rng.normal(0, 1.0, (4, 13))
    with jax.enable_x64(True):
        mu = np.asarray(jax.jit(jax.vmap(project_dense))(jnp.asarray(log_w),
                                                         jnp.asarray(kappa, jnp.float64)))
    assert mu.dtype == np.float64
    np.testing.assert_allclose(mu, reference_projection(log_w, kappa), atol=1e-11)


# --------------------------------------------------------------------------------------------
# Slickness (BCS20 Lemma 25, spec §3.2, A5; stumps spec §2.5): replace-one neighbours, n fixed
# and public, same hypothesis history. Only the replaced example's score L_i differs (its
# weight can go anywhere in the range the history allows); Δ(μ̂, μ̂') <= 1/(κn).
# --------------------------------------------------------------------------------------------

def neighbour_pairs(rng: np.random.Generator, batch: int, n: int,
                    integer: bool) -> tuple[np.ndarray, ...]:
    """``(margins, margins', n_done, kappa, learning_rate)`` of replace-one pairs: margins
    ``σ = y Σ_j h_j(x)`` of ``t`` hypotheses (``±1`` votes: integers of t's parity; real votes:
    any value in ``[−t, t]``); the pair differs at one random index."""
    t = rng.integers(1, 60, batch).astype(np.float32)
    if integer:
        margins = 2.0 * rng.binomial(t[:, None].astype(int), rng.uniform(0, 1, (batch, 1)),
                                     (batch, n)) - t[:, None]
        replaced = 2.0 * rng.binomial(t.astype(int), rng.uniform(0, 1, batch)) - t
    else:
        margins = rng.uniform(-1, 1, (batch, n)) * t[:, None] * rng.uniform(0, 1, (batch, 1))
        replaced = rng.uniform(-1, 1, batch) * t
    other = margins.copy()
    other[np.arange(batch), rng.integers(0, n, batch)] = replaced
    kappa = rng.choice(KAPPAS, batch)
    rate = rng.uniform(0.05, 2.0, batch).astype(np.float32)
    return (margins.astype(np.float32), other.astype(np.float32), t, kappa, rate)


@functools.cache
def measure_batch(update: str):
    """Normalised measures of a batch of histories, jitted per update rule."""
    def one(margins, t, kappa, rate):
        return normalise(next_measure(margins, t, kappa, rate, update))
    return jax.jit(jax.vmap(one))


@pytest.mark.parametrize("n", [1, 5, 200])
@pytest.mark.parametrize("update", ["gain", "margin"])
def test_replacing_one_example_moves_the_normalised_measure_by_at_most_one_over_kappa_n(
        n, update):
    """``gain`` is Lemma 25's (proven) setting; ``margin`` is the stumps spec §2.5 statement
    (proven in the clip-only branch, numerical in the mixed case)."""
    rng = np.random.default_rng([n, len(update)])
    worst = 0.0
    for integer in (True, False):
        margins, other, t, kappa, rate = neighbour_pairs(rng, 400, n, integer)
        measures = measure_batch(update)
        a = np.asarray(measures(margins, t, kappa, rate), np.float64)
        b = np.asarray(measures(other, t, kappa, rate), np.float64)
        scaled_tv = 0.5 * np.abs(a - b).sum(-1) * kappa * n            # κn·Δ(μ̂, μ̂')
        # each of the 2n float32 entries is off by a few ulps of itself: κn·(64 eps) in all
        assert np.all(scaled_tv <= 1.0 + 64 * EPS32 * kappa * n), scaled_tv.max()
        smooth = np.maximum(a.max(-1), b.max(-1)) * kappa * n
        assert np.all(smooth <= 1.0 + 64 * EPS32 * n)
        worst = max(worst, float(scaled_tv.max()))
    if n > 1:
        assert worst > 0.5       # the random pairs reach the bound's scale


@pytest.mark.parametrize("update", ["gain", "margin"])
def test_slickness_bound_is_tight(update):
    """Pinned from both sides: a replaced example whose weight goes from capped at 1 to about
    0 moves the normalised measure by ``1/(κn)`` (up to ``e^{−20}``)."""
    n, kappa, t, rate = 10, 0.25, 40.0, 1.0
    margins = np.full(n, 0.0 if update == "gain" else 20.0, np.float32)
    margins[0], other = (-t if update == "gain" else 0.0), margins.copy()
    other[0] = t
    a = np.asarray(normalise(next_measure_one(margins, t, kappa, rate, update)), np.float64)
    b = np.asarray(normalise(next_measure_one(other, t, kappa, rate, update)), np.float64)
    assert a[0] * kappa * n == pytest.approx(1.0, rel=1e-6)   # capped at 1, mass κn
    scaled_tv = 0.5 * np.abs(a - b).sum() * kappa * n
    assert 1.0 - 1e-6 <= scaled_tv <= 1.0 + 64 * EPS32 * kappa * n


def test_lazy_update_starts_uniform_and_gain_equals_margin_at_twice_the_rate():
    """Round 1 (no hypotheses) is ``μ_1 ≡ κ``, uniform ``1/n`` after normalising (spec §2.2);
    with the projection active (all margins >= 0) the margin form at ``λ`` is the gain form at
    ``2λ`` (stumps spec §2.8); the gain form never exceeds ``κ`` before projecting."""
    n, t = 10, 9.0
    for update in ("gain", "margin"):
        mu = next_measure_one(jnp.zeros(n), 0.0, 0.3, 0.7, update)
        np.testing.assert_allclose(mu, np.full(n, 0.3), rtol=4 * EPS32)
    margins = jnp.asarray(np.random.default_rng(5).integers(0, 10, n), jnp.float32)
    np.testing.assert_allclose(next_measure_one(margins, t, 0.3, 0.4, "margin"),
                               next_measure_one(margins, t, 0.3, 0.8, "gain"), atol=64 * EPS32)
    assert np.all(np.asarray(log_unprojected(jnp.linspace(-t, t, n), t, 0.3, 0.8, "gain"))
                  <= np.log(np.float32(0.3)) + 1e-6)
    with pytest.raises(ValueError, match="update"):
        log_unprojected(margins, t, 0.3, 0.4, "count")


# --------------------------------------------------------------------------------------------
# The boosting loop (BCS20 Alg. 1/2/4, spec §2.5)
# --------------------------------------------------------------------------------------------

THRESHOLDS = jnp.linspace(0.1, 0.9, 9)


def stump_votes(feature, threshold, sign, x):
    return sign * jnp.where(x[:, feature] > threshold, 1.0, -1.0)


def fit_stump(key, distribution, x, y, sharpness=400.0):
    """A non-private test learner: the stump (feature, public threshold, sign) of largest
    weighted correlation ``Σ μ̂ y h`` (weighted accuracy ``½ + ½·corr``), chosen by a
    Gumbel-max with a large inverse temperature (so the key matters, slightly). It records
    the distribution's total and maximum, and a uniform draw from its key, to check what the
    booster hands over."""
    votes = jnp.where(x[:, :, None] > THRESHOLDS, 1.0, -1.0)          # [n, d, thresholds]
    corr = jnp.einsum("i,i,idb->db", distribution, y, votes)
    scores = jnp.stack([corr, -corr], -1).ravel()                      # [d*b*2]
    best = jnp.argmax(sharpness * scores + jax.random.gumbel(key, scores.shape))
    feature, rest = jnp.divmod(best, THRESHOLDS.size * 2)
    threshold, sign = jnp.divmod(rest, 2)
    return {"feature": feature, "threshold": THRESHOLDS[threshold],
            "sign": 1.0 - 2.0 * sign, "total": distribution.sum(), "max": distribution.max(),
            "draw": jax.random.uniform(key)}


def predict_stump(h, x):
    return stump_votes(h["feature"], h["threshold"], h["sign"], x)


STUMPS = WeakLearner(fit=fit_stump, predict=predict_stump)


def linear_problem(n: int, seed: int, flip: float = 0.03) -> tuple[jax.Array, jax.Array]:
    """``y = sgn(x_0 + x_1 + x_2 − 1.5)`` on ``[0,1]^3`` with a few flipped labels: no single
    stump fits it, a vote of stumps nearly does."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, 3)).astype(np.float32)
    y = np.where(x.sum(1) > 1.5, 1.0, -1.0)
    y = np.where(rng.uniform(size=n) < flip, -y, y)
    return jnp.asarray(x), jnp.asarray(y, jnp.float32)


X_TRAIN, Y_TRAIN = linear_problem(400, 0)
N_ROUNDS = 41


@functools.cache
def boost_fn(update: str, sharpness: float = 400.0):
    learner = WeakLearner(functools.partial(fit_stump, sharpness=sharpness), predict_stump)
    return jax.jit(functools.partial(smooth_boost, weak_learner=learner, n_rounds=N_ROUNDS,
                                     update=update))


@pytest.mark.slow
@pytest.mark.parametrize("update", ["gain", "margin"])
def test_smooth_boost_hands_the_learner_kappa_smooth_distributions_and_drives_error_down(
        update):
    kappa, rate = 0.25, 0.5 if update == "gain" else 0.25
    hypotheses = boost_fn(update)(jax.random.key(0), X_TRAIN, Y_TRAIN, kappa=kappa,
                                  learning_rate=rate)
    chex.assert_shape(hypotheses["feature"], (N_ROUNDS,))
    n = X_TRAIN.shape[0]
    np.testing.assert_allclose(hypotheses["total"], 1.0, atol=1e-5)
    assert np.all(np.asarray(hypotheses["max"]) * kappa * n <= 1.0 + 1e-5)
    np.testing.assert_allclose(hypotheses["max"][0], 1.0 / n, rtol=1e-5)   # round 1: uniform
    assert np.asarray(hypotheses["max"]).max() > 1.5 / n                    # then it reweights

    predicted = smooth_boost_predict(hypotheses, STUMPS.predict, X_TRAIN)
    error = np.mean(np.asarray(predicted) != Y_TRAIN)
    first = np.mean(np.asarray(predict_stump(jax.tree.map(lambda a: a[0], hypotheses),
                                             X_TRAIN)) != Y_TRAIN)
    assert first > 0.2                  # the best single stump is weak here
    assert error < 0.1 and error < first / 2
    margin = np.asarray(smooth_boost_decision(hypotheses, STUMPS.predict, X_TRAIN)) * Y_TRAIN
    assert np.mean(margin <= 0) <= kappa    # at most a κ fraction without a positive margin


@pytest.mark.slow
def test_smooth_boost_jits_vmaps_over_the_key_and_is_deterministic():
    keys = jax.random.split(jax.random.key(1), 3)
    fit = boost_fn("gain")

    def run(key):
        return fit(key, X_TRAIN, Y_TRAIN, kappa=0.25, learning_rate=0.5)

    batched = jax.jit(jax.vmap(run))(keys)
    chex.assert_shape(batched["feature"], (3, N_ROUNDS))
    for b in (0, 2):
        chex.assert_trees_all_close(jax.tree.map(lambda a, b=b: a[b], batched), run(keys[b]),
                                    atol=1e-6)
    chex.assert_trees_all_equal(run(keys[0]), run(keys[0]))
    # round t's key is fold_in(key, t), so no two rounds share a draw
    draws = jax.vmap(lambda t: jax.random.uniform(jax.random.fold_in(keys[0], t)))(
        jnp.arange(N_ROUNDS))
    np.testing.assert_array_equal(batched["draw"][0], draws)
    assert len(set(np.asarray(draws).tolist())) == N_ROUNDS
    # a noisy learner's choices vary over rounds and keys
    noisy = np.asarray(jax.vmap(lambda k: boost_fn("gain", 1.0)(
        k, X_TRAIN, Y_TRAIN, kappa=0.25, learning_rate=0.5))(keys)["feature"])
    assert len({tuple(row) for row in noisy}) == 3
    assert len(set(noisy[0].tolist())) > 1


def test_smooth_boost_rejects_bad_settings():
    for kappa in (1.0, 0.0, np.float32(1.5)):
        with pytest.raises(ValueError, match="kappa"):
            smooth_boost(jax.random.key(0), X_TRAIN, Y_TRAIN, STUMPS, 3, kappa, 0.5)
    with pytest.raises(ValueError, match="n_rounds"):
        smooth_boost(jax.random.key(0), X_TRAIN, Y_TRAIN, STUMPS, 0, 0.25, 0.5)
    with pytest.raises(ValueError, match="update"):
        smooth_boost(jax.random.key(0), X_TRAIN, Y_TRAIN, STUMPS, 3, 0.25, 0.5, update="x")


def test_majority_vote_breaks_ties_by_the_earliest_voting_round_not_a_fixed_class():
    vote = jax.jit(majority_vote)
    votes = jnp.array([[1.0, -1.0, 1.0, 0.0, 0.0, 0.5],
                       [-1.0, 1.0, 1.0, -1.0, 0.0, -0.5],
                       [1.0, -1.0, -1.0, 1.0, 0.0, 0.0],
                       [-1.0, 1.0, 1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(vote(votes), [1, -1, 1, -1, 1, 1])
    np.testing.assert_array_equal(vote(-votes), [-1, 1, -1, 1, 1, -1])   # labels swap
    assert vote(votes).dtype == jnp.int32
    # every round abstains: a fair coin when a key is given
    coins = np.asarray(vote(jnp.zeros((4, 2000)), jax.random.key(3)))
    assert set(np.unique(coins)) == {-1, 1}
    assert abs(float(np.mean(coins))) < 5 * np.sqrt(1 / 2000)


def test_sample_to_size_draws_a_uniform_subset_of_the_records():
    """Every 3-subset of 6 records equally often (each count within ``Z`` binomial standard
    errors of ``K/20``), padding rows (``records`` false) never, and the same records whatever
    rows are padded after them (row ``i``'s words depend on the key and ``i`` alone)."""
    from tests.conftest import Z
    records = jnp.array([True] * 6 + [False] * 2)
    draws = 20_000
    keys = jax.random.split(jax.random.key(11), draws)
    kept = np.asarray(jax.jit(jax.vmap(sample_to_size, in_axes=(0, None, None)))(
        keys, records, 3))
    assert kept.shape == (draws, 10)
    assert (kept[:, 6:] == 0).all()                     # padding rows, then ñ − n <= 0 extra
    assert (kept[:, :6].sum(1) == 3).all()
    subsets = collections.Counter(map(tuple, kept[:, :6].tolist()))
    assert set(subsets) == {tuple(int(i in c) for i in range(6))
                            for c in itertools.combinations(range(6), 3)}
    p = 1 / 20
    assert all(abs(n - draws * p) <= Z * np.sqrt(draws * p * (1 - p))
               for n in subsets.values())
    unpadded = np.asarray(jax.vmap(sample_to_size, in_axes=(0, None, None))(
        keys[:50], records[:6], 3))
    np.testing.assert_array_equal(unpadded[:, :6], kept[:50, :6])
    # more examples than records: all of them, and the extra split over the two public rows
    np.testing.assert_array_equal(sample_to_size(keys[0], records, 9),
                                  [1, 1, 1, 1, 1, 1, 0, 0, 2, 1])
