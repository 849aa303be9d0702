"""Private Newton boosting: the default ``boosted`` learner (``docs/design.md``, "Learners").

A logistic-loss gradient-boosted additive model whose every release carries signal at
``ε ≥ 0.1`` on thousands of rows (issues 9 and 27; DP-EBM, Nori et al. 2021, and DP-GBDT work,
e.g. Maddock et al. 2022, for the ingredients):

1. **A private prior** (a share ``prior_share`` of the budget: ``ε_0 = prior_share·ε`` for
   Laplace rounds, ``ε_0 = sqrt(2·prior_share·ρ)`` for Gaussian rounds; with
   ``noise="auto"`` a scout count takes part of it first, by subtraction in the Laplace
   route and in quadrature in the Gaussian one): the noisy class counts ``(ñ_0, ñ_1)`` (L1
   sensitivity 1 under add/remove, 2 under replace-one) give the initial score
   ``F_0 = log(ñ_1/ñ_0)`` and the released size ``ñ``, so a model whose rounds carry no
   signal predicts the released majority class.
2. **Rounds** ``r = 1..R``, each a partition of the records into cells read off public codes:

   * ``shape="cyclic"`` (DP-EBM's shape): the first pass visits every feature once in a
     data-independent random order, each of its codes a cell; later passes (Gaussian rounds
     only, ``passes − 1`` of them) visit the ``focus`` features of largest released gain
     (:func:`released_gain` of the first pass's releases: post-processing, no budget);
   * ``shape="random"``: round ``r`` is a complete depth-``d`` tree with data-independent random
     splits (:func:`dpjax.trees.grow.random_splits`) and its leaves are the cells;
   * ``shape="oblivious"``: round ``r`` is a private oblivious tree of depth ``d``, each level's
     one split drawn by permute-and-flip over the level-summed absolute gradients
     (:mod:`dpjax.trees.oblivious`; sensitivity 1 per record), its ``2**d`` leaves the cells.
     The round's budget is split: a share ``split_share`` over the ``d`` draws, the rest to
     the leaves (:func:`split_round`); at most ``oblivious_trees`` rounds
     (:func:`oblivious_rounds`);
   * ``shape="auto"`` (the default): the cyclic shape, or the random one where the cyclic
     schedule cannot afford one pass over the features (:func:`auto_uses_random`), or with at
     least :data:`MANY_FEATURES` features (a one-hot matrix) the oblivious one where its
     schedule affords two trees (:func:`auto_uses_oblivious`).

   **Resolution**: a numeric feature's ``B`` equal-width bins are merged into ``K`` runs of
   adjacent bins (:func:`merged_cells`), ``K`` the most cells whose average ``ñ/K`` keeps
   ``cell_signal`` noise scales of one pass (:func:`resolution_cells`): small data at small
   ``ε`` fits coarse steps, large data the full resolution. Categorical codes are kept.

   Each round releases the cells' gradient and hessian sums of the logistic loss at the current
   released score, ``(G_c, H_c) = Σ_{i∈c} (p_i − y_i, p_i(1 − p_i))``. A record sits in one cell
   and ``|p − y| + p(1 − p) <= 1`` (and ``(p − y)² + (p(1 − p))² <= 1``), so the round's whole
   release has L1 and L2 sensitivity 1 (2 under replace-one): the cells compose in parallel and
   the round costs one ``ε_r`` (or ``ρ_r``). The sums are exact fixed-point (units of
   ``2**−GRAD_BITS``, int32 or past ``2**23 − 1`` rows two int32 limbs; one record moves them
   by at most ``2**GRAD_BITS + 2`` units with the floors) and go through
   :func:`dpjax.mechanisms.laplace_mechanism` (exact discrete Laplace) or
   :func:`dpjax.mechanisms.gaussian_mechanism` (exact discrete Gaussian).
3. **Newton leaves with noise-aware shrinkage** (post-processing): each cell's score moves by
   ``w_c = −η·G̃_c / max(H̃_c + Λ, Λ)``, clipped to ``±STEP_CLIP``, with the ridge
   ``Λ = 1 + λ·√R·b`` where ``b`` is the round's noise scale: a cell whose sums are mostly
   noise moves little, and the sum of ``R`` rounds' noisy moves stays below the prior's margin.

**Regression** (``task="regression"``, ``context.target = (lo, hi)`` public): the target is
clipped into the range and scaled to ``z ∈ [−1, 1]`` (:func:`dpjax.data.target_units`); the prior
releases the row count and ``Σ z`` at once (L1 sensitivity 2 rows, :func:`release_moments`)
and starts from their ratio, the noisy mean (:func:`mean_prior`); each round releases the
cells' sums of the squared loss's residuals clipped to ``±c`` and divided by ``c`` and of
the hessian weight ``w`` (:func:`residual_stats`, :data:`HESSIAN_WEIGHT`): L1 sensitivity
``1 + w`` rows; the move is ``c`` times the Newton move of those sums. Laplace rounds of the
cyclic or random shape only; a schedule that affords no round releases the count and sum
again and predicts their mean. The fitted model is read back in the target's units
(:func:`in_target_units`).

**Noise and budget.** After the prior, the rounds share the rest:

* ``noise="laplace"`` (the default): ``R`` pure rounds of ``ε_r`` each, the sequential
  ``(ε − ε_0)/R`` or, with ``δ > 0``, the largest ``ε_r`` at which the prior and the ``R``
  rounds compose to ``(ε, δ)`` by the optimal composition of pure releases (Kairouz, Oh &
  Viswanath 2015; the optimal route's :meth:`~dpjax.privacy.composition.Route.per_round`,
  :mod:`dpjax.privacy.optimal`; never below the zCDP share ``sqrt(2(ρ − ε_0²/2)/R)``, ``ρ``
  the largest zCDP budget that converts to ``(ε, δ)``). An oblivious round counts as its
  leaves' release and its ``d`` level draws (:func:`oblivious_shares`): at ``ε = 0.1``,
  ``δ = 10⁻⁶`` eight trees get 1.8 times the sequential share. One pass over the features,
  and the schedule (:func:`active_rounds`) sizes the rounds by the sequential or zCDP share:
  scheduling more rounds at the optimal share measured worse at ``ε = 0.1`` (adult's one-hot
  matrix, 5 splits: 0.777 against 0.784), and focus passes of Laplace rounds at ``δ > 0``
  worse on average over the shared datasets (3 splits: 0.773 against 0.776);
* ``noise="gaussian"`` (``δ > 0``): ``R`` discrete Gaussian rounds of ``ρ_r = (ρ − ε_0²/2)/R``
  (:func:`~dpjax.privacy.composition.round_rho`); their noise grows as ``√R``, so the focus
  passes cost nothing in the averaged noise of a cell;
* ``noise="auto"``: Laplace at ``δ = 0``; at ``δ > 0`` a scout count (``SCOUT_SHARE`` of
  ``ε``) gives a size at which both plans are worked out, and the Gaussian one is taken where
  it pays (:func:`gaussian_pays`: at least the pure plan's rounds and less noise at that many
  rounds), a public choice; the prior then takes the rest of its share in that route. Better
  at ``ε = 10`` on large data, worse below on small data (the scout dilutes the prior), so
  ``"laplace"`` stays the default (``experiments/results/private_boosting.md``).

The route taken by ``"auto"`` is a public function of released values, so the fit is an
adaptive choice between two mechanisms each within the request: on the Laplace path the
privacy loss is bounded by basic composition (or the optimal composition of pure releases), on
the Gaussian
path by the zCDP sum ``<= ρ``; each path is ``(ε, δ)``-DP on its own, which is what adaptive
composition with privacy filters needs (Rogers et al. 2016; Feldman & Zrnic 2021). The ledger
states the path taken, in the basic and zCDP views, and keeps the smaller total (both hold).

The number of active rounds ``R`` is a function of public quantities only (:func:`active_rounds`):
at most the shape's schedule (:func:`max_rounds`), and no more than keep the average cell at
``min_signal`` times the round's noise scale given the released size ``ñ``: small data at small
``ε`` spends its budget on fewer, less noisy rounds. The rounds' budget is split after the prior
is released (adaptive composition). Rounds past ``R`` (of the ``max_rounds`` the program is
compiled for) release nothing and cost nothing, so one compiled program serves a sweep over
``ε``.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.ensembles.newton.model import NewtonBoostedModel
from dpjax.learner import FitContext, records
from dpjax.mechanisms.exponential import GAMMA_SLACK
from dpjax.mechanisms.gaussian import (
    NOISE_BITS_SCALE,
    free_bound,
    gaussian_grid_step,
    gaussian_mechanism,
)
from dpjax.mechanisms.laplace import integer_grid, laplace_mechanism
from dpjax.mechanisms.size import class_totals, pooled_counts, release_class_counts
from dpjax.privacy import Cost, fixed_point
from dpjax.privacy.composition import (
    WHOLE,
    Shares,
    affordable_rounds,
    round_budget,
    round_rho,
    zcdp_budget,
)
from dpjax.privacy.fixed_point import WideSum
from dpjax.privacy.rounding import round_down
from dpjax.trees.dense import DenseTree
from dpjax.trees.grow import random_splits
from dpjax.trees.oblivious import grow_oblivious
from dpjax.trees.predict import leaf_index

if TYPE_CHECKING:
    from dpjax.ensembles.newton.config import Boosted

SHAPES = ("auto", "cyclic", "random", "oblivious")
NOISES = ("auto", "laplace", "gaussian")
GRAD_BITS = fixed_point.BITS
"""Gradient and hessian sums are fixed point (:mod:`dpjax.privacy.fixed_point`) in units of
``2**−GRAD_BITS``: exact (the sensitivity holds for the computed sums), in int32 up to
:data:`dpjax.privacy.fixed_point.MAX_ROWS` rows and in two limbs beyond."""
GRAD_UNIT = fixed_point.UNIT
RESIDUAL_CLIP_FLOOR = 2.0**-10
"""The least ``residual_clip``: a smaller one would flush the divided residuals to zero."""
HESSIAN_WEIGHT = 0.5
"""Regression rounds release each record's hessian (1 for the squared loss) as this weight, so
that the gradient sums, whose noise matters most, take ``1/(1 + w)`` of a round's L1
sensitivity instead of half; the released hessian sums are divided by it (post-processing).
Measured on abalone, winewhite and winered (10 splits × 4 seeds, ε = 0.1 and 1) against 1 and
0.25: no weight was best everywhere; 0.5 was the best or within 0.01 of it on abalone and
winewhite."""
MOMENTS_BOUND = float(2**36)
"""The public bound (units) of the regression prior's row count and target sum:
:data:`dpjax.privacy.fixed_point.WIDE_MAX_ROWS` rows, about ``2**36`` units; it sets the
release's grid to one row (for ``ε >= 2**−19``)."""
STEP_CLIP = 2.0
"""A round moves a cell's score (log-odds) by at most this much."""
GAUSSIAN_CELL_BOUND = 2.0**16
"""With Gaussian noise a cell's sums are clipped to ``±2**16`` (``2**24`` units, so that their
float32 conversion is exact) before the release: a cell's moves are clipped to ``±STEP_CLIP``
anyway, so only cells of over ``2**18`` rows can lose accuracy, never privacy."""
PRIOR_LABEL = "prior (class counts)"
MEAN_PRIOR_LABEL = "prior (row count and target sum)"
MAJORITY_LABEL = "class counts again (no round affordable: majority fallback)"
MEAN_LABEL = "row count and target sum again (no round affordable: mean fallback)"
SCOUT_LABEL = "scout (class counts)"
SCOUT_SHARE = 0.02
"""With ``noise="auto"`` at ``δ > 0``, the share of ``ε`` of a first release of the class
counts whose size decides the route (Laplace or Gaussian rounds) before the prior takes the
rest of its share in that route (:func:`fit`)."""
SCOUT_MARGIN = 3.0
"""The scout's size is read at this many standard deviations of its noise below the released
total (each count's discrete Laplace has standard deviation about ``√2·Δ/ε``, the total's
``2Δ/ε``), so that small data does not take the Gaussian route by a noisy overcount."""
SELECT_LABEL = "oblivious splits (level gains)"
FILTER_LABEL = "rounds and level draws (individual filter)"
FILTER_MARGIN = 1e-4
"""The least relative margin of the individual filter's cap (:func:`filter_margin`)."""


