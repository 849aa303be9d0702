"""Mα-boost (Nock & Henecka, "Boosted and Differentially Private Ensembles of Decision Trees"),
``method="malpha"``.

* :mod:`~dpjax.ensembles.malpha.config`: :class:`MalphaBoosted`, its registration and
  ``describe``;
* :mod:`~dpjax.ensembles.malpha.boosting`: the pure :func:`fit` (Algorithm 1) and its budget
  split (:func:`tree_budgets`);
* :mod:`~dpjax.ensembles.malpha.tree`: one Mα tree, grown level by level (private split
  selection, objective calibration);
* :mod:`~dpjax.ensembles.malpha.leaves`: the leaves' link and their private release with
  ``β_t``;
* :mod:`~dpjax.ensembles.malpha.model`: the params :class:`MalphaModel` and its score ``H``.

The Mα loss itself (Bayes risks, links, the split criterion and its sensitivity) is a shared
primitive: :mod:`dpjax.losses`.
"""

from dpjax.ensembles.malpha.boosting import WEIGHT_FLOOR, fit, tree_budgets
from dpjax.ensembles.malpha.config import NATURAL_MODES, MalphaBoosted
from dpjax.ensembles.malpha.leaves import (
    BETA_MODES,
    LEAF_COMPOSITIONS,
    LEAF_MECHANISMS,
    VALID_MODES,
    beta_rounding,
    check_modes,
    leaf_link,
    leveraging_coefficient,
    link_alpha,
    link_bound,
    release_leaves,
)
from dpjax.ensembles.malpha.model import (
    MalphaModel,
    malpha_decision,
    malpha_predict,
    malpha_proba,
)
from dpjax.ensembles.malpha.tree import (
    OBJECTIVE_CALIBRATION,
    OC_ALPHA,
    SPLIT_BUDGETS,
    WEIGHT_UNIT,
    GrownTree,
    MalphaRule,
    MalphaState,
    class_stats,
    grow_malpha_level,
    grow_malpha_tree,
    malpha_root_state,
    merge_level_costs,
    resolve_oc_alpha,
    split_level_epsilons,
)

__all__ = [
    "BETA_MODES",
    "LEAF_COMPOSITIONS",
    "LEAF_MECHANISMS",
    "NATURAL_MODES",
    "OBJECTIVE_CALIBRATION",
    "OC_ALPHA",
    "SPLIT_BUDGETS",
    "VALID_MODES",
    "WEIGHT_FLOOR",
    "WEIGHT_UNIT",
    "GrownTree",
    "MalphaBoosted",
    "MalphaModel",
    "MalphaRule",
    "MalphaState",
    "beta_rounding",
    "check_modes",
    "class_stats",
    "fit",
    "grow_malpha_level",
    "grow_malpha_tree",
    "leaf_link",
    "leveraging_coefficient",
    "link_alpha",
    "link_bound",
    "malpha_decision",
    "malpha_predict",
    "malpha_proba",
    "malpha_root_state",
    "merge_level_costs",
    "release_leaves",
    "resolve_oc_alpha",
    "split_level_epsilons",
    "tree_budgets",
]
