"""Private Newton boosting's rounds (``docs/design.md``, "Plan, then step"): a pure
:func:`round_step` over an explicit :class:`RoundState`, folded by ``lax.scan`` (:func:`grow`).

Each round is a partition of the records into cells read off public codes (a feature's codes,
merged to the schedule's resolution; a random tree's leaves; a private oblivious tree's
leaves), whose gradient and hessian sums of the loss at the current score are released
(:func:`~dpjax.ensembles.newton.releases.release_sums`), and each cell's score moves by its
noise-shrunk Newton step (:func:`newton_moves`). The plan (:class:`~dpjax.ensembles.newton.
schedule.Plan`) fixes the shape and the noise before the program: a round of a settled plan
holds that shape's work alone; a pure fit's plan leaves them to the schedule, by
``lax.cond``.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.ensembles.newton.individual import FILTER_LABEL, filter_margin, filter_records
from dpjax.ensembles.newton.model import NewtonBoostedModel
from dpjax.ensembles.newton.releases import (
    HESSIAN_WEIGHT,
    ROUND_LABELS,
    SELECT_LABEL,
    release_sums,
)
from dpjax.ensembles.newton.schedule import Frame, Plan, Schedule
from dpjax.learner import records
from dpjax.privacy import Cost, fixed_point
from dpjax.trees.dense import DenseTree
from dpjax.trees.grow import random_splits
from dpjax.trees.oblivious import grow_oblivious
from dpjax.trees.predict import leaf_index

STEP_CLIP = 2.0
"""A round moves a cell's score (log-odds) by at most this much."""
RESIDUAL_CLIP_FLOOR = 2.0**-10
"""The least ``residual_clip``: a smaller one would flush the divided residuals to zero."""


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


def released_gain(noisy: jax.Array, ridge: ArrayLike, variance: ArrayLike) -> jax.Array:
    """A round's estimated loss reduction ``Σ_c (G̃_c² − v)/max(H̃_c + Λ, Λ)`` from its
    released cell sums ``[C, 2]``, less each sum's noise variance ``v`` (``E[G̃²] = G² + v``):
    post-processing that ranks the features for the focus passes."""
    gradient, hessian = noisy[..., 0], noisy[..., 1]
    ridge = jnp.asarray(ridge, jnp.float32)
    return jnp.sum((gradient**2 - variance) / jnp.maximum(hessian + ridge, ridge))


def zeros_of(fn: Callable[..., Any], *args: Any) -> Any:
    """Zeros shaped as ``fn(*args)``'s outputs (a skipped branch of a ``lax.cond``), from its
    abstract evaluation: nothing is computed."""
    return jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), jax.eval_shape(fn, *args))


class RoundState(NamedTuple):
    """What a round hands the next: each record's score (``[m]``, ``[m, K]``), the first
    pass's released gain of each feature (``[n]``, the cyclic shape's focus passes) and each
    record's spent loss under the individual filter (``[m]``, else ``[0]``)."""

    score: jax.Array
    gain: jax.Array
    spent: jax.Array


@dataclasses.dataclass(frozen=True)
class Rounds:
    """What every round of one fit reads (a pytree: the frame and the plan are static): the
    codes (and their transpose for the cyclic shape), the labels or targets, the released
    schedule, the data-independent structures (random trees' ``feature`` / ``threshold``
    ``[trees, 2**d − 1]``, the cyclic shape's feature ``order``), the rounds' key and the
    traced ``learning_rate`` and ``residual_clip``."""

    frame: Frame
    plan: Plan
    codes: jax.Array
    columns: jax.Array | None
    y: jax.Array
    schedule: Schedule
    feature: jax.Array
    threshold: jax.Array
    order: jax.Array
    k_rounds: jax.Array
    learning_rate: jax.Array
    residual_clip: jax.Array

    def takes(self, shape: str) -> bool:
        """Whether a round of this plan may take ``shape``."""
        return self.plan.shape == shape or (self.plan.shape is None
                                            and shape in self.frame.shapes)