def filter_margin(rounds: int, levels: int) -> float:
    """The individual filter stops each record at ``(1 − margin)·B``: a record's float32
    running sum of per-round losses (``rounds`` additions, each loss a few float32 operations
    over up to ``levels + 1`` terms) is within ``(rounds·(levels + 4) + 1)·2⁻²³`` of ``B``
    relative, so at least :data:`FILTER_MARGIN`, more for thousands of rounds (static)."""
    return max(FILTER_MARGIN, (rounds * (levels + 4) + 1) * 2.0**-23)
ROUND_LABELS = {"laplace": "rounds (gradient/hessian sums)",
                "gaussian": "rounds (gradient/hessian sums, Gaussian)"}


def active_rounds(epsilon: ArrayLike, prior: ArrayLike, size: ArrayLike, cells: ArrayLike,
                  most: ArrayLike, *, min_signal: ArrayLike, delta: float,
                  gaussian: bool, least: float = 1.0) -> jax.Array:
    """The public schedule ``R``: a function of ``ε``, ``δ``, the prior's ``ε_0``, the
    *released* size ``ñ`` (the prior's noisy class counts) and the configuration only, never
    of the data itself. At most ``most`` rounds (:func:`max_rounds`), and no more than keep
    the average cell's row count ``ñ/cells`` at ``min_signal`` times the round's noise scale
    (at least 1; :func:`~dpjax.privacy.composition.affordable_rounds`): pure rounds of ``ε_r``
    have Laplace scale ``1/ε_r``, Gaussian rounds of ``ρ_r`` standard deviation
    ``sqrt(1/(2ρ_r))``. Small data at small ``ε`` thus spends its budget on fewer, less noisy
    rounds; at least ``least`` (1; 0 for the softmax booster, whose fit then falls back to
    the released class counts)."""
    signal = jnp.asarray(size, jnp.float32) / (jnp.asarray(cells, jnp.float32) * min_signal)
    return jnp.clip(affordable_rounds(epsilon, prior, signal, delta, gaussian=gaussian), least,
                    jnp.asarray(most, jnp.float32))


def cyclic_rounds(n_features: int, passes: int, focus: int) -> int:
    """Rounds of the cyclic shape's ``passes`` passes: the first over all ``n`` features, each
    later one over the ``min(focus, n)`` features of largest released gain (:func:`fit`)."""
    return n_features + (passes - 1) * min(focus, n_features)


def noise_kinds(noise: str, delta: float) -> tuple[str, ...]:
    """The noises a fit may release its rounds with: ``"laplace"`` (pure) or ``"gaussian"``
    (needs ``δ > 0``), or for ``"auto"`` Laplace alone at ``δ = 0`` and both at ``δ > 0`` (the
    choice is public: :func:`fit`)."""
    if noise == "auto":
        return ("laplace", "gaussian") if delta > 0.0 else ("laplace",)
    return (noise,)


def gaussian_pays(plans: dict[str, dict[str, jax.Array]], epsilon: ArrayLike,
                  gaussian_prior: ArrayLike, delta: float, sensitivity: float,
                  cells: int) -> jax.Array:
    """``noise="auto"`` at ``δ > 0``: the Gaussian plan where it affords at least the pure
    plan's rounds and, at that many rounds, its noise's standard deviation is below the
    Laplace noise's (``√2`` scales); Laplace noise grows as ``R`` and the Gaussian's as
    ``√R``, so the Gaussian pays for many rounds only. Public: a function of the plans
    (:func:`fit`), ``ε``, ``δ`` and the prior's ``ε_0``."""
    pure, gaussian = plans["laplace"], plans["gaussian"]
    at_pure = noise_scale(round_rho(epsilon, gaussian_prior, pure["rounds"], delta),
                          sensitivity, "gaussian", cells)
    return (gaussian["rounds"] >= pure["rounds"]) & (at_pure < math.sqrt(2.0) * pure["scale"])


def max_rounds(n_features: int, shape: str, n_trees: int, passes: int = 1,
               focus: int = 1, oblivious_trees: int = 0) -> int:
    """Rounds the program is compiled for (the schedule's maximum)."""
    cyclic = cyclic_rounds(n_features, passes, focus)
    return {"random": n_trees, "oblivious": oblivious_trees, "cyclic": cyclic}.get(
        shape, max(n_trees, cyclic, oblivious_trees))


