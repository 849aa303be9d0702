"""Dense trees, the shared primitive of every tree learner: the ``DenseTree`` pytree,
histograms by segment sums, level-wise growth (random structures and the mechanics of greedy
levels), prediction, and trees in words (:mod:`~dpjax.trees.describe`)."""

from dpjax.trees.dense import MAX_DEPTH, DenseTree, depth_of, level_slice
from dpjax.trees.grow import apply_level, frozen_nodes, level_split_stats, random_splits
from dpjax.trees.histogram import leaf_stats, node_histogram, split_stats, valid_thresholds
from dpjax.trees.predict import apply_tree, apply_trees, leaf_index

__all__ = [
    "MAX_DEPTH",
    "DenseTree",
    "apply_level",
    "apply_tree",
    "apply_trees",
    "depth_of",
    "frozen_nodes",
    "leaf_index",
    "leaf_stats",
    "level_slice",
    "level_split_stats",
    "node_histogram",
    "random_splits",
    "split_stats",
    "valid_thresholds",
]