jax.tree_util.register_dataclass(
    Rounds, data_fields=["codes", "columns", "y", "schedule", "feature", "threshold", "order",
                         "k_rounds", "learning_rate", "residual_clip"],
    meta_fields=["frame", "plan"])


def round_feature(rounds: Rounds, r: jax.Array, gain: jax.Array) -> jax.Array:
    """Round ``r``'s feature (cyclic shape): ``order[r]`` in the first pass, then the
    ``focus`` features of largest released gain in turn (post-processing)."""
    n, focus = rounds.frame.n_features, rounds.frame.focus
    top = jnp.argsort(-gain)[:focus]
    return jnp.where(r < n, rounds.order[jnp.minimum(r, n - 1)],
                     top[jnp.maximum(r - n, 0) % focus])


def cyclic_cell(rounds: Rounds, f: jax.Array, column: jax.Array) -> jax.Array:
    """The cells of feature ``f``'s codes ``column`` at the schedule's resolution."""
    ordered = jnp.asarray(rounds.frame.n_ordered, jnp.int32)
    return merged_cells(column.astype(jnp.int32), ordered[f], rounds.schedule.resolution)


def random_cell(rounds: Rounds, r: jax.Array) -> jax.Array:
    """Round ``r``'s cells: the leaves of random tree ``r``."""
    tree = jnp.minimum(r, rounds.feature.shape[0] - 1)
    return leaf_index(rounds.feature[tree], rounds.threshold[tree], rounds.codes)


def oblivious_cells(rounds: Rounds, gradient: jax.Array, r: jax.Array
                    ) -> tuple[jax.Array, tuple]:
    """Round ``r``'s oblivious tree over the records' fixed-point gradients, its levels
    drawn with their own key (the round's key folded with 2, beside its two candidate
    releases): its cells and ``(feature, threshold, levels' ε)``."""
    frame = rounds.frame
    k_select = jax.random.fold_in(jax.random.fold_in(rounds.k_rounds, r), 2)
    tree_feature, tree_threshold, cell, cost = grow_oblivious(
        k_select, rounds.codes, gradient, frame.config.depth, frame.n_codes_per_feature,
        rounds.schedule.select, frame.sensitivity)
    return cell, (tree_feature, tree_threshold, cost.epsilon)


def plain_cell(rounds: Rounds, r: jax.Array, f: jax.Array) -> jax.Array:
    """A cyclic or random round's cells (by ``lax.cond`` on the schedule where the plan
    leaves both open)."""
    def cyclic(_: jax.Array) -> jax.Array:
        return cyclic_cell(rounds, f, rounds.columns[f])

    if rounds.takes("random") and rounds.takes("cyclic"):
        return jax.lax.cond(rounds.schedule.use_random, lambda r: random_cell(rounds, r),
                            cyclic, r)
    return random_cell(rounds, r) if rounds.takes("random") else cyclic(r)


def round_cells(rounds: Rounds, gradient: jax.Array | None, r: jax.Array,
                f: jax.Array) -> tuple[jax.Array, tuple]:
    """A round's cells and, where oblivious trees may grow (else ``()``), its tree's splits
    and the levels' selection budgets (zeros for a cyclic or random round)."""
    if not rounds.frame.has_oblivious:
        return plain_cell(rounds, r, f), ()
    if rounds.plan.shape == "oblivious":
        return oblivious_cells(rounds, gradient, r)

    def plain_branch(gradient: jax.Array, r: jax.Array) -> tuple[jax.Array, tuple]:
        return plain_cell(rounds, r, f), zeros_of(oblivious_cells, rounds, gradient, r)[1]

    if rounds.plan.shape is not None:
        return plain_branch(gradient, r)
    return jax.lax.cond(rounds.schedule.use_oblivious,
                        lambda g, r: oblivious_cells(rounds, g, r), plain_branch, gradient, r)


