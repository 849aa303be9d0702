"""LazyBregBoost: private smooth boosting with κ-dense measures — Bun, Carmosino & Sorrell,
"Efficient, Noise-Tolerant, and Private Learning via Boosting" (COLT 2020, BCS20), as used by
Asadi, Carmosino, Jahanara, Rafiey & Salamatian, "Private Boosted Decision Trees via Smooth
Re-Weighting" (JPC 2023; their "LazyBB"); specs ``docs/specs/private-smooth-boosting.md`` (§1–§3)
and ``docs/specs/private-boosted-stumps-smooth-reweighting.md`` (§2).

The booster's only state is the list of hypotheses ``H = (h_1, ..., h_t)`` (BCS20 Alg. 1–2).
Round ``t`` (BCS20 Alg. 4 "LB-NxM(κ, λ)", spec §2.2 and §2.5):

1. the unprojected measure ``μ̃_t(i) = κ·exp(−λ·L_i)`` from the *cumulative* score ``L_i`` of
   the past hypotheses on example ``i`` (the "lazy" update: one multiplicative step from the
   fixed start ``μ_1 ≡ κ``, never from the previous projected measure);
2. one Bregman (KL) projection onto the κ-dense measures
   ``Γ_κ = {μ ∈ [0,1]^n : Σ_i μ(i) >= κn}`` (:func:`project_dense`, Lemma 9);
3. the weak learner gets the normalised measure ``μ̂_t = μ_t/|μ_t|`` (:func:`normalise`),
   a κ-smooth distribution: ``μ̂_t(i) <= 1/(κn)``;
4. ``h_t`` is appended to ``H``; the final classifier is the unweighted majority vote
   ``sgn(Σ_t h_t(x))`` (:func:`majority_vote`).

Two scores ``L`` (static ``update``), both kept as the running margin ``σ_i = y_i Σ_j h_j(x_i)``:

* ``"gain"`` (default; BCS20 Alg. 4): ``L_i = Σ_j ℓ_j(x_i)`` with the *gain* (the paper calls it
  the "error", A21) ``ℓ_j(x_i) = 1 − ½|h_j(x_i) − y_i| = ½(1 + y_i h_j(x_i)) ∈ [0, 1]``, i.e.
  ``L = (t + σ)/2``. Every ``ℓ >= 0``, so ``μ̃ <= κ``, the projection is always the active
  (scaling) branch and ``|μ_t| = κn`` exactly: the setting of BCS20's Lemma 25 (proven).
* ``"margin"`` (Asadi et al. Alg. 1): ``L_i = σ_i``, the unnormalised margin. Negative margins
  give ``μ̃ > κ`` (even ``> 1``), so the clip-only branch of the projection occurs. Where the
  projection is active this equals ``"gain"`` at twice the learning rate (stumps spec §2.8).

**Sensitivity (what the privacy proof of the weak learner may use; no accounting here).**
Neighbours are *replace-one*, with ``n`` public (BCS20 §1 "differ in at most one element",
spec A12; stumps spec A7). For neighbouring samples ``S ~ S'`` and the same hypothesis history,
the normalised measures satisfy ``Δ(μ̂, μ̂') = ½‖μ̂ − μ̂'‖₁ <= ζ = 1/(κn)`` ("ζ-slick", BCS20
Lemma 25 / Def 21). Proof for ``"gain"`` (spec §3.2; BCS20's own proof only gives ``2/(κn)``,
A5): the differing coordinate moves one way and every other coordinate the other way, both
masses are ``κn``, so ``‖μ − μ'‖₁ = 2|μ(i) − μ'(i)| <= 2``. For ``"margin"`` it is proven when
both neighbours are in the clip-only branch and only checked numerically in the mixed case
(stumps spec §2.5). Every measure handed to the weak learner is κ-smooth, ``max μ̂ <= 1/(κn)``.
In float arithmetic both facts hold up to a relative ``O(n·eps)`` (the exact projection's
``|μ| = κn`` holds to rounding); the weak learner's DP contract (BCS20 Def 20, spec §7.1) is
stated over such κ-smooth, ζ-close distributions.

Nothing computed here from the data other than the hypotheses may be released: not ``μ``, ``μ̂``,
the margins or training-set votes (spec §2.5, §3.5).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

UPDATES = ("gain", "margin")

Hypothesis = Any
"""A weak hypothesis: any pytree of arrays (stacked over rounds by :func:`smooth_boost`)."""


class WeakLearner(NamedTuple):
    """A weak learner for :func:`smooth_boost`: two pure functions (spec §7.1).

    Attributes:
      fit: ``fit(key, distribution, data, y) -> hypothesis``. ``distribution`` is the
        normalised measure ``μ̂ [n]`` (float, sums to 1, ``max <= 1/(κn)``); ``data`` is the
        pytree passed to :func:`smooth_boost` (e.g. codes ``uint8 [n, d]``); ``y [n]`` the labels
        in ``{−1, +1}``; ``key`` is fresh for every round. A private learner touches the data
        only through ``distribution``-weighted statistics and calibrates its noise to the
        replace-one sensitivities under ``Δ(μ̂, μ̂') <= 1/(κn)`` (spec §3.3). Its returned
        pytree is released; it may carry the learner's own privacy costs.
      predict: ``predict(hypothesis, data) -> votes [m]`` in ``[−1, 1]`` (``{−1, +1}`` for
        stumps and trees) on any rows ``data``. The booster's update reads the training votes
        only through this function, so the measure depends on the sample and the released
        hypotheses alone (BCS20 Alg. 2).
    """

    fit: Callable[[jax.Array, Any, Any, jax.Array], Hypothesis]
    predict: Callable[[Hypothesis, Any], jax.Array]
    resolution: int = 0
    """``0``: votes anywhere in ``[−1, 1]`` (``fit`` gets the dense float distribution ``μ̂``).
    ``Q >= 1``: votes exactly on the grid ``{−1 + 2j/Q : j = 0..Q}`` (``Q = 1``: ``±1``
    stumps and trees; a real-valued learner rounds its votes, post-processing): ``fit`` then
    gets the measure as :class:`LevelMeasure` (exact integer counts per level,
    :func:`level_weights`)."""


class LevelMeasure(NamedTuple):
    """The normalised measure of the ``"gain"`` update for votes on a grid of resolution ``Q``
    (:attr:`WeakLearner.resolution`), by level.

    After ``t`` rounds example ``i`` has ``level(i) = Q·L_i``, its summed gains
    ``½(1 + y_i h_j(x_i))`` in units of ``1/Q`` (for ``±1`` votes, ``Q = 1``: its number of
    correct votes), and ``μ̂(i) = weight[level(i)]``: examples with equal levels have equal mass
    (``μ̃(i) = κ·e^{−(λ/Q)·level(i)}``). A weak learner computes every weighted statistic as
    ``Σ_c weight[c]·K_c`` from *integer* counts ``K_c`` per level (exact in int32), so the
    only float rounding is in the ``levels``-term sums (:data:`level_rounding`).

    Attributes:
      level: int32 ``[n]`` in ``0..levels − 1``.
      weight: float32 ``[levels]``, ``μ̂`` of one example at each level (``Σ_i μ̂(i) = 1``).
      multiplicity: int32 ``[n]``, how many examples each row stands for (1; 0 for a row left
        out of the sample or a bucket's padding row; more for one of the two public rows of
        :func:`sample_to_size`).
    """

    level: jax.Array
    weight: jax.Array
    multiplicity: jax.Array


def project_dense(log_weights: ArrayLike, kappa: ArrayLike) -> jax.Array:
    """The exact Bregman (KL) projection ``Π_Γ μ̃ = argmin_{μ ∈ Γ_κ} KL(μ ‖ μ̃)`` of the measure
    ``μ̃ = exp(log_weights)`` onto ``Γ_κ = {μ ∈ [0,1]^n : Σ_i μ(i) >= κn}`` (BCS20 §1 and Lemma 9
    after Barak, Hardt & Kale 2009; spec §2.3; stumps spec §2.3, A4).

    Returns ``μ [n]`` with ``μ(i) = min(1, c·μ̃(i))`` where

    * ``c = 1`` if ``Σ_i min(1, μ̃(i)) >= κn`` (clip only: ``μ̃`` is already dense once its
      entries above 1 are capped; then ``Σ μ >= κn``);
    * otherwise ``c > 1`` is the unique constant with ``Σ_i min(1, c·μ̃(i)) = κn``, so
      ``Σ μ = κn`` (to float rounding) and ``μ/(κn)`` is κ-smooth.

    ``log_weights`` are the *unscaled* ``log μ̃`` (the clip test depends on their level; the
    scaling branch does not). Exact, not iterative: sort ``v = log μ̃`` descending, take the
    reverse cumulative logsumexp ``tail_k = log Σ_{j>=k} e^{v_j}``, and for every number ``k`` of
    capped entries the scale ``log c_k = log(κn − k) − tail_k`` of the uncapped tail; the
    answer is the first ``k < κn`` whose largest uncapped entry stays ``<= 1``,
    ``v_k + log c_k <= 0`` (that test is monotone in ``k``, so the first pass is the unique
    consistent ``k``). The values are then formed relative to the largest uncapped entry
    (``μ(i) = (κn − k)·e^{v_i − v_k} / Σ_{j uncapped} e^{v_j − v_k}``), which keeps float32
    accurate for log weights of any magnitude. Static shapes; jit/vmap-able.

    Args:
      log_weights: ``[n]`` finite log weights ``log μ̃`` (float32 or float64).
      kappa: the density ``κ ∈ (0, 1)`` (traced allowed).

    Returns:
      ``μ [n]`` in ``[0, 1]``, same float dtype as ``log_weights`` (float32 for integers).
    """
    log_weights = jnp.asarray(log_weights)
    if not jnp.issubdtype(log_weights.dtype, jnp.floating):
        log_weights = log_weights.astype(jnp.float32)
    if log_weights.ndim != 1:
        raise ValueError(f"log_weights must have shape [n], got {log_weights.shape} "
                         "(vmap over leading axes)")
    n = log_weights.shape[0]
    target = jnp.asarray(kappa, log_weights.dtype) * n                  # κn
    clipped = jnp.minimum(log_weights, 0.0)                             # log min(1, μ̃)
    clip_only = jnp.sum(jnp.exp(clipped)) >= target

    order = jnp.argsort(-log_weights)                                   # descending, stable
    v = log_weights[order]
    tail = jax.lax.cumlogsumexp(v, reverse=True)                        # log Σ_{j>=k} e^{v_j}
    k = jnp.arange(n)
    room = target - k                                                   # κn − k
    log_c = jnp.log(jnp.where(room > 0, room, 1.0)) - tail
    fits = (room > 0) & (v + log_c <= 0)
    last = jnp.maximum(jnp.ceil(target).astype(jnp.int32) - 1, 0)      # fits mathematically
    n_capped = jnp.where(fits.any(), jnp.argmax(fits), last)

    capped = jnp.zeros(n, bool).at[order].set(k < n_capped)
    relative = jnp.where(capped, -jnp.inf, log_weights - v[n_capped])   # <= 0 when uncapped
    log_scale = jnp.log(target - n_capped) - jax.nn.logsumexp(relative)
    scaled = jnp.where(capped, 0.0, jnp.minimum(relative + log_scale, 0.0))
    return jnp.exp(jnp.where(clip_only, clipped, scaled))


def normalise(mu: ArrayLike) -> jax.Array:
    """The induced distribution ``μ̂ = μ/|μ|`` handed to the weak learner (BCS20 §1; spec §1).

    For ``μ = project_dense(·, κ)``, ``|μ| >= κn`` and ``μ <= 1``, so ``μ̂(i) <= 1/(κn)``
    (κ-smooth), and a replace-one change of the sample moves ``μ̂`` by at most ``1/(κn)`` in total
    variation (Lemma 25; module docstring).
    """
    mu = jnp.asarray(mu)
    return mu / jnp.sum(mu, axis=-1, keepdims=True)


def level_weights(level_counts: ArrayLike, kappa: ArrayLike,
                  learning_rate: ArrayLike) -> jax.Array:
    """``μ̂`` of one example at each level (:class:`LevelMeasure`): the exact projection
    (:func:`project_dense`) of ``μ̃(i) = κ·e^{−λ·level(i)}`` onto ``Γ_κ``, normalised, computed
    on the ``levels`` distinct values with their counts ``N_c`` (``n = Σ_c N_c``).

    Every ``μ̃ <= κ`` (the ``"gain"`` update), so the projection scales (``c >= 1``) and caps the
    lowest levels at 1: with every level below ``k`` capped, ``j_k`` the first non-empty level
    ``>= k``, ``μ_c = 1`` for ``c < k`` and ``μ_c = min(1, C_k·e^{−λ(c − j_k)})`` for
    ``c >= j_k``, ``C_k = (κn − Σ_{c<k} N_c) / Σ_{c>=j_k} N_c e^{−λ(c − j_k)}``; ``k`` is the
    first with ``C_k <= 1`` (the largest uncapped weight, at ``j_k``; spec §2.3, the sorted
    rule; levels are already sorted). Then ``μ̂_c = μ_c/(κn)``: ``|μ| = κn`` exactly in real
    arithmetic.

    Floats: the factors are relative to the first non-empty level, so the tail sum is at least
    ``N_{j_k} >= 1`` and ``C_k <= κn`` (no overflow); a factor ``e^{−λ·j}`` that flushes to zero
    stands for a weight below ``2**−126`` (at most ``n·2**−126`` of mass in all). The capped
    mass is an exact integer; the factors are one table of ``λ`` and the level gap (the same on
    neighbouring datasets); each ``C_k`` is a ratio of a rounded difference and a
    ``levels``-term sum of positive terms (elementwise products and sums: no matrix products,
    whose float32 precision is backend-dependent). Every ``μ̂_c`` is thus within a relative
    ``(levels + 8)·2**−24`` of the exact projection of the tabled factors, plus the uncapped
    mass's share of the rounding of ``κn − Σ N_c`` (absolute ``2**−24`` in total).

    Args:
      level_counts: int ``[levels]``, ``N_c`` (``n = Σ_c N_c >= 1``, below ``2**24``).
      kappa: density ``κ ∈ (0, 1)``; learning_rate: ``λ > 0`` (both traced allowed).

    Returns:
      float32 ``[levels]``: ``μ̂`` of one example at each level (at empty levels too).
    """
    counts = jnp.asarray(level_counts, jnp.int32)
    levels = counts.shape[0]
    n = jnp.sum(counts)
    target = jnp.asarray(kappa, jnp.float32) * n.astype(jnp.float32)           # κn
    capped_mass = jnp.cumsum(counts) - counts                                   # Σ_{c<k} N_c
    room = target - capped_mass.astype(jnp.float32)                             # κn − M_k
    steps = jnp.arange(levels)
    # j_k: the first non-empty level >= k (levels when there is none)
    nonempty_at = jnp.where(counts > 0, steps, levels)
    first = jax.lax.cummin(nonempty_at, reverse=True)
    # factor[k, c] = e^{−λ(c − j_k)} for c >= j_k: one table of λ and the gap c − j_k
    table = jnp.exp(-jnp.asarray(learning_rate, jnp.float32) * steps.astype(jnp.float32))
    gap = steps[None, :] - first[:, None]
    factor = jnp.where(gap >= 0, table[jnp.clip(gap, 0, levels - 1)], 0.0)
    tail = jnp.sum(factor * counts[None, :].astype(jnp.float32), axis=1)       # >= N_{j_k}
    scale = room / jnp.maximum(tail, 1.0)                                       # C_k
    fits = (first < levels) & (room > 0) & (scale <= 1.0)
    k = jnp.argmax(fits)
    mu = jnp.where(steps < k, 1.0, jnp.minimum(scale[k] * factor[k], 1.0))
    return mu / target


def log_unprojected(margins: ArrayLike, n_done: ArrayLike, kappa: ArrayLike,
                    learning_rate: ArrayLike, update: str = "gain") -> jax.Array:
    """``log μ̃_{t+1} = log κ − λ·L`` of the lazy multiplicative update (BCS20 Alg. 4; stumps
    spec Alg. 1), from the running margins ``σ_i = y_i Σ_{j<=t} h_j(x_i)`` of ``t = n_done``
    hypotheses: ``L = (t + σ)/2`` (the summed gains ``½(1 + y h)``, ``update="gain"``) or
    ``L = σ`` (``update="margin"``)."""
    margins = jnp.asarray(margins, jnp.float32)
    if update == "gain":
        score = 0.5 * (jnp.asarray(n_done, jnp.float32) + margins)
    elif update == "margin":
        score = margins
    else:
        raise ValueError(f"update must be one of {UPDATES}, got {update!r}")
    rate = jnp.asarray(learning_rate, jnp.float32)
    return jnp.log(jnp.asarray(kappa, jnp.float32)) - rate * score


def next_measure(margins: ArrayLike, n_done: ArrayLike, kappa: ArrayLike,
                 learning_rate: ArrayLike, update: str = "gain") -> jax.Array:
    """``μ_{t+1} = Π_Γ(μ̃_{t+1})``, BCS20's LB-NxM before normalisation (Alg. 4): the lazy update
    (:func:`log_unprojected`) then one projection (:func:`project_dense`). With no hypotheses
    (``n_done = 0``, margins 0) it is ``μ_1 ≡ κ``: the uniform distribution after
    normalising."""
    return project_dense(log_unprojected(margins, n_done, kappa, learning_rate, update), kappa)


def smooth_boost(
    key: jax.Array,
    data: Any,
    y: ArrayLike,
    weak_learner: WeakLearner,
    n_rounds: int,
    kappa: ArrayLike,
    learning_rate: ArrayLike,
    *,
    update: str = "gain",
    multiplicity: ArrayLike | None = None,
) -> Hypothesis:
    """LazyBregBoost (BCS20 Alg. 1, 2 and 4; spec §2.5; stumps spec §2.2) as one ``lax.scan``
    over ``n_rounds`` rounds. Round ``t = 0, 1, ...``:

    ``μ̂_t = normalise(next_measure(σ, t, κ, λ))``, ``h_t = weak_learner.fit(fold_in(key, t),
    μ̂_t, data, y)``, ``σ ← σ + y·clip(weak_learner.predict(h_t, data), −1, 1)``. A learner
    with votes on a grid of resolution ``Q >= 1`` gets ``μ̂_t`` as a :class:`LevelMeasure`
    instead (the same measure: ``σ_i = 2·level(i)/Q − t``), so its statistics can be exact
    integer counts.

    The carry (the margins ``σ``, a cache of what Alg. 4 recomputes from ``H``) is never
    returned. The number of rounds is fixed in advance: no data-dependent stopping (A28).
    Privacy is the weak learner's: ``n_rounds`` adaptive calls, each on a κ-smooth
    distribution that a replace-one neighbour moves by at most ``1/(κn)`` in total variation
    (module docstring); the accounting is done by the caller.

    Args:
      key: PRNG key; round ``t`` uses ``jax.random.fold_in(key, t)``.
      data: the training rows, any pytree the weak learner reads (``n`` rows).
      y: ``[n]`` labels in ``{−1, +1}`` (not class indices; unchecked, as they may be traced).
      weak_learner: a :class:`WeakLearner` (static).
      n_rounds: number of rounds ``T`` (static).
      kappa: density ``κ ∈ (0, 1)`` (traced allowed); learning_rate: ``λ > 0`` (traced).
      update: ``"gain"`` (BCS20, default) or ``"margin"`` (Asadi et al.); module docstring.
      multiplicity: int ``[n]`` examples per row (default 1 each; learners with a vote grid,
        ``resolution >= 1``, only): the
        sample is ``n = Σ multiplicity`` examples, a row with multiplicity ``k`` being ``k``
        identical examples (a fixed-size sample drawn or padded from the data).

    Returns:
      The hypotheses: ``weak_learner.fit``'s pytree with a leading axis ``[n_rounds]``.
    """
    if update not in UPDATES:
        raise ValueError(f"update must be one of {UPDATES}, got {update!r}")
    if not isinstance(n_rounds, int) or n_rounds < 1:
        raise ValueError(f"n_rounds must be a positive int, got {n_rounds!r}")
    if isinstance(kappa, (int, float, np.number)) and not 0.0 < kappa < 1.0:
        raise ValueError(f"kappa must lie in (0, 1), got {kappa!r}")
    y = jnp.asarray(y, jnp.float32)
    if y.ndim != 1:
        raise ValueError(f"y must have shape [n], got {y.shape}")

    resolution = weak_learner.resolution
    if resolution and update != "gain":
        raise ValueError("a weak learner with a vote grid (resolution >= 1) is boosted with "
                         "update='gain' only")
    if multiplicity is not None and not resolution:
        raise ValueError("multiplicity needs a weak learner with a vote grid (resolution >= 1)")
    multiplicity = (jnp.ones(y.shape, jnp.int32) if multiplicity is None
                    else jnp.asarray(multiplicity, jnp.int32))

    def round_t(margins: jax.Array, t: jax.Array) -> tuple[jax.Array, Hypothesis]:
        distribution = normalise(next_measure(margins, t, kappa, learning_rate, update))
        hypothesis = weak_learner.fit(jax.random.fold_in(key, t), distribution, data, y)
        votes = jnp.clip(weak_learner.predict(hypothesis, data), -1.0, 1.0)
        return margins + y * votes, hypothesis

    def round_levels(level: jax.Array, t: jax.Array) -> tuple[jax.Array, Hypothesis]:
        counts = jnp.zeros(n_rounds * resolution + 1, jnp.int32).at[level].add(multiplicity)
        weights = level_weights(counts, kappa, jnp.asarray(learning_rate) / resolution)
        measure = LevelMeasure(level, weights, multiplicity)
        hypothesis = weak_learner.fit(jax.random.fold_in(key, t), measure, data, y)
        votes = jnp.clip(weak_learner.predict(hypothesis, data), -1.0, 1.0)
        gain = jnp.round(0.5 * resolution * (1.0 + y * votes)).astype(jnp.int32)
        return level + gain, hypothesis

    if resolution:
        _, hypotheses = jax.lax.scan(round_levels, jnp.zeros(y.shape, jnp.int32),
                                     jnp.arange(n_rounds))
    else:
        _, hypotheses = jax.lax.scan(round_t, jnp.zeros(y.shape, jnp.float32),
                                     jnp.arange(n_rounds))
    return hypotheses


SAMPLE_WORDS = 3
"""Random 32-bit words that order each row in :func:`sample_to_size`: two rows tie with
probability ``2**−96``, so with at most ``2**31`` rows a tie (broken by the row's index) has
probability below ``2**−35``."""


def sample_to_size(key: jax.Array, records: jax.Array, size: ArrayLike) -> jax.Array:
    """Multiplicities ``int32 [n_rows + 2]`` that make the data a sample of exactly ``size``
    examples (a public integer ``1 <= ñ < 2**24``: declared, or a released noisy count): a
    uniformly random subset of ``min(ñ, n)`` of the ``n`` rows where ``records`` (bool
    ``[n_rows]``) holds (multiplicity 1, the others 0; a padding row, where it does not, is
    never drawn), then two padding rows (a fixed public record with label ``+1``, and one with
    ``−1``) standing for ``⌈k/2⌉`` and ``⌊k/2⌋`` examples, ``k = max(ñ − n, 0)``. The subset is
    the ``ñ`` records first in a uniformly random order: each row's :data:`SAMPLE_WORDS` random
    words (row ``i``'s words depend on ``key`` and ``i`` alone, so rows padded after the records
    change nothing), ties by index.

    Why (the analysis of LazyBregBoost is for replace-one neighbours with ``n`` public,
    BCS20 §1): for add/remove neighbours ``D`` and ``D' = D ∪ {z}`` and the same ``ñ``, the two
    samples can be coupled so that every pair differs by at most one replaced example (a
    ``ñ``-subset of ``D'`` either misses ``z`` — a uniform ``ñ``-subset of ``D`` — or holds ``z``
    and a uniform ``(ñ−1)``-subset of ``D``, which is one replacement away from a uniform
    ``ñ``-subset; with padding, ``z`` takes the place of one padding example). An ``ε``-DP
    mechanism for replace-one neighbours on samples of size ``ñ`` is thus ``ε``-DP for
    add/remove neighbours on the data."""
    records = jnp.asarray(records, bool)
    n_rows = records.shape[0]
    size = jnp.asarray(size).astype(jnp.int32)
    words = jax.random.bits(key, (n_rows, SAMPLE_WORDS), jnp.uint32)
    index = jnp.arange(n_rows, dtype=jnp.int32)
    *_, order = jax.lax.sort(((~records).astype(jnp.int32), *words.T, index),
                             num_keys=SAMPLE_WORDS + 2)
    rank = jnp.zeros(n_rows, jnp.int32).at[order].set(index)
    kept = (records & (rank < size)).astype(jnp.int32)
    padding = jnp.maximum(size - jnp.sum(records, dtype=jnp.int32), 0)
    return jnp.concatenate([kept, jnp.stack([padding - padding // 2, padding // 2])])


def round_votes(hypotheses: Hypothesis, predict: Callable[[Hypothesis, Any], jax.Array],
                data: Any) -> jax.Array:
    """Every round's votes ``h_t(x) [T, m]`` on the rows ``data``, clipped to ``[−1, 1]``
    (A29)."""
    votes = jax.vmap(predict, in_axes=(0, None))(hypotheses, data)
    return jnp.clip(votes, -1.0, 1.0)


def majority_vote(votes: ArrayLike, key: jax.Array | None = None) -> jax.Array:
    """``sgn(Σ_t h_t(x))``, the unweighted majority vote of ``votes [T, m]`` (BCS20 Alg. 1;
    spec §2.4), as int32 labels ``{−1, +1} [m]``.

    Ties (``Σ_t h_t(x) = 0``, possible for even ``T``) go to the vote of the earliest round whose
    hypothesis does not abstain (``h_t(x) ≠ 0``): the vote is lexicographic on
    ``(Σ_t h_t, h_1, h_2, ...)``, so swapping the two labels swaps every prediction and no
    class is favoured (the specs' A15/A6 send ties to ``+1``). Only when every hypothesis
    abstains at ``x`` (real-valued ones) is it a fair coin from ``key`` (``+1`` without a key).
    Post-processing of the released hypotheses.
    """
    votes = jnp.asarray(votes)
    total = votes.sum(0)
    speaks = votes != 0
    first = jnp.take_along_axis(votes, jnp.argmax(speaks, axis=0)[None], axis=0)[0]
    if key is None:
        coin = jnp.ones(total.shape, votes.dtype)
    else:
        coin = jnp.where(jax.random.bernoulli(key, 0.5, total.shape), 1.0, -1.0)
    tie_break = jnp.where(speaks.any(0), first, coin)
    return jnp.where(total != 0, jnp.sign(total), jnp.sign(tie_break)).astype(jnp.int32)


def smooth_boost_decision(hypotheses: Hypothesis,
                          predict: Callable[[Hypothesis, Any], jax.Array],
                          data: Any) -> jax.Array:
    """The averaged hypothesis ``f̂(x) = (1/T) Σ_t h_t(x) ∈ [−1, 1]`` of every row ``[m]``
    (BCS20 Alg. 1; its margins ``y·f̂`` are those of Thm 24); ``predict`` is the weak learner's
    (:attr:`WeakLearner.predict`)."""
    return round_votes(hypotheses, predict, data).mean(0)


def smooth_boost_predict(hypotheses: Hypothesis, predict: Callable[[Hypothesis, Any], jax.Array],
                         data: Any, key: jax.Array | None = None) -> jax.Array:
    """Labels ``{−1, +1} [m]``: :func:`majority_vote` of the rounds' votes on ``data``."""
    return majority_vote(round_votes(hypotheses, predict, data), key)


__all__ = ["SAMPLE_WORDS", "UPDATES", "LevelMeasure", "WeakLearner", "level_weights",
           "log_unprojected", "majority_vote", "next_measure", "normalise", "project_dense",
           "round_votes", "sample_to_size", "smooth_boost", "smooth_boost_decision",
           "smooth_boost_predict"]