def oblivious_rounds(epsilon: ArrayLike, prior: ArrayLike, size: ArrayLike, depth: int,
                     most: int, *, share: ArrayLike, min_signal: ArrayLike, delta: float,
                     gaussian: bool) -> jax.Array:
    """The oblivious shape's public schedule: :func:`active_rounds` for ``2**d`` cells whose
    sums get the leaves' share ``1 − s`` of each round, i.e. a noise scale ``1/(1 − s)`` times
    the round's (``1/sqrt(1 − s)`` for Gaussian rounds). The selections are not scheduled: a
    level's draw at a small ``ε_l`` is close to uniform, a random split, and more rounds at a
    small ``ε`` measured better than fewer, better-chosen ones
    (``experiments/results/private_boosting.md``)."""
    share = jnp.asarray(share, jnp.float32)
    keep = jnp.sqrt(1.0 - share) if gaussian else 1.0 - share
    return active_rounds(epsilon, prior, size, 2.0**depth / keep, most,
                         min_signal=min_signal, delta=delta, gaussian=gaussian)


AUTO_OBLIVIOUS_ROUNDS = 2
"""``shape="auto"`` with :data:`MANY_FEATURES` features or more boosts oblivious trees where
their public schedule affords at least this many (:func:`auto_uses_oblivious`)."""
MANY_FEATURES = 64
"""``shape="auto"`` considers oblivious trees from this many features up (a one-hot matrix,
say): a pass of cyclic rounds splits the budget this many ways, while an oblivious tree's
``2**d`` cells combine ``d`` chosen features (:func:`auto_uses_oblivious`)."""


def auto_uses_oblivious(trees: jax.Array, shape: str) -> jax.Array:
    """Whether the fit boosts private oblivious trees: ``shape="oblivious"``, or ``"auto"`` with
    at least :data:`MANY_FEATURES` features (static) where the oblivious schedule
    (:func:`oblivious_rounds`, public) affords :data:`AUTO_OBLIVIOUS_ROUNDS` trees (never with
    ``oblivious_trees=1``): below that, data too small for the budget, a level's draw is close
    to uniform and the cyclic rounds measured better
    (``experiments/results/private_boosting.md``)."""
    if shape != "auto":
        return jnp.asarray(shape == "oblivious")
    return trees >= AUTO_OBLIVIOUS_ROUNDS


def auto_uses_random(cyclic_rounds: jax.Array, n_features: int, shape: str) -> jax.Array:
    """Whether the fit boosts random-structure trees: ``shape="random"``, or ``"auto"`` where
    the cyclic schedule (:func:`active_rounds`, public) cannot afford one pass over the
    features (``R_cyclic < n``): its few rounds would see a few random features only, where a
    depth-``d`` random tree sees several at once (``experiments/results/private_boosting.md``,
    the ablation rows "boosted, cyclic" and "boosted, random trees d=4")."""
    if shape != "auto":
        return jnp.asarray(shape == "random")
    return cyclic_rounds < n_features


def gradient_stats(score: jax.Array, y: jax.Array, private: bool) -> jax.Array:
    """Per-record ``(g, h) = (p − y, p(1 − p))`` of the logistic loss at ``score [m]``,
    ``[m, 2]``, or of the softmax loss at ``score [m, K]`` (``K > 2`` classes), ``[m, K, 2]``
    with ``p = softmax(score)`` and ``y`` one-hot (the diagonal of the Hessian): int32
    ``floor(·2**GRAD_BITS)`` under DP (exact sums), float32 otherwise; zero for a padding row
    (label ``K``, :attr:`~dpjax.learner.Learner.pads_rows`)."""
    if score.ndim == 1:
        p = jax.nn.sigmoid(score)
        target = y.astype(jnp.float32)
        record = records(y, 2)
    else:
        p = jax.nn.softmax(score, axis=-1)
        target = jax.nn.one_hot(y, score.shape[-1], dtype=jnp.float32)
        record = records(y, score.shape[-1])[:, None]
    stats = jnp.where(record[..., None], jnp.stack([p - target, p * (1.0 - p)], axis=-1), 0.0)
    if private:
        return fixed_point.to_units(stats)
    return stats


def residual_stats(score: jax.Array, target: jax.Array, clip: ArrayLike,
                   private: bool) -> jax.Array:
    """Per-record ``(g, h)`` of the squared loss ``(F − z)²/2`` (regression) at ``score [m]``,
    ``[m, 2]``: the residual clipped to ``±c`` (the Huber loss of threshold ``c =
    residual_clip``, at least :data:`RESIDUAL_CLIP_FLOOR`, in units of the target's
    half-range) and divided by ``c``, so that ``|g| <= 1`` (a non-finite value counts 0), and
    the hessian 1 weighted by :data:`HESSIAN_WEIGHT`. The Newton move of a cell is then ``c``
    times :func:`newton_moves` of these sums with the hessian sums divided by the weight.
    Int32 ``floor(·2**GRAD_BITS)`` under DP (``h`` exactly ``w·2**GRAD_BITS`` units), float32
    otherwise."""
    clip = jnp.maximum(jnp.asarray(clip, jnp.float32), RESIDUAL_CLIP_FLOOR)
    gradient = jnp.clip(score - target, -clip, clip) / clip
    gradient = jnp.where(jnp.isfinite(gradient), jnp.clip(gradient, -1.0, 1.0), 0.0)
    stats = jnp.stack([gradient, jnp.full_like(gradient, HESSIAN_WEIGHT)], axis=-1)
    if private:
        return fixed_point.to_units(stats)
    return stats


def in_target_units(model: NewtonBoostedModel, target: tuple[float, float]
                    ) -> NewtonBoostedModel:
    """A regression model fitted on :func:`dpjax.data.target_units` with its moves and prior
    read back in the target's units (post-processing): ``F_y = centre + half·F_z``."""
    lo, hi = target
    half, centre = 0.5 * (hi - lo), 0.5 * (lo + hi)
    return NewtonBoostedModel(
        prior=centre + half * model.prior, table=half * model.table,
        trees=model.trees.replace(leaf=half * model.trees.leaf))


def release_moments(key: jax.Array, z: jax.Array, epsilon: jax.Array | None,
                    sensitivity: float = 1.0) -> tuple[jax.Array, Cost | None]:
    """The regression prior's release: the row count and the target's sum ``(m, Σ z_i)``
    (exact fixed point in units of ``2**−GRAD_BITS``: int32 up to
    :data:`dpjax.privacy.fixed_point.MAX_ROWS` rows, two limbs past it) with exact discrete
    Laplace noise, as float32 rows; exact without DP. L1 sensitivity 2 rows under either
    relation: adding or removing a record (``sensitivity`` 1) moves the count by exactly
    ``2**GRAD_BITS`` units and the sum by at most that (``|z| <= 1``); replacing one
    (``sensitivity`` 2) leaves the count and moves the sum by at most ``2·2**GRAD_BITS``.
    Both are within the public bound :data:`MOMENTS_BOUND`, whose grid is one row
    (``2**GRAD_BITS`` units) for ``ε >= 2**−19``: the count's move is then a whole grid step,
    so only the sum can cross one more boundary (``aligned``,
    :func:`dpjax.mechanisms.laplace.integer_grid`) and the integer sensitivity stays 2 rows
    (at a smaller ``ε`` the grid is 2 rows and both may cross one: 2 steps)."""
    m = z.shape[0]
    total = fixed_point.exact_segment_sum(fixed_point.to_units(z)[:, None],
                                          jnp.zeros(m, jnp.int32), 1)
    count = m * GRAD_UNIT                   # static: m is the shape
    if isinstance(total, WideSum):
        units = WideSum(jnp.stack([jnp.int32(count >> fixed_point.LIMB_BITS), total.hi[0, 0]]),
                        jnp.stack([jnp.int32(count % 2**fixed_point.LIMB_BITS),
                                   total.lo[0, 0]]))
        exact = (units.hi.astype(jnp.float32) * 2.0**fixed_point.LIMB_BITS
                 + units.lo.astype(jnp.float32))
    else:
        units = jnp.stack([jnp.int32(count), total[0, 0]])
        exact = units.astype(jnp.float32)
    if epsilon is None:
        return exact / GRAD_UNIT, None
    noisy, cost = laplace_mechanism(key, units, 2.0 * GRAD_UNIT, epsilon, bound=MOMENTS_BOUND,
                                    integer=True, touched=1 if sensitivity > 1.0 else 2,
                                    aligned=GRAD_UNIT, label="L1 sens. 2")
    return noisy / GRAD_UNIT, cost