def release_round(rounds: Rounds, sums: Any, r: jax.Array) -> tuple[jax.Array, tuple]:
    """Round ``r``'s cell sums released with the plan's noise, and one cost per noise the
    frame may draw (zero for the noise not taken). Each candidate has its own key: the round's
    ``fold_in(k_rounds, r)``, the second noise's that key folded with 1; a plan that leaves the
    noise open releases both and keeps the schedule's."""
    frame, schedule = rounds.frame, rounds.schedule
    k_round = jax.random.fold_in(rounds.k_rounds, r)

    def release(i: int, kind: str) -> tuple[jax.Array, Cost]:
        return release_sums(k_round if i == 0 else jax.random.fold_in(k_round, i), sums,
                            schedule.budgets[i], frame.sensitivity, kind, frame.delta,
                            frame.n_classes, schedule.bound)

    kinds = frame.kinds
    if rounds.plan.noise is not None:
        taken = kinds.index(rounds.plan.noise)
        noisy, cost = release(taken, rounds.plan.noise)
        return noisy, tuple(cost if i == taken else zeros_of(functools.partial(
            release, i, kind))[1] for i, kind in enumerate(kinds))
    released = [release(i, kind) for i, kind in enumerate(kinds)]
    if len(released) == 1:
        return released[0][0], (released[0][1],)
    pick = schedule.gaussian
    return (jnp.where(pick, released[1][0], released[0][0]),
            (released[0][1].gated(~pick), released[1][1].gated(pick)))


def live_round(rounds: Rounds, score: jax.Array, spent: jax.Array, r: jax.Array,
               f: jax.Array) -> tuple[Any, ...]:
    """A live round: its cells, their released gradient/hessian sums (exact sums without
    DP) and their costs, each record's loss under the individual filter
    (:func:`~dpjax.ensembles.newton.individual.filter_records`; else an empty array) and
    (oblivious trees) the tree and the levels' selection budgets."""
    frame, schedule = rounds.frame, rounds.schedule
    private = frame.private
    stats = (residual_stats(score, rounds.y, rounds.residual_clip, private) if frame.regression
             else gradient_stats(score, rounds.y, private))
    loss = jnp.zeros((0,), jnp.float32)
    if frame.filtered:    # every record's rounds within what the prior leaves
        cap = schedule.filter_budget * (1.0 - filter_margin(frame.total, frame.levels))
        stats, loss = filter_records(stats, spent, cap, schedule.budgets[0], schedule.select,
                                     frame.levels, schedule.bound)
    gradient = None
    if frame.has_oblivious:           # the level draws' utilities (two classes)
        gradient = stats[:, 0] if private else fixed_point.to_units(stats[:, 0])
    cell, split = round_cells(rounds, gradient, r, f)
    if private:
        sums, cost = release_round(rounds, fixed_point.exact_segment_sum(stats, cell,
                                                                         frame.n_cells), r)
    else:
        sums, cost = fixed_point.segment_sum(stats, cell, frame.n_cells), None
    return (cell, sums, cost, loss, *split)


def round_step(rounds: Rounds, state: RoundState, r: jax.Array
               ) -> tuple[RoundState, tuple[Any, ...]]:
    """Round ``r`` (``docs/design.md``, "Plan, then step"): past the schedule's ``R`` it
    releases nothing and moves nothing (its pass is skipped by ``lax.cond``, or computed and
    masked in a vectorised plan's program, :attr:`~dpjax.ensembles.newton.schedule.Plan.
    masked`);
    a live round releases its cells' sums and moves each cell's score by its Newton step.
    Returns the next state and the round's ``(code moves, cell moves, feature, costs,
    oblivious splits)``."""
    frame, schedule = rounds.frame, rounds.schedule
    live = r < schedule.rounds
    cyclic = frame.has_cyclic and rounds.takes("cyclic")
    f = round_feature(rounds, r, state.gain) if cyclic else jnp.int32(0)

    if rounds.plan.masked:       # vectorised: every model's round computed, dead ones zeroed
        outputs = live_round(rounds, state.score, state.spent, r, f)
        outputs = jax.tree.map(lambda a: jnp.where(live, a, jnp.zeros_like(a)), outputs)
    else:
        def dead_round(score: jax.Array, spent: jax.Array, r: jax.Array,
                       f: jax.Array) -> tuple[Any, ...]:
            return zeros_of(live_round, rounds, score, spent, r, f)

        outputs = jax.lax.cond(live, lambda *a: live_round(rounds, *a), dead_round,
                               state.score, state.spent, r, f)
    cell, sums, cost, loss, *split = outputs
    if frame.regression:  # the hessians were weighted, the residuals divided by their clip c
        sums = sums.at[..., 1].multiply(1.0 / HESSIAN_WEIGHT)
    move = jnp.where(live, newton_moves(sums, schedule.ridge, rounds.learning_rate), 0.0)
    if frame.regression:
        move = rounds.residual_clip * move
    gain = state.gain
    if cyclic:
        first_pass = live & (r < frame.n_features)
        gain = jnp.where(first_pass,
                         gain.at[f].set(released_gain(sums, schedule.ridge, schedule.variance)),
                         gain)
    code_move = (move[cyclic_cell(rounds, f, jnp.arange(frame.n_codes))] if frame.has_cyclic
                 else move)
    return (RoundState(state.score + move[cell], gain, state.spent + loss),
            (code_move, move, f, cost, split))


