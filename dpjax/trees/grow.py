"""Level-wise growth of dense trees: random structures and the shared mechanics of greedy levels.

* **random** (Bojarski et al., `docs/specs/dp-random-decision-trees.md` §1.2): every node's
  feature is uniform over the features and its threshold uniform over the feature's codes, from
  the key alone. No data is read, so the structure costs no privacy.
* **greedy** (Mα trees, :mod:`dpjax.ensembles.malpha.tree`;
  ``docs/specs/boosted-dp-trees-malpha.md`` §2.3, §8): a tree is grown breadth-first, one level at a
  time. The helpers here do what every greedy level does whatever its split rule:
  :func:`level_split_stats` builds the level's histogram (one segment sum) and the statistics and
  candidate mask of every split of every node; the rule picks one flat candidate per node;
  :func:`apply_level` writes the level's splits and routes the examples to the next level.

Non-private greedy growth can *freeze* nodes (``stop_pure``, Mα spec §2.3, §8): a frozen node
keeps the complete-array layout with a split that sends every example left (threshold = its
feature's last code), so its left child carries its statistics and predictions are unchanged.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpjax.privacy.fixed_point import WideSum
from dpjax.trees.dense import empty_splits, level_slice, set_level
from dpjax.trees.histogram import (
    exact_node_histogram,
    node_histogram,
    split_stats,
    valid_thresholds,
)
from dpjax.trees.predict import step

THRESHOLD_RANGES = ("global", "cell")


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
    # All randomness in one draw of words (one PRNG kernel, whatever the depth): a node's
    # feature from the first row, its threshold from the second. "cell" draws its words and
    # its Gumbel rows from two children of the key (``bits(key)`` would share words with
    # ``fold_in(key, 1)``).
    global_range = threshold_range == "global"
    words = jax.random.bits(key if global_range else jax.random.fold_in(key, 0),
                            (2, 2**depth - 1), jnp.uint32)
    if global_range:
        feature = _uniform_below(words[0], jnp.int32(n))
        return feature, _uniform_below(words[1], jnp.maximum(n_codes_per_feature[feature], 2) - 1)
    # "cell": a Gumbel row per node picks its feature uniformly among the splittable ones.
    gumbel = jax.random.gumbel(jax.random.fold_in(key, 1), (2**depth - 1, n))
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
        level_threshold = lo + _uniform_below(words[1, nodes], jnp.maximum(hi - lo, 1))
        feature = feature.at[nodes].set(level_feature)
        threshold = threshold.at[nodes].set(level_threshold)
        chosen = jax.nn.one_hot(level_feature, n, dtype=bool)
        left_high = jnp.where(chosen, level_threshold[:, None], high)
        right_low = jnp.where(chosen, jnp.minimum(level_threshold[:, None] + 1, high), low)
        low = jnp.stack([low, right_low], 1).reshape(-1, n)
        high = jnp.stack([left_high, high], 1).reshape(-1, n)
    return feature, threshold


def _uniform_below(word: jax.Array, count: jax.Array) -> jax.Array:
    """An int32 on ``{0, ..., count − 1}`` from a uniform uint32 ``word``: ``word mod count``
    (``1 <= count``; each value's probability within ``count/2**32`` of ``1/count``, public
    randomness that no privacy claim rests on)."""
    return (word % count.astype(jnp.uint32)).astype(jnp.int32)


def level_split_stats(
    codes: jax.Array,
    node: jax.Array,
    stats: jax.Array,
    level: int,
    n_codes_per_feature: jax.Array,
    *,
    stop_pure: bool = False,
    width: int | None = None,
    exact: bool = False,
) -> tuple[jax.Array | WideSum, jax.Array | WideSum, jax.Array]:
    """The statistics of every candidate split of every node of level ``k`` (Mα spec §2.1, §8).

    Args:
      codes: uint8 ``[m, n]``.
      node: int32 ``[m]`` each example's node within level ``k``, ``0..2**k - 1``.
      stats: ``[m, S]`` per-example statistics (e.g. weighted class sums).
      level: static level ``k`` (only its ``2**k`` nodes are read; traced when ``width`` is
        given).
      n_codes_per_feature: concrete int ``[n]`` codes of each feature (static: it sets the
        histogram width ``n_codes``; thresholds past a feature's codes are never candidates).
      stop_pure: non-private stopping (§2.3): also drop the candidates that leave a child with
        no positive statistics (see :func:`frozen_nodes`).
      width: static node count ``w >= 2**k`` of the histogram (default ``2**k``): the nodes
        past ``2**k`` hold no example, so every level of a tree can share one shape (one
        program for a loop over the levels, :func:`dpjax.ensembles.malpha.grow_malpha_tree`).
      exact: ``stats`` are int32 fixed-point values whose sums must be exact past int32 (a
        private tree): :func:`dpjax.trees.histogram.exact_node_histogram`, canonical
        :class:`~dpjax.privacy.fixed_point.WideSum` statistics past
        :data:`~dpjax.privacy.fixed_point.MAX_ROWS` rows.

    Returns:
      ``(left, right, candidates)``: the children's statistics ``[w, n, n_codes, S]`` of
      every threshold split and the bool candidate mask ``[w, n, n_codes]``; a node's own
      statistics are ``left[:, 0, -1]`` (all its examples go left past the last code).
    """
    n_codes = _static_max(n_codes_per_feature)
    width = 2**level if width is None else width
    histogram = exact_node_histogram if exact else node_histogram
    left, right = split_stats(histogram(codes, node, stats, width, n_codes))
    candidates = valid_thresholds(n_codes_per_feature, n_codes)
    if stop_pure:
        candidates = candidates & _both_children_nonempty(left, right)
    shape = (left.hi if isinstance(left, WideSum) else left).shape
    return left, right, jnp.broadcast_to(candidates, shape[:-1])


def frozen_nodes(left: jax.Array, candidates: jax.Array) -> jax.Array:
    """bool ``[nodes]``: the nodes non-private growth does not split (Mα spec §2.3): fewer than
    two positive statistics (pure or empty, for non-negative class weights) or no candidate
    (from :func:`level_split_stats` with ``stop_pure``) leaving both children non-empty."""
    return _is_pure(left[:, 0, -1, :]) | ~candidates.reshape(left.shape[0], -1).any(-1)


def apply_level(
    feature: jax.Array,
    threshold: jax.Array,
    node: jax.Array,
    codes: jax.Array,
    level: int,
    choice: jax.Array,
    n_codes_per_feature: jax.Array,
    frozen: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Write level ``k``'s splits and route the examples one level down (Mα spec §8).

    Args:
      feature, threshold: int32 ``[2**d - 1]`` split arrays so far (heap order).
      node: int32 ``[m]`` each example's node within level ``k``.
      codes: uint8 ``[m, n]``.
      level: level ``k`` (static, or traced with a padded ``choice``).
      choice: int ``[w]`` each node's split as a flat ``feature * n_codes + threshold`` index
        into the candidates of :func:`level_split_stats` (``w >= 2**k``; entries past ``2**k``
        are ignored).
      n_codes_per_feature: concrete int ``[n]`` codes of each feature.
      frozen: optional bool ``[w]`` (:func:`frozen_nodes`): these nodes send every example
        left (feature 0, its last code) whatever their ``choice``.

    Returns:
      ``(feature, threshold, node)`` with level ``k`` written and each example's node within
      level ``k + 1`` (after the last level: its leaf).
    """
    n_codes = _static_max(n_codes_per_feature)
    level_feature, level_threshold = choice // n_codes, choice % n_codes
    if frozen is not None:
        level_feature = jnp.where(frozen, 0, level_feature)
        level_threshold = jnp.where(frozen, int(n_codes_per_feature[0]) - 1, level_threshold)
    feature = set_level(feature, level, level_feature)
    threshold = set_level(threshold, level, level_threshold)
    return feature, threshold, 2 * node + step(level_feature, level_threshold, codes, node)


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