def mean_prior(releases: list[tuple[jax.Array, ArrayLike]]) -> tuple[jax.Array, jax.Array]:
    """The regression prior ``F_0 = clip(S̃/ñ, −1, 1)`` (the noisy mean of ``z``) and the
    released size ``ñ`` (at least 1) from one or more :func:`release_moments` releases at
    budgets ``ε_k``, pooled by inverse variance (post-processing)."""
    size, total = pooled_counts(releases)
    size = jnp.maximum(size, 1.0)
    return jnp.clip(total / size, -1.0, 1.0), size


def newton_moves(noisy: jax.Array, ridge: ArrayLike, learning_rate: ArrayLike) -> jax.Array:
    """``w_c = −η·G_c / max(H_c + Λ, Λ)`` clipped to ``±STEP_CLIP`` from cell sums ``[C, 2]``
    (post-processing of the released sums)."""
    gradient, hessian = noisy[..., 0], noisy[..., 1]
    ridge = jnp.asarray(ridge, jnp.float32)
    move = -learning_rate * gradient / jnp.maximum(hessian + ridge, ridge)
    return jnp.clip(move, -STEP_CLIP, STEP_CLIP)


def merged_cells(codes: jax.Array, n_ordered: ArrayLike, resolution: ArrayLike) -> jax.Array:
    """A feature's cells at ``resolution``: its ``B = n_ordered`` ordered codes (equal-width
    bins ``0..B-1``) merged into ``K = min(resolution, B)`` runs of adjacent codes, ``c ->
    ⌊c·K/B⌋``, and its later codes (missing) kept apart after them, ``c -> c − B + K``; a
    feature without ordered codes (``B = 0``: categorical) keeps every code. Data-independent
    (a public function of public codes)."""
    n_ordered = jnp.asarray(n_ordered, jnp.int32)
    whole = jnp.maximum(n_ordered, 1)
    k = jnp.minimum(jnp.asarray(resolution).astype(jnp.int32), whole)
    merged = jnp.where(codes < whole, (codes * k) // whole, codes - whole + k)
    return jnp.where(n_ordered > 0, merged, codes)


def mean_cells(n_codes: np.ndarray, n_ordered: np.ndarray, resolution: ArrayLike) -> jax.Array:
    """The features' mean cell count with their ordered codes merged to ``resolution``
    (:func:`merged_cells`)."""
    n_codes, n_ordered = np.asarray(n_codes, np.float32), np.asarray(n_ordered, np.float32)
    kept = jnp.minimum(jnp.asarray(resolution, jnp.float32), n_ordered)
    return jnp.mean(n_codes - n_ordered + kept)


def resolution_cells(size: ArrayLike, scale: ArrayLike, cell_signal: ArrayLike,
                     most: int) -> jax.Array:
    """The public resolution of the ordered features: the most cells ``K`` of the dyadic
    ladder ``most, most/2, most/4, …`` (floored, at least 2) whose average cell ``ñ/K`` keeps
    ``cell_signal`` times the round's noise scale. Halving keeps every coarser run a union of
    finer ones (with ``most`` a power of two, as the default 32 bins, every boundary of a
    coarse resolution is one of the full resolution's, the middle included)."""
    fit = jnp.maximum(jnp.floor(jnp.asarray(size, jnp.float32) / (cell_signal * scale)), 1.0)
    most = float(max(most, 2))
    halvings = jnp.maximum(jnp.ceil(jnp.log2(most / fit)), 0.0)
    return jnp.maximum(jnp.floor(most / 2.0**halvings), 2.0)


def released_gain(noisy: jax.Array, ridge: ArrayLike, variance: ArrayLike) -> jax.Array:
    """A round's estimated loss reduction ``Σ_c (G̃_c² − v)/max(H̃_c + Λ, Λ)`` from its
    released cell sums ``[C, 2]``, less each sum's noise variance ``v`` (``E[G̃²] = G² + v``):
    post-processing that ranks the features for the focus passes."""
    gradient, hessian = noisy[..., 0], noisy[..., 1]
    ridge = jnp.asarray(ridge, jnp.float32)
    return jnp.sum((gradient**2 - variance) / jnp.maximum(hessian + ridge, ridge))


def release_counts(key: jax.Array, y: jax.Array, epsilon: jax.Array | None,
                   sensitivity: float, n_classes: int = 2
                   ) -> tuple[jax.Array, jax.Array, Cost | None]:
    """The (noisy) class counts ``(ñ_0, …, ñ_{K−1})`` (float32), their total and the cost; the
    counts' L1 sensitivity is ``sensitivity`` (one record is in one class)."""
    counts = class_totals(y, n_classes)
    cost = None
    if epsilon is not None:
        counts, cost = release_class_counts(key, counts, epsilon, sensitivity)
    counts = counts.astype(jnp.float32)
    return counts, counts.sum(), cost


def release_prior(key: jax.Array, target: jax.Array, epsilon: jax.Array | None,
                  sensitivity: float, n_classes: int) -> tuple[jax.Array, Cost | None]:
    """The prior's release: the class counts (:func:`release_counts`), or for regression
    (``n_classes = 1``) the row count and the target's sum (:func:`release_moments`)."""
    if n_classes == 1:
        return release_moments(key, target, epsilon, sensitivity)
    counts, _, cost = release_counts(key, target, epsilon, sensitivity, n_classes)
    return counts, cost


def prior_of(n_classes: int) -> Callable[[list[tuple[jax.Array, ArrayLike]]],
                                         tuple[jax.Array, jax.Array]]:
    """How released priors pool into ``(F_0, ñ)``: :func:`mean_prior` for regression
    (``n_classes = 1``), :func:`pooled_prior` for classes."""
    return mean_prior if n_classes == 1 else pooled_prior


def pooled_prior(releases: list[tuple[jax.Array, ArrayLike]]) -> tuple[jax.Array, jax.Array]:
    """``F_0 = log(ñ_1/ñ_0)`` (two classes; with ``K > 2`` the centred log counts ``[K]``,
    ``log ñ_k − mean_j log ñ_j``) and the released size ``ñ = Σ ñ_k`` from one or more noisy
    releases of the class counts at budgets ``ε_k``, pooled by inverse variance (weights
    ``ε_k²``; post-processing), each count floored at 1."""
    pooled = jnp.maximum(pooled_counts(releases), 1.0)
    if pooled.shape[0] == 2:
        return jnp.log(pooled[1] / pooled[0]), pooled.sum()
    logs = jnp.log(pooled)
    return logs - logs.mean(), pooled.sum()


def loss_spread(n_classes: int) -> float:
    """The most ``Σ_k |g_k| + Σ_k h_k`` of one record's ``(g, h)`` (in rows): ``1 + w`` for the
    clipped squared loss of regression (``n_classes = 1``, one output: ``|g| <= 1`` and the
    weighted hessian ``w`` = :data:`HESSIAN_WEIGHT`, :func:`residual_stats`), 1 for the
    logistic loss (``|p − y| + p(1 − p) <= 1``),
    ``3 − 1/(K − 1)`` for the softmax loss over ``K > 2`` classes: ``Σ|p_k − y_k| = 2(1 − p_y)``
    and ``Σ p_k(1 − p_k) = 1 − Σ p_k²``, largest at ``p_y = 0`` with the rest spread evenly
    over the other ``K − 1`` classes."""
    if n_classes == 1:
        return 1.0 + HESSIAN_WEIGHT
    return 1.0 if n_classes == 2 else 3.0 - 1.0 / (n_classes - 1)


def round_units(sensitivity: float, n_classes: int = 2) -> int:
    """A round's L1 sensitivity in fixed-point units: ``sensitivity`` times the spread
    (:func:`loss_spread`) of ``2**GRAD_BITS``-unit statistics, rounded up, plus one unit per
    floored statistic (``2K``, the logistic loss's 2, the squared loss's 1: its ``w·h`` is exact)
    and, with ``K > 2``, one unit for the float32 softmax (``Σ p_k`` within ``K·2**−23`` of
    1)."""
    if n_classes == 1:
        return int(round(sensitivity * (GRAD_UNIT + HESSIAN_WEIGHT * GRAD_UNIT + 1)))
    if n_classes == 2:
        return int(round(sensitivity * (GRAD_UNIT + 2)))
    units = math.ceil(loss_spread(n_classes) * GRAD_UNIT) + 2 * n_classes + 1
    return int(round(sensitivity * units))


def round_sensitivity(sensitivity: float, n_classes: int = 2) -> float:
    """A round's sensitivity in rows, L1 and L2 alike: ``sensitivity·(1 + 2**−(GRAD_BITS − 1))``
    (a record's ``(g, h)`` has both norms at most 1; the two fixed-point floors add at most 2
    units, :func:`release_sums`); with ``K > 2`` classes or for regression (``n_classes = 1``)
    the L1 sensitivity :func:`round_units` in rows (Laplace rounds only)."""
    return round_units(sensitivity, n_classes) / GRAD_UNIT


def sums_bound(size: ArrayLike) -> jax.Array:
    """The public bound of a round's cell sums (units) that sets a Laplace release's grid:
    ``2·ñ`` rows (``ñ`` the released size; a record's ``|g|, h <= 1``), so that the grid is 1
    unit up to ``ñ = 2**19`` rows and coarsens to keep every sum within the mechanism's
    ``2**28`` grid steps beyond (:func:`dpjax.mechanisms.laplace.integer_grid`): past
    :data:`dpjax.privacy.fixed_point.MAX_ROWS` rows the sums are wide
    (:func:`dpjax.privacy.fixed_point.exact_segment_sum`). Capped at ``2**44`` units (a grid of
    at most ``2**16`` units)."""
    return jnp.minimum(2.0 * jnp.maximum(jnp.asarray(size, jnp.float32), 1.0) * GRAD_UNIT,
                       2.0**44)


def release_sums(key: jax.Array, sums: jax.Array | WideSum, budget: jax.Array,
                 sensitivity: float, noise: str, delta: float, n_classes: int = 2,
                 bound: ArrayLike | None = None) -> tuple[jax.Array, Cost]:
    """One round's cell sums ``[C, 2]`` (``[C, K, 2]`` for ``n_classes = K > 2``; the squared
    loss's for ``n_classes = 1``; both Laplace only: L1 sensitivity :func:`round_units`)
    (int32 units of ``2**−GRAD_BITS``, or wide past
    :data:`dpjax.privacy.fixed_point.MAX_ROWS` rows) released as float
    ``(G̃, H̃)``. A record's floored ``(g, h)`` moves one cell by at most ``2**GRAD_BITS + 2``
    units in L1 and, as ``g² + h² <= 1`` (``max_p p²(1 + (1 − p)²) = 1``), by at most
    ``2**GRAD_BITS + √2`` in L2; times ``sensitivity`` (2 under replace-one).

    * ``"laplace"``: exact discrete Laplace on the integer sums at ``ε = budget``, on the grid
      that the public ``bound`` (:func:`sums_bound`) sets; a record changes the ``2K`` (2 with
      two classes or for regression) sums of one cell, and replacing one changes those of up
      to two cells, so on a grid coarser than a unit the integer sensitivity grows by
      ``touched − 1`` with ``touched = 2K`` (add/remove) or ``4K`` (replace-one,
      ``sensitivity`` 2; :func:`dpjax.mechanisms.laplace.integer_grid`), not by the cells'
      count;
    * ``"gaussian"``: the sums clipped to ``±GAUSSIAN_CELL_BOUND`` rows (exact in float32), the
      discrete Gaussian at ``ρ = budget`` with L2 sensitivity ``sensitivity·(1 + 2**−7)`` and
      the bound :func:`cell_bound`."""
    if noise == "gaussian":
        units = fixed_point.shift_clip(sums, 0, int(GAUSSIAN_CELL_BOUND) * GRAD_UNIT)
        l2 = round_sensitivity(sensitivity)
        return gaussian_mechanism(
            key, units.astype(jnp.float32) * (1.0 / GRAD_UNIT), l2, budget,
            bound=cell_bound(l2, budget), delta=delta,
            label=f"{sensitivity:g}·(1 + 2^-{GRAD_BITS - 1})")
    units = round_units(sensitivity, n_classes)
    label = {1: f"L1 sens. {units / GRAD_UNIT:.4g} (clipped residuals)",
             2: f"L1 sens. {sensitivity:g}·(1 + 2^-{GRAD_BITS - 1})"}.get(
        n_classes, f"L1 sens. {units / GRAD_UNIT:.4g} ({n_classes} classes)")
    shape = sums.hi.shape if isinstance(sums, WideSum) else sums.shape
    noisy, cost = laplace_mechanism(key, sums, units, budget, bound=bound, integer=True,
                                    event_ndim=len(shape),
                                    touched=math.ceil(sensitivity) * math.prod(shape[1:]),
                                    label=label)
    return noisy / GRAD_UNIT, cost


def cell_bound(l2_sensitivity: ArrayLike, rho: ArrayLike) -> jax.Array:
    """The public clip of a Gaussian round's cell sums: :data:`GAUSSIAN_CELL_BOUND`, or less
    where that would coarsen the grid beyond the noise (:func:`dpjax.mechanisms.gaussian.
    free_bound`, ``2**12`` noise standard deviations). A cell's moves are clipped to
    ``±STEP_CLIP`` anyway: only cells with sums beyond thousands of standard deviations lose
    accuracy, never privacy."""
    return jnp.minimum(GAUSSIAN_CELL_BOUND, free_bound(l2_sensitivity, rho))


def zeros_of(fn: Callable[..., Any], *args: Any) -> Any:
    """Zeros shaped as ``fn(*args)``'s outputs (a skipped branch of a ``lax.cond``), from its
    abstract evaluation: nothing is computed."""
    return jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), jax.eval_shape(fn, *args))


