"""Ensembles of dense trees."""

from dpjax.ensembles.random_trees import (
    LEAF_ESTIMATES,
    NOISE,
    VOTING,
    fit_random_trees,
    forest_predict,
    forest_proba,
    leaf_distribution,
    tree_keys,
)

__all__ = [
    "LEAF_ESTIMATES",
    "NOISE",
    "VOTING",
    "fit_random_trees",
    "forest_predict",
    "forest_proba",
    "leaf_distribution",
    "tree_keys",
]
