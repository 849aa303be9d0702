"""Dense trees: the ``DenseTree`` pytree, histograms, level-wise growers and prediction."""

from dpjax.trees.dense import DenseTree, depth_of, level_slice
from dpjax.trees.grow import argmax_select, grow_levelwise, random_splits
from dpjax.trees.histogram import leaf_stats, node_histogram, split_stats, valid_thresholds
from dpjax.trees.predict import apply_tree, apply_trees, leaf_index

__all__ = [
    "DenseTree",
    "apply_tree",
    "apply_trees",
    "argmax_select",
    "depth_of",
    "grow_levelwise",
    "leaf_index",
    "leaf_stats",
    "level_slice",
    "node_histogram",
    "random_splits",
    "split_stats",
    "valid_thresholds",
]