def split_round(budget: jax.Array, noise: str, share: ArrayLike,
                levels: int) -> tuple[jax.Array, jax.Array]:
    """An oblivious round's budget ``b`` (``ε_r``, or ``ρ_r`` for Gaussian rounds) split into
    its leaves' release, ``(1 − s)·b``, and each of its ``levels`` selections' ``ε_l``: pure
    ``s·ε_r/levels`` (basic composition), or ``sqrt(2·s·ρ_r/levels)`` (a pure ``ε_l`` draw is
    ``ε_l²/2``-zCDP). Both views of the round stay within ``b``: ``(1 − s)²ε_r²/2 + levels·
    (s·ε_r/levels)²/2 <= ε_r²/2``. Without levels (other shapes) the leaves take ``b``."""
    if levels == 0:
        return budget, jnp.zeros_like(budget)
    share = jnp.asarray(share, jnp.float32)
    if noise == "gaussian":
        select = jnp.sqrt(2.0 * share * budget / levels)
    else:
        select = share * budget / levels
    return round_down((1.0 - share) * budget), round_down(select)


def oblivious_shares(share: ArrayLike, levels: int) -> Shares:
    """An oblivious round's releases as shares of its pure budget (:func:`split_round`): the
    leaves' ``1 − s`` and ``levels`` draws of ``s/levels`` each (the optimal composition
    counts them apart, :mod:`dpjax.privacy.optimal`)."""
    share = jnp.asarray(share, jnp.float32)
    return ((1.0 - share, 1), (share / levels, levels))


def individual_losses(stats: jax.Array, leaves_epsilon: ArrayLike, level_epsilon: ArrayLike,
                      levels: int, bound: ArrayLike | None) -> jax.Array:
    """Each record's privacy loss in one round (add/remove), ``[m]``, from its integer
    contributions ``(g, h)`` (``[m, 2]`` fixed-point units), ``docs/individual_filter.md``:

    * the exact Laplace release of the ``[cells, 2]`` sums at ``ε_r`` (L1 sensitivity
      ``Δ = 2**GRAD_BITS + 2`` units) on its integer grid of step ``s`` and sensitivity
      ``Δ_s`` (:func:`dpjax.mechanisms.laplace.integer_grid` with the release's public
      ``bound``, :func:`sums_bound`, and its 2 touched coordinates: ``s = 1``, ``Δ_s = Δ``
      unless ``ε_r`` is tiny or the data large) costs it ``ε_r·(⌈|g|/s⌉ + ⌈|h|/s⌉)/Δ_s``:
      its own shift of its cell's two grid values, at the noise's rate per grid unit (at most
      ``ε_r/Δ_s``);
    * each of ``levels`` permute-and-flip draws at ``ε_l`` over utilities of sensitivity
      ``2**GRAD_BITS`` costs it ``ε_l·|g|/2**8 + σ`` where ``g ≠ 0`` (it moves every level gain
      by at most ``|g|``; ``σ`` the draw's float slack,
      :data:`dpjax.mechanisms.exponential.GAMMA_SLACK`)."""
    leaves_epsilon = jnp.asarray(leaves_epsilon, jnp.float32)
    _, step, sensitivity_int = integer_grid(round_sensitivity(1.0) * GRAD_UNIT, leaves_epsilon,
                                            2, bound)
    g = jnp.abs(stats[:, 0]).astype(jnp.float32)
    h = jnp.abs(stats[:, 1]).astype(jnp.float32)
    leaves = leaves_epsilon * (jnp.ceil(g / step) + jnp.ceil(h / step)) / sensitivity_int
    draws = levels * (jnp.asarray(level_epsilon, jnp.float32) * g / GRAD_UNIT
                      + jnp.where(g > 0, GAMMA_SLACK, 0.0))
    return leaves + jnp.where(jnp.asarray(level_epsilon) > 0, draws, 0.0)


