"""Level-wise growth of dense trees: greedy, oblivious and random structures.

* **random** (Bojarski et al., `shared/specs/dp-random-decision-trees.md` §1.2): every node's
  feature is uniform over the features and its threshold uniform over the feature's codes, from
  the key alone. No data is read, so the structure costs no privacy.
* **greedy**: every node of a level picks its own split from the scores of all candidate splits.
* **oblivious**: one split per level, shared by all its nodes (scores summed over nodes).

Greedy and oblivious growth take a ``split_score`` (candidate statistics -> score, higher is
better) and a ``select`` rule (key, scores -> index), or one rule per level: ``argmax`` without
privacy, or a private selection (:func:`dpjax.mechanisms.permute_and_flip`) with privacy, whose
per-node budget may depend on the level (Mα trees, eq. (18)); the caller owns the budget and
keeps the cost each selection reports.

Non-private greedy growth can *freeze* nodes (``stop_pure``, ``shared/specs/
boosted-dp-trees-malpha.md`` §2.3, §8): a frozen node keeps the complete-array layout with a split
that sends every example left (threshold = its feature's last code), so its left child carries
its statistics and predictions are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from dpjax.trees.dense import empty_splits, level_slice
from dpjax.trees.histogram import node_histogram, split_stats, valid_thresholds
from dpjax.trees.predict import step

SplitScore = Callable[[jax.Array, jax.Array], jax.Array]
Select = Callable[[jax.Array, jax.Array], jax.Array]
Choose = Callable[[int, jax.Array, jax.Array, jax.Array, jax.Array], jax.Array]
THRESHOLD_RANGES = ("global", "cell")


def argmax_select(key: jax.Array, scores: jax.Array) -> jax.Array:
    """Non-private selection: the best candidate along the last axis (``key`` unused)."""
    del key
    return jnp.argmax(scores, axis=-1).astype(jnp.int32)


def random_splits(
    key: jax.Array, depth: int, n_codes_per_feature: jax.Array, threshold_range: str = "global"
) -> tuple[jax.Array, jax.Array]:
    """Data-independent splits of one tree (spec §1.2, §7, A4).

    ``"global"`` (the paper): feature ~ Uniform{0..n-1} with replacement, threshold ~
    Uniform{0..n_codes_f - 2}, the coded analogue of a threshold uniform in the public range
    ``[min, max]``. ``"cell"`` [not in paper, A4]: each node draws its feature among those its
    cell can still split and its threshold uniformly inside the cell's code range, so no child
    is empty by construction; still drawn from the key alone.
    """
    n_codes_per_feature = jnp.asarray(n_codes_per_feature, jnp.int32)
    if threshold_range not in THRESHOLD_RANGES:
        raise ValueError(f"threshold_range must be one of {THRESHOLD_RANGES}, "
                         f"got {threshold_range!r}")
    n = n_codes_per_feature.shape[0]
    k_feature, k_threshold = jax.random.split(key)
    # All randomness in two draws (one PRNG kernel each, whatever the depth).
    uniform = jax.random.uniform(k_threshold, (2**depth - 1,))
    if threshold_range == "global":
        feature = jax.random.randint(k_feature, (2**depth - 1,), 0, n, dtype=jnp.int32)
        return feature, _uniform_code(uniform, 0, jnp.maximum(n_codes_per_feature[feature], 2) - 1)
    # "cell": a Gumbel row per node picks its feature uniformly among the splittable ones.
    gumbel = jax.random.gumbel(k_feature, (2**depth - 1, n))
    feature, threshold = empty_splits(depth)
    low = jnp.zeros((1, n), jnp.int32)
    high = (n_codes_per_feature - 1)[None, :]
    for level in range(depth):
        nodes = level_slice(level)
        splittable = high > low
        allowed = splittable | ~splittable.any(-1, keepdims=True)
        level_feature = jnp.where(allowed, gumbel[nodes], -jnp.inf).argmax(-1).astype(jnp.int32)
        lo = jnp.take_along_axis(low, level_feature[:, None], 1)[:, 0]
        hi = jnp.take_along_axis(high, level_feature[:, None], 1)[:, 0]
        level_threshold = _uniform_code(uniform[nodes], lo, jnp.maximum(hi, lo + 1))
        feature = feature.at[nodes].set(level_feature)
        threshold = threshold.at[nodes].set(level_threshold)
        chosen = jax.nn.one_hot(level_feature, n, dtype=bool)
        left_high = jnp.where(chosen, level_threshold[:, None], high)
        right_low = jnp.where(chosen, jnp.minimum(level_threshold[:, None] + 1, high), low)
        low = jnp.stack([low, right_low], 1).reshape(-1, n)
        high = jnp.stack([left_high, high], 1).reshape(-1, n)
    return feature, threshold


def _uniform_code(uniform: jax.Array, low: jax.Array, high: jax.Array) -> jax.Array:
    """Threshold uniform on ``{low, ..., high - 1}`` from ``uniform ~ U[0, 1)``."""
    count = high - low
    return (low + jnp.minimum(jnp.floor(uniform * count).astype(jnp.int32), count - 1)).astype(
        jnp.int32)


def grow_levelwise(
    key: jax.Array,
    codes: jax.Array,
    stats: jax.Array,
    depth: int,
    n_codes_per_feature: jax.Array,
    *,
    split_score: SplitScore | None = None,
    select: Select | Sequence[Select] = argmax_select,
    choose: Choose | None = None,
    oblivious: bool = False,
    stop_pure: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Grow one tree level by level from the examples' statistics.

    Args:
      key: PRNG key (one subkey per level is passed to ``select``).
      codes: uint8 ``[m, n]``.
      stats: ``[m, S]`` per-example statistics (e.g. weighted class one-hots).
      depth: static depth ``d``.
      n_codes_per_feature: concrete int ``[n]`` codes of each feature (static: it sets the
        histogram width; thresholds past a feature's codes are masked).
      split_score: ``(left, right) -> scores`` on ``[nodes, n, n_codes, S]`` statistics,
        returning ``[nodes, n, n_codes]``.
      select: ``(key, scores[..., n * n_codes]) -> index[...]``, or a sequence of ``depth``
        such rules, ``select[k]`` for level ``k`` (e.g. a per-level privacy budget).
      choose: instead of ``split_score`` and ``select``, a rule that sees a whole level at once:
        ``(level, key, left, right, candidates) -> choice [nodes]`` (flat ``feature * n_codes +
        threshold`` indices) for rules whose score or selection depends on the level's
        statistics (e.g. the objective-calibrated α of the Mα trees, §5).
      oblivious: one split per level (scores summed over the level's nodes).
      stop_pure: non-private greedy stopping (Mα spec §2.3): a node is frozen (see the module
        docstring) if fewer than two of its statistics are positive (pure or empty, for
        non-negative class weights) or no candidate leaves both children with positive total
        statistics; such candidates are never chosen. Not for private growth (the test
        would spend budget) nor for oblivious growth.

    Returns:
      ``(feature, threshold, leaf)``: int32 split arrays ``[2**d - 1]`` and each example's
      leaf ``[m]``.
    """
    n_codes = _static_max(n_codes_per_feature)
    if stop_pure and oblivious:
        raise ValueError("stop_pure freezes single nodes: it needs greedy (oblivious=False) growth")
    if choose is None:
        if split_score is None:
            raise ValueError("grow_levelwise needs split_score (with select) or choose")
        choose = score_then_select(split_score, _per_level(select, depth), oblivious)
    elif oblivious:
        raise ValueError("oblivious growth takes split_score and select, not choose")
    feature, threshold = empty_splits(depth)
    valid = valid_thresholds(n_codes_per_feature, n_codes)
    node = jnp.zeros(codes.shape[0], jnp.int32)
    for level, level_key in enumerate(jax.random.split(key, depth)):
        n_nodes = 2**level
        left, right = split_stats(node_histogram(codes, node, stats, n_nodes, n_codes))
        candidates = (valid & _both_children_nonempty(left, right)) if stop_pure else valid
        candidates = jnp.broadcast_to(candidates, left.shape[:-1])
        choice = choose(level, level_key, left, right, candidates)
        level_feature, level_threshold = choice // n_codes, choice % n_codes
        if stop_pure:
            frozen = _is_pure(left[:, 0, -1, :]) | ~candidates.reshape(n_nodes, -1).any(-1)
            level_feature = jnp.where(frozen, 0, level_feature)
            level_threshold = jnp.where(frozen, int(n_codes_per_feature[0]) - 1,
                                        level_threshold)
        feature = feature.at[level_slice(level)].set(level_feature)
        threshold = threshold.at[level_slice(level)].set(level_threshold)
        node = 2 * node + step(level_feature, level_threshold, codes, node)
    return feature, threshold, node