def structures(frame: Frame, structure_key: jax.Array) -> tuple[jax.Array, ...]:
    """The data-independent structures of ``structure_key``: the random shape's trees
    (``feature``, ``threshold`` ``[trees, 2**d − 1]``; one where the shape cannot be random)
    and a uniform random order of the features (ties of two 32-bit words aside: one PRNG
    kernel and a sort; round ``r`` of the cyclic shape visits ``order[r mod n]``)."""
    config = frame.config
    k_trees, k_order = jax.random.split(structure_key)
    feature, threshold = jax.vmap(random_splits, in_axes=(0, None, None))(
        jax.random.split(k_trees, config.n_trees if frame.has_random else 1), config.depth,
        np.asarray(frame.n_codes_per_feature))
    order = jnp.argsort(jax.random.bits(k_order, (frame.n_features,), jnp.uint32))
    return feature, threshold, order.astype(jnp.int32)


def padded(tree: Any, rounds: int) -> Any:
    """``tree``'s leaves (leading axis: rounds) padded with zero rounds up to ``rounds``."""
    return jax.tree.map(lambda a: jnp.pad(a, [(0, rounds - a.shape[0])]
                                          + [(0, 0)] * (a.ndim - 1)), tree)


def grow(frame: Frame, plan: Plan, key: jax.Array, codes: jax.Array, y: jax.Array,
         schedule: Schedule, structure_key: jax.Array | None,
         traced: dict[str, jax.Array]) -> tuple[NewtonBoostedModel, collections.OrderedDict]:
    """The rounds of one model under ``plan``, after its :func:`~dpjax.ensembles.newton.
    schedule.schedule`: ``plan.rounds`` steps (:func:`round_step`) folded by ``lax.scan``
    from the released prior, then the model read off the rounds' moves (the cyclic shape's
    table of per-code moves, the random or oblivious trees' leaf moves).

    Args:
      frame: the fit's static facts; plan: its shape and noise (``None``: decided per round
        by ``lax.cond`` on the schedule).
      key: the fit's key (its ``k_rounds``: round ``r`` uses ``fold_in(k_rounds, r)``, with
        ``noise="auto"`` its Gaussian candidate ``fold_in(·, 1)`` of that, an oblivious tree's
        level draws ``fold_in(·, 2)``; ``k_structure`` unless ``structure_key`` is given).
      codes: uint8 ``[m, n]``; y: the class indices (a regression's target in ``[−1, 1]``).
      traced: the traced hyper-parameters (``learning_rate``, ``residual_clip``).

    Returns:
      ``(model, costs)``: the costs of the rounds (:data:`ROUND_LABELS`, ``[total]``) and
      level draws (:data:`SELECT_LABEL`, ``[total, depth]``) or of the individual filter
      (:data:`FILTER_LABEL`); empty without DP. Every cost and output has the frame's layout
      (``total`` rounds), whatever the plan.
    """
    config = frame.config
    depth, n_trees, total = config.depth, config.n_trees, frame.total
    _, k_rounds, k_structure, _ = jax.random.split(key, 4)
    feature, threshold, order = structures(
        frame, k_structure if structure_key is None else structure_key)
    cyclic = frame.has_cyclic and plan.shape in (None, "cyclic")
    rounds = Rounds(frame, plan, codes, codes.T if cyclic else None, y, schedule, feature,
                    threshold, order, k_rounds, traced["learning_rate"], traced["residual_clip"])
    m = codes.shape[0]
    start = RoundState(jnp.broadcast_to(schedule.prior, (m, *schedule.prior.shape)),
                       jnp.full(frame.n_features, -jnp.inf),
                       jnp.zeros((m if frame.filtered else 0,), jnp.float32))
    _, outputs = jax.lax.scan(functools.partial(round_step, rounds), start,
                              jnp.arange(plan.rounds))
    code_moves, moves, visited, round_costs, splits = padded(outputs, total)
    costs: collections.OrderedDict[str, Cost] = collections.OrderedDict()
    if frame.filtered:    # every round and level draw is in the filter: one record's loss <= B
        # a round or draw whose budget is beyond its sampler (a NaN cost) is not releasable:
        # the NaN reaches the ledger, which refuses it, as the unfiltered costs do
        spent_costs = [c.epsilon for c in jax.tree.leaves(
            round_costs, is_leaf=lambda c: isinstance(c, Cost))] + (
            [splits[2]] if frame.has_oblivious else [])
        unreleasable = jnp.any(jnp.stack([jnp.any(jnp.isnan(c)) for c in spent_costs]))
        costs[FILTER_LABEL] = Cost(jnp.where(unreleasable, jnp.nan, schedule.filter_budget),
                                   jnp.float32(0.0),
                                   f"individual filter (rounds at {config.individual:g}x their "
                                   "share; each record's loss <= its budget)")
    elif frame.private:
        if frame.has_oblivious:   # [rounds, depth] pure draws (zero past the schedule, elsewhere)
            costs[SELECT_LABEL] = Cost(splits[2], jnp.zeros_like(splits[2]),
                                       f"permute-and-flip (level gain, sens. "
                                       f"{frame.sensitivity:g})")
        for kind, kind_costs in zip(frame.kinds, round_costs, strict=True):
            costs[ROUND_LABELS[kind]] = kind_costs
    use_random = schedule.use_random if plan.shape is None else plan.shape == "random"
    use_oblivious = (schedule.use_oblivious if plan.shape is None
                     else plan.shape == "oblivious")
    classes_axis = (frame.n_classes,) if frame.multi else ()
    table = jnp.zeros((frame.n_features, frame.n_codes, *classes_axis), jnp.float32)
    if frame.has_cyclic:
        table = jnp.where(use_random | use_oblivious, table,
                          fixed_point.segment_sum(code_moves, visited, frame.n_features))
    if config.shape == "oblivious":
        trees = DenseTree(feature=splits[0], threshold=splits[1], leaf=moves[:, :2**depth])
    elif frame.has_random:
        leaf = jnp.where(use_random, moves[:n_trees, :2**depth], 0.0)
        trees = DenseTree(feature=feature, threshold=threshold, leaf=leaf)
        if frame.has_oblivious:   # "auto": the oblivious trees where taken
            k = max(n_trees, frame.oblivious_trees)
            trees = jax.tree.map(
                lambda o, t: jnp.where(use_oblivious, o, jnp.pad(
                    t, [(0, k - t.shape[0])] + [(0, 0)] * (t.ndim - 1))),
                DenseTree(feature=splits[0][:k], threshold=splits[1][:k],
                          leaf=jnp.where(use_oblivious, moves[:k, :2**depth], 0.0)), trees)
    else:
        trees = DenseTree(feature=jnp.zeros((1, 1), jnp.int32),
                          threshold=jnp.zeros((1, 1), jnp.int32),
                          leaf=jnp.zeros((1, 2, *classes_axis)))
    model = NewtonBoostedModel(prior=schedule.prior, table=table, trees=trees)
    return (in_target_units(model, frame.target) if frame.regression else model), costs