def filter_records(stats: jax.Array, spent: jax.Array, cap: ArrayLike, leaves_epsilon: ArrayLike,
                   level_epsilon: ArrayLike, levels: int,
                   bound: ArrayLike | None) -> tuple[jax.Array, jax.Array]:
    """The individual filter (Feldman & Zrnic 2021, pure form): each record's contributions
    scaled by ``w = min(1, (cap − spent)/loss)`` and truncated towards zero (so ``|w·g|`` never
    grows), ``w = 0`` once its budget is spent, and the loss it then spends
    (:func:`individual_losses`), at most ``cap − spent``. Returns ``(stats, loss)``."""
    full = individual_losses(stats, leaves_epsilon, level_epsilon, levels, bound)
    left = jnp.maximum(jnp.asarray(cap, jnp.float32) - spent, 0.0)
    weight = jnp.where(full > left, left / jnp.maximum(full, 1e-30), 1.0)
    kept = jnp.trunc(weight[:, None] * stats.astype(jnp.float32)).astype(jnp.int32)
    loss = individual_losses(kept, leaves_epsilon, level_epsilon, levels, bound)
    # a loss that is not proportional (a coarse grid's ceilings, a draw's slack) may still
    # exceed what is left after scaling: such a record sits the round out
    over = loss > left
    return jnp.where(over[:, None], 0, kept), jnp.where(over, 0.0, loss)


def noise_scale(budget: jax.Array, sensitivity: float, noise: str, cells: int,
                n_classes: int = 2) -> jax.Array:
    """A round's noise scale per sum (in rows): the Laplace ``b = Δ/ε_r`` or the Gaussian's
    standard deviation ``σ = g·2**15`` on its grid step ``g``."""
    l1_or_l2 = round_sensitivity(sensitivity, n_classes)
    if noise == "gaussian":
        return NOISE_BITS_SCALE * gaussian_grid_step(l1_or_l2, budget, 2 * cells,
                                                     cell_bound(l1_or_l2, budget))
    return l1_or_l2 / budget


def check_multiclass(config: Boosted, private: bool, task: str = "more classes") -> None:
    """The softmax booster (``K > 2`` classes) and the regression booster (``task``
    ``"regression"``) boost Laplace rounds of the cyclic or random shape: refuse what they do
    not serve, before any work."""
    if config.shape == "oblivious":
        raise ValueError("shape='oblivious' boosts two classes only (its level draws score "
                         f"the logistic gradient); with {task} use shape='auto', 'cyclic' or "
                         "'random'")
    if config.individual > 1.0:
        raise ValueError("individual accounting (individual > 1) serves two classes only")
    if private and config.noise == "gaussian":
        raise ValueError(f"noise='gaussian' serves two classes only; with {task} the rounds "
                         "are Laplace (noise='laplace' or 'auto')")


