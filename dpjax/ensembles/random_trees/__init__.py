"""DP random decision-tree forests (Bojarski et al. 2014) and the RF-L / RF-E baselines of Nock &
Henecka (§6.5): ``method="random_trees"``, ``"rf_laplace"``, ``"rf_exponential"``.

* :mod:`~dpjax.ensembles.random_trees.config`: the configs (:class:`RandomTrees`,
  :class:`RFLaplace`, :class:`RFExponential`), their registration and ``describe``;
* :mod:`~dpjax.ensembles.random_trees.forest`: the pure :func:`fit` and its stages
  (structures, counts, the release, leaf estimates, the vote).

The fitted params are a :class:`~dpjax.trees.DenseTree` batch ``[n_trees]`` whose leaves hold
class distributions.
"""

from dpjax.ensembles.random_trees.config import Forest, RandomTrees, RFExponential, RFLaplace
from dpjax.ensembles.random_trees.forest import (
    COSTS,
    FOREST_BUDGETS,
    LEAF_ESTIMATES,
    NOISE,
    VOTING,
    fallback_leaves,
    fit,
    forest_leaf_index,
    forest_predict,
    forest_proba,
    forest_structures,
    leaf_class_counts,
    leaf_distribution,
    leaf_epsilon,
    leaf_estimates,
    release_counts,
    tree_keys,
    vote,
    weight_units,
)

__all__ = [
    "COSTS",
    "FOREST_BUDGETS",
    "LEAF_ESTIMATES",
    "NOISE",
    "VOTING",
    "Forest",
    "RFExponential",
    "RFLaplace",
    "RandomTrees",
    "fallback_leaves",
    "fit",
    "forest_leaf_index",
    "forest_predict",
    "forest_proba",
    "forest_structures",
    "leaf_class_counts",
    "leaf_distribution",
    "leaf_epsilon",
    "leaf_estimates",
    "release_counts",
    "tree_keys",
    "vote",
    "weight_units",
]
