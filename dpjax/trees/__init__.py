"""Dense trees: the ``DenseTree`` pytree, histograms, random and Mα growers, prediction."""

from dpjax.trees.dense import DenseTree, depth_of, level_slice
from dpjax.trees.grow import apply_level, frozen_nodes, level_split_stats, random_splits
from dpjax.trees.histogram import leaf_stats, node_histogram, split_stats, valid_thresholds
from dpjax.trees.malpha import (
    GrownTree,
    MalphaRule,
    MalphaState,
    class_stats,
    grow_malpha_level,
    grow_malpha_tree,
    malpha_root_state,
    merge_level_costs,
    split_level_epsilons,
)
from dpjax.trees.predict import apply_tree, apply_trees, leaf_index

__all__ = [
    "DenseTree",
    "GrownTree",
    "MalphaRule",
    "MalphaState",
    "apply_level",
    "apply_tree",
    "apply_trees",
    "class_stats",
    "depth_of",
    "frozen_nodes",
    "grow_malpha_level",
    "grow_malpha_tree",
    "leaf_index",
    "leaf_stats",
    "level_slice",
    "level_split_stats",
    "malpha_root_state",
    "merge_level_costs",
    "node_histogram",
    "random_splits",
    "split_level_epsilons",
    "split_stats",
    "valid_thresholds",
]
