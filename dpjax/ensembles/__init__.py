"""Ensembles of dense trees."""

from dpjax.ensembles.boosted import (
    BETA_MODES,
    LEAF_COMPOSITIONS,
    LEAF_MECHANISMS,
    VALID_MODES,
    BoostedTrees,
    boosted_decision,
    boosted_predict,
    boosted_proba,
    fit_boosted,
)
from dpjax.ensembles.random_trees import (
    FOREST_COMPOSITIONS,
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
    "BETA_MODES",
    "FOREST_COMPOSITIONS",
    "LEAF_COMPOSITIONS",
    "LEAF_MECHANISMS",
    "VALID_MODES",
    "BoostedTrees",
    "boosted_decision",
    "boosted_predict",
    "boosted_proba",
    "fit_boosted",
    "LEAF_ESTIMATES",
    "NOISE",
    "VOTING",
    "fit_random_trees",
    "forest_predict",
    "forest_proba",
    "leaf_distribution",
    "tree_keys",
]