def score_then_select(
    split_score: SplitScore, selects: Sequence[Select], oblivious: bool = False
) -> Choose:
    """The plain level rule: score every candidate (masked ones ``-inf``), then ``selects[level]``
    picks per node (greedy) or once for the level from the scores summed over its nodes
    (oblivious)."""
    def choose(level: int, key: jax.Array, left: jax.Array, right: jax.Array,
               candidates: jax.Array) -> jax.Array:
        scores = jnp.where(candidates, split_score(left, right), -jnp.inf)
        n_nodes = scores.shape[0]
        if oblivious:
            return jnp.broadcast_to(selects[level](key, scores.sum(0).reshape(-1)), (n_nodes,))
        return selects[level](key, scores.reshape(n_nodes, -1))
    return choose


def _per_level(select: Select | Sequence[Select], depth: int) -> Sequence[Select]:
    """One selection rule per level: ``select`` repeated, or checked to have ``depth`` rules."""
    if callable(select):
        return [select] * depth
    if len(select) != depth:
        raise ValueError(f"need one select rule per level ({depth}), got {len(select)}")
    return select


def _both_children_nonempty(left: jax.Array, right: jax.Array) -> jax.Array:
    """bool ``[nodes, n, n_codes]``: the split leaves positive total statistics on both sides."""
    return (left.sum(-1) > 0) & (right.sum(-1) > 0)


def _is_pure(node_stats: jax.Array) -> jax.Array:
    """bool ``[nodes]``: fewer than two positive statistics (pure or empty node, §2.3)."""
    return (node_stats > 0).sum(-1) < 2


def _static_max(n_codes_per_feature: jax.Array) -> int:
    """Histogram width: must be static, so ``n_codes_per_feature`` must be concrete."""
    if isinstance(n_codes_per_feature, jax.core.Tracer):
        raise ValueError("n_codes_per_feature must be concrete (a numpy array), not traced")
    return int(max(int(c) for c in n_codes_per_feature))
