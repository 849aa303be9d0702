"""DP greedy rule lists (Ly, Ferry, Huguet, Gambs & Aïvodji 2024): candidates, the smooth
sensitivity of the Gini impurity, and the greedy learner with its private selections."""

from dpjax.rules.candidates import Literals, gini_count, literal_table, node_stats
from dpjax.rules.greedy import (
    CALIBRATIONS,
    SELECTIONS,
    RuleList,
    describe_rule_list,
    fit_rule_list,
    rule_list_predict,
    rule_list_proba,
)
from dpjax.rules.smooth_sensitivity import (
    confidence_threshold,
    gini_local_sensitivity,
    smooth_sensitivity_gini,
)

__all__ = [
    "CALIBRATIONS",
    "SELECTIONS",
    "Literals",
    "RuleList",
    "confidence_threshold",
    "describe_rule_list",
    "fit_rule_list",
    "gini_count",
    "gini_local_sensitivity",
    "literal_table",
    "node_stats",
    "rule_list_predict",
    "rule_list_proba",
    "smooth_sensitivity_gini",
]
