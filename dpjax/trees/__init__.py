"""Dense trees: the ``DenseTree`` pytree, histograms, level-wise growers and prediction."""

from dpjax.trees.dense import DenseTree, depth_of, level_slice
from dpjax.trees.grow import argmax_select, grow_levelwise, random_splits
from dpjax.trees.histogram import leaf_stats, node_histogram, split_stats, valid_thresholds
from dpjax.trees.malpha import GrownTree, class_stats, grow_malpha_tree, split_level_epsilons
from dpjax.trees.predict import apply_tree, apply_trees, leaf_index

__all__ = [
    "DenseTree",
    "GrownTree",
    "apply_tree",
    "apply_trees",
    "argmax_select",
    "class_stats",
    "depth_of",
    "grow_levelwise",
    "grow_malpha_tree",
    "leaf_index",
    "leaf_stats",
    "level_slice",
    "node_histogram",
    "random_splits",
    "split_level_epsilons",
    "split_stats",
    "valid_thresholds",
]