def fit(config: Boosted, key: jax.Array, codes: jax.Array, y: jax.Array,
        epsilon: jax.Array | None, context: FitContext, **traced: ArrayLike,
        ) -> tuple[NewtonBoostedModel, collections.OrderedDict[str, Cost]]:
    """Fit the private Newton-boosted model (module docstring) of ``config``
    (:class:`~dpjax.ensembles.newton.Boosted`: ``shape``, ``n_trees``, ``depth`` of the random
    shape, ``prior_share``, ``noise``).

    Args:
      config: the configuration; its traced fields ``learning_rate`` (``η``),
        ``regularisation`` (``λ`` of the ridge ``Λ``) and ``min_signal`` (the schedule's
        constant, :func:`active_rounds`) are taken from ``traced`` where given.
      key: PRNG key: the prior's, the scout's, the rounds' (round ``r`` uses ``fold_in(k, r)``;
        with ``noise="auto"`` its Gaussian candidate ``fold_in(·, 1)`` of that, an oblivious
        tree's level draws ``fold_in(·, 2)`` of it) and, for the
        random shape, the structures' stream unless ``context.structure_key`` is given
        (shared by a sweep's grid points).
      codes: uint8 ``[m, n]``; y: int ``[m]`` in ``{0, 1}``.
      epsilon: total budget (traced), or ``None`` without privacy (exact sums, ``Λ = 1``).
      context: the codes per feature (cells of the cyclic shape), the multiplier of every
        release (``sensitivity``: 1 add/remove, 2 replace-one) and the ``δ`` asked for (``> 0``
        enables the optimal split; ``noise="gaussian"`` needs it).

    Returns:
      ``(model, costs)``: ``"prior (class counts)"`` (scalar; for regression ``"prior (row
      count and target sum)"``, and where no round is affordable the fallback's second
      release, :data:`MAJORITY_LABEL` or :data:`MEAN_LABEL`, zero when rounds ran), with
      ``noise="auto"`` at ``δ > 0`` ``"scout (class counts)"`` (scalar), and the rounds of
      each noise the fit may draw (:data:`ROUND_LABELS`; ``[max_rounds]``, zero past the
      active rounds and for the noise not taken), and where oblivious trees may be boosted
      the level draws
      (:data:`SELECT_LABEL`, ``[max_rounds, depth]``, zero where none was drawn); empty
      without DP.
    """
    traced = config.resolve_traced(traced)
    learning_rate, regularisation = traced["learning_rate"], traced["regularisation"]
    residual_clip = traced["residual_clip"]
    min_signal = traced["min_signal"]
    shape, n_trees, depth, noise = config.shape, config.n_trees, config.depth, config.noise
    n_features = codes.shape[1]
    passes, focus = config.passes, min(config.focus, n_features)
    prior_share, sensitivity, delta = config.prior_share, context.sensitivity, context.delta
    n_codes_per_feature, structure_key = context.n_codes_per_feature, context.structure_key
    private = epsilon is not None
    regression = context.target is not None     # the squared loss: one output
    n_classes = 1 if regression else context.n_classes
    multi = n_classes > 2           # the softmax loss: a class axis on scores and sums
    # the softmax and squared losses: Laplace rounds, and 0 rounds falls back to the prior
    fallback = multi or regression
    if fallback:
        check_multiclass(config, private, "regression" if regression else "more classes")
    spread = loss_spread(n_classes)
    target = y      # regression: z in [−1, 1] (dpjax.data.target_units), else class indices
    n_codes = int(max(int(c) for c in n_codes_per_feature))
    has_cyclic, has_random = shape in ("cyclic", "auto"), shape in ("random", "auto")
    oblivious = shape == "oblivious"
    has_oblivious = config.may_grow_oblivious(n_features) and not fallback
    oblivious_trees = config.oblivious_trees if has_oblivious else 0
    total = max_rounds(n_features, shape, n_trees, passes, focus, oblivious_trees)
    cyclic_most = cyclic_rounds(n_features, passes, focus)
    k_prior, k_rounds, k_structure, k_scout = jax.random.split(key, 4)
    structure_key = k_structure if structure_key is None else structure_key
    costs: collections.OrderedDict[str, Cost] = collections.OrderedDict()
    n_cells = max(n_codes if has_cyclic else 0,
                  2**depth if has_random or has_oblivious else 0)
    n_ordered = (np.zeros(n_features, np.int32) if context.n_ordered is None
                 else np.asarray(context.n_ordered, np.int32))
    max_ordered = max(int(n_ordered.max(initial=0)), 1)
    kinds = ("laplace",) if fallback else noise_kinds(noise, delta)
    filtered = private and config.individual > 1.0
    if filtered and sensitivity != 1.0:
        raise ValueError("individual accounting (individual > 1) bounds each record's loss "
                         "against the dataset without it: it needs neighbouring='add_remove'")
    # an individual filter's rounds: a pure schedule, κ times each round's sequential share
    boost = config.individual if filtered else 1.0
    schedule_delta = 0.0 if filtered else delta
    if private:
        # the prior's share in each route: pure share·ε, or (Gaussian rounds) share·ρ in zCDP
        fixed = {"laplace": round_down(prior_share * jnp.asarray(epsilon, jnp.float32)),
                 "gaussian": round_down(jnp.sqrt(2.0 * prior_share
                                                 * zcdp_budget(epsilon, delta)))}

        def plan(kind: str, size: jax.Array) -> dict[str, jax.Array]:
            """The schedule of ``kind`` noise at the released size: rounds, resolution,
            shape, round budget."""
            def budget_at(rounds: jax.Array, shares: Shares = WHOLE,
                          most: int = total) -> jax.Array:
                rounds = jnp.maximum(rounds, 1.0)     # 0 rounds (the fallback) spend none
                if kind == "gaussian":
                    return round_rho(epsilon, fixed[kind], rounds, delta)
                if filtered:
                    return round_down(boost * round_budget(
                        epsilon, fixed[kind], rounds, 0.0, "basic"))
                return round_budget(epsilon, fixed[kind], rounds, delta, config.composition,
                                    shares=shares, most=most)

            def rounds_at(cells: ArrayLike, most: int) -> jax.Array:
                # K > 2: each sum's noise is `spread` times the two-class one
                return active_rounds(epsilon, fixed[kind], size, cells, most,
                                     min_signal=min_signal * spread / boost,
                                     delta=schedule_delta, gaussian=kind == "gaussian",
                                     least=0.0 if fallback else 1.0)

            # one pass at the coarsest cells first (every ordered feature in two); then the
            # finest resolution whose average cell keeps cell_signal noise scales at that
            # pass's rounds (more Gaussian passes average their noise: the same resolution)
            coarsest = rounds_at(mean_cells(n_codes_per_feature, n_ordered, 2.0), n_features)
            resolution = resolution_cells(
                size, noise_scale(budget_at(coarsest), sensitivity, kind, n_cells, n_classes),
                traced["cell_signal"], max_ordered)
            cyclic = rounds_at(mean_cells(n_codes_per_feature, n_ordered, resolution),
                               cyclic_most if kind == "gaussian" else n_features)
            use_random = auto_uses_random(cyclic, n_features, shape)
            rounds = jnp.where(use_random, rounds_at(2.0**depth, n_trees), cyclic)
            use_oblivious = jnp.asarray(False)
            if has_oblivious:
                trees = oblivious_rounds(
                    epsilon, fixed[kind], size, depth, oblivious_trees,
                    share=traced["split_share"], min_signal=min_signal / boost,
                    delta=schedule_delta, gaussian=kind == "gaussian")
                use_oblivious = auto_uses_oblivious(trees, shape)
                rounds = jnp.where(use_oblivious, trees, rounds)
                use_random = use_random & ~use_oblivious
            whole = budget_at(rounds)
            if has_oblivious:   # a tree's round is its leaves' release and d level draws
                whole = jnp.where(use_oblivious, budget_at(
                    jnp.minimum(rounds, oblivious_trees),
                    oblivious_shares(traced["split_share"], depth), oblivious_trees), whole)
            leaves, select = split_round(whole, kind, traced["split_share"],
                                         depth if has_oblivious else 0)
            budget = jnp.where(use_oblivious, leaves, whole)
            return {"rounds": rounds, "resolution": resolution, "use_random": use_random,
                    "use_oblivious": use_oblivious, "budget": budget,
                    "scale": noise_scale(budget, sensitivity, kind, n_cells, n_classes),
                    "gaussian": jnp.asarray(kind == "gaussian"),
                    "select": jnp.where(use_oblivious, select, 0.0)}

        if len(kinds) == 2:     # "auto" at δ > 0: a scout count decides the route
            # at most half the prior's share in either route, so the prior keeps the rest
            scout_epsilon = round_down(jnp.minimum(
                SCOUT_SHARE * jnp.asarray(epsilon, jnp.float32),
                0.5 * jnp.minimum(fixed["laplace"], fixed["gaussian"])))
            scout, scout_size, costs[SCOUT_LABEL] = release_counts(
                k_scout, y, scout_epsilon, sensitivity)
            # the Gaussian only pays on large data: decide at a lower bound of the size (the
            # scout's total less SCOUT_MARGIN standard deviations of its Laplace noise)
            low_size = scout_size - SCOUT_MARGIN * 2.0 * sensitivity / scout_epsilon
            pick = gaussian_pays({kind: plan(kind, jnp.maximum(low_size, 1.0))
                                  for kind in kinds}, epsilon, fixed["gaussian"], delta,
                                 sensitivity, n_cells)
            # the prior takes the rest of its share in the route taken
            prior_epsilon = jnp.where(
                pick, round_down(jnp.sqrt(jnp.maximum(fixed["gaussian"]**2
                                                      - scout_epsilon**2, 0.0))),
                round_down(fixed["laplace"] - scout_epsilon))
            counts, _, costs[PRIOR_LABEL] = release_counts(k_prior, y, prior_epsilon,
                                                           sensitivity)
            prior, size = pooled_prior([(scout, scout_epsilon), (counts, prior_epsilon)])
        else:
            pick = jnp.asarray(kinds[0] == "gaussian")
            counts, costs[MEAN_PRIOR_LABEL if regression else PRIOR_LABEL] = release_prior(
                k_prior, target, fixed[kinds[0]], sensitivity, n_classes)
            prior, size = prior_of(n_classes)([(counts, fixed[kinds[0]])])
        plans = {kind: plan(kind, size) for kind in kinds}
        chosen = jax.tree.map(lambda g, p: jnp.where(pick, g, p), plans[kinds[-1]],
                              plans[kinds[0]])
        rounds, resolution, use_random = (chosen["rounds"], chosen["resolution"],
                                          chosen["use_random"])
        # the rounds' budget after the prior: the individual filter's, or the fallback's
        filter_budget = round_down(jnp.asarray(epsilon, jnp.float32) - fixed["laplace"])
        if fallback:    # no round affordable: the rounds' budget releases the prior again
            again, again_cost = release_prior(jax.random.fold_in(k_prior, 1), target,
                                              filter_budget, sensitivity, n_classes)
            costs[MEAN_LABEL if regression else MAJORITY_LABEL] = again_cost.gated(rounds < 1)
            prior = jnp.where(rounds < 1, prior_of(n_classes)(
                [(counts, fixed["laplace"]), (again, filter_budget)])[0], prior)
        use_oblivious = chosen["use_oblivious"]
        scale, select = chosen["scale"], chosen["select"]
        bound = sums_bound(size)
        ridge = 1.0 + jnp.asarray(regularisation, jnp.float32) * jnp.sqrt(rounds) * scale
        variance = scale**2 * jnp.where(chosen["gaussian"], 1.0, 2.0)
        # the individual filter: every record's rounds within what the prior leaves
        filter_cap = filter_budget * (1.0 - filter_margin(total, depth if has_oblivious else 0))
    else:   # without DP "auto" is cyclic
        counts, _ = release_prior(k_prior, target, None, sensitivity, n_classes)
        prior, _ = prior_of(n_classes)([(counts, 1.0)])
        use_random, use_oblivious = jnp.asarray(shape == "random"), jnp.asarray(oblivious)
        rounds = jnp.float32({"random": n_trees, "oblivious": oblivious_trees}.get(
            shape, cyclic_most))
        ridge, variance = jnp.float32(1.0), jnp.float32(0.0)
        resolution, select, bound = jnp.float32(max_ordered), None, None
    # data-independent structures: random trees, and a random order of the features (round
    # r of the cyclic shape visits feature order[r mod n])
    k_trees, k_order = jax.random.split(structure_key)
    feature, threshold = jax.vmap(random_splits, in_axes=(0, None, None))(
        jax.random.split(k_trees, n_trees if has_random else 1), depth, n_codes_per_feature)
    # a uniform order (ties of two 32-bit words aside): one PRNG kernel and a sort
    order = jnp.argsort(jax.random.bits(k_order, (n_features,), jnp.uint32)).astype(jnp.int32)

    columns = codes.T if has_cyclic else None   # [n, m]: a cyclic round reads one row
    ordered = jnp.asarray(n_ordered)

    def cyclic_cell(f: jax.Array, column: jax.Array) -> jax.Array:
        return merged_cells(column.astype(jnp.int32), ordered[f], resolution)

    def round_feature(r: jax.Array, gain: jax.Array) -> jax.Array:
        """Round ``r``'s feature (cyclic shape): ``order[r]`` in the first pass, then the
        ``focus`` features of largest released gain in turn (post-processing)."""
        top = jnp.argsort(-gain)[:focus]
        return jnp.where(r < n_features, order[jnp.minimum(r, n_features - 1)],
                         top[jnp.maximum(r - n_features, 0) % focus])

    def random_cell(r: jax.Array) -> jax.Array:
        tree = jnp.minimum(r, feature.shape[0] - 1)
        return leaf_index(feature[tree], threshold[tree], codes)

    def oblivious_cells(gradient: jax.Array, r: jax.Array) -> tuple[jax.Array, tuple]:
        """Round ``r``'s oblivious tree over the records' fixed-point gradients, its levels
        drawn with their own key (the round's key folded with 2, beside its two candidate
        releases): its cells and ``(feature, threshold, levels' ε)``."""
        k_select = jax.random.fold_in(jax.random.fold_in(k_rounds, r), 2)
        tree_feature, tree_threshold, cell, cost = grow_oblivious(
            k_select, codes, gradient, depth, n_codes_per_feature, select, sensitivity)
        return cell, (tree_feature, tree_threshold, cost.epsilon)

    def plain_cell(r: jax.Array, f: jax.Array) -> jax.Array:
        """A cyclic or random round's cells."""
        if has_random and has_cyclic:
            return jax.lax.cond(use_random, random_cell,
                                lambda _: cyclic_cell(f, columns[f]), r)
        return random_cell(r) if has_random else cyclic_cell(f, columns[f])

    def round_cells(gradient: jax.Array, r: jax.Array, f: jax.Array) -> tuple[jax.Array, ...]:
        """A round's cells and, with an oblivious tree (else zeros), its splits and the
        levels' selection budgets."""
        if not has_oblivious:
            return plain_cell(r, f), ()
        if oblivious:
            return oblivious_cells(gradient, r)

        def plain_branch(gradient: jax.Array, r: jax.Array) -> tuple[jax.Array, tuple]:
            return plain_cell(r, f), zeros_of(oblivious_cells, gradient, r)[1]

        return jax.lax.cond(use_oblivious, oblivious_cells, plain_branch, gradient, r)

    def round_stats(score: jax.Array, spent: jax.Array, r: jax.Array,
                    f: jax.Array) -> tuple[jax.Array, ...]:
        """A live round's cells, their gradient/hessian sums, each record's loss under the
        individual filter (:func:`filter_records`; else an empty array) and (oblivious
        trees) the tree and the levels' selection budgets."""
        stats = (residual_stats(score, target, residual_clip, private) if regression
                 else gradient_stats(score, y, private))
        loss = jnp.zeros((0,), jnp.float32)
        if filtered:
            stats, loss = filter_records(stats, spent, filter_cap, plans["laplace"]["budget"],
                                         select, depth if has_oblivious else 0, bound)
        gradient = None
        if has_oblivious:           # the level draws' utilities (two classes)
            gradient = stats[:, 0] if private else fixed_point.to_units(stats[:, 0])
        cell, split = round_cells(gradient, r, f)
        sums = (fixed_point.exact_segment_sum(stats, cell, n_cells) if private
                else jax.ops.segment_sum(stats, cell, n_cells))
        return (cell, sums, loss, *split)

    def dead_round(score: jax.Array, spent: jax.Array, r: jax.Array,
                   f: jax.Array) -> tuple[jax.Array, ...]:
        return zeros_of(round_stats, score, spent, r, f)

    def round_r(carry: tuple[jax.Array, jax.Array, jax.Array], r: jax.Array):
        score, gain, spent = carry
        live = r < rounds
        f = round_feature(r, gain)
        # past the public schedule a round releases nothing and moves nothing: skip its pass
        cell, sums, loss, *split = jax.lax.cond(live, round_stats, dead_round, score, spent,
                                                r, f)
        if private:
            # each candidate its own key (the second folded once more); one is output
            k_round = jax.random.fold_in(k_rounds, r)
            released = [release_sums(k_round if i == 0 else jax.random.fold_in(k_round, i),
                                     sums, plans[kind]["budget"], sensitivity, kind, delta,
                                     n_classes, bound)
                        for i, kind in enumerate(kinds)]
            if len(released) == 2:
                sums = jnp.where(pick, released[1][0], released[0][0])
                cost = (released[0][1].gated(live & ~pick), released[1][1].gated(live & pick))
            else:
                sums, cost = released[0][0], (released[0][1].gated(live),)
        else:
            cost = None
        if regression:  # the hessians were weighted, the residuals divided by their clip c
            sums = sums.at[..., 1].multiply(1.0 / HESSIAN_WEIGHT)
        move = jnp.where(live, newton_moves(sums, ridge, learning_rate), 0.0)
        if regression:
            move = residual_clip * move
        first_pass = live & (r < n_features)
        gain = jnp.where(first_pass, gain.at[f].set(released_gain(sums, ridge, variance)),
                         gain)
        code_move = move[cyclic_cell(f, jnp.arange(n_codes))] if has_cyclic else move
        return (score + move[cell], gain, spent + loss), (code_move, move, f, cost, split)

    start = (jnp.broadcast_to(prior, (codes.shape[0], *prior.shape)),
             jnp.full(n_features, -jnp.inf),
             jnp.zeros((codes.shape[0] if filtered else 0,), jnp.float32))
    _, (code_moves, moves, visited, round_costs, splits) = jax.lax.scan(round_r, start,
                                                                        jnp.arange(total))
    if filtered:    # every round and level draw is in the filter: one record's loss <= B
        # a round or draw whose budget is beyond its sampler (a NaN cost) is not releasable:
        # the NaN reaches the ledger, which refuses it, as the unfiltered costs do
        spent_costs = [c.epsilon for c in jax.tree.leaves(
            round_costs, is_leaf=lambda c: isinstance(c, Cost))] + (
            [splits[2]] if has_oblivious else [])
        unreleasable = jnp.any(jnp.stack([jnp.any(jnp.isnan(c)) for c in spent_costs]))
        costs[FILTER_LABEL] = Cost(jnp.where(unreleasable, jnp.nan, filter_budget),
                                   jnp.float32(0.0),
                                   f"individual filter (rounds at {config.individual:g}x their "
                                   "share; each record's loss <= its budget)")
    elif private:
        if has_oblivious:   # [rounds, depth] pure draws (zero past the schedule, elsewhere)
            costs[SELECT_LABEL] = Cost(splits[2], jnp.zeros_like(splits[2]),
                                       f"permute-and-flip (level gain, sens. {sensitivity:g})")
        for kind, kind_costs in zip(kinds, round_costs, strict=True):
            costs[ROUND_LABELS[kind]] = kind_costs
    classes_axis = (n_classes,) if multi else ()
    table = jnp.zeros((n_features, n_codes, *classes_axis), jnp.float32)
    if has_cyclic:
        table = jnp.where(use_random | use_oblivious, table,
                          jax.ops.segment_sum(code_moves, visited, n_features))
    if oblivious:
        trees = DenseTree(feature=splits[0], threshold=splits[1], leaf=moves[:, :2**depth])
    elif has_random:
        leaf = jnp.where(use_random, moves[:n_trees, :2**depth], 0.0)
        trees = DenseTree(feature=feature, threshold=threshold, leaf=leaf)
        if has_oblivious:   # "auto" on many features: the oblivious trees where taken
            k = max(n_trees, oblivious_trees)
            trees = jax.tree.map(
                lambda o, t: jnp.where(use_oblivious, o, jnp.pad(
                    t, [(0, k - t.shape[0])] + [(0, 0)] * (t.ndim - 1))),
                DenseTree(feature=splits[0][:k], threshold=splits[1][:k],
                          leaf=jnp.where(use_oblivious, moves[:k, :2**depth], 0.0)), trees)
    else:
        trees = DenseTree(feature=jnp.zeros((1, 1), jnp.int32),
                          threshold=jnp.zeros((1, 1), jnp.int32),
                          leaf=jnp.zeros((1, 2, *classes_axis)))
    model = NewtonBoostedModel(prior=prior, table=table, trees=trees)
    return (in_target_units(model, context.target) if regression else model), costs


__all__ = ["NOISES", "SHAPES", "active_rounds", "auto_uses_random", "cell_bound",
           "check_multiclass", "cyclic_rounds", "fit", "gaussian_pays", "gradient_stats",
           "in_target_units", "loss_spread", "max_rounds", "mean_cells", "mean_prior",
           "merged_cells", "newton_moves", "noise_kinds", "noise_scale",
           "pooled_prior", "release_counts", "release_moments", "release_prior", "release_sums",
           "released_gain", "residual_stats", "resolution_cells", "round_sensitivity",
           "round_units"]
