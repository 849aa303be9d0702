"""DP greedy rule lists (Ly, Ferry, Huguet, Gambs & Aïvodji 2024), ``method="rule_list"``.

* :mod:`~dpjax.rules.config`: :class:`RuleListLearner` and its registration;
* :mod:`~dpjax.rules.greedy`: the pure :func:`fit` with its private selections, the params
  :class:`RuleList` and its predictions;
* :mod:`~dpjax.rules.candidates`: the literals and the exact Gini-weighted counts;
* :mod:`~dpjax.rules.describe`: the list in words.

The smooth sensitivity of the Gini impurity is a mechanism:
:mod:`dpjax.mechanisms.smooth_sensitivity`.
"""

from dpjax.rules.candidates import Literals, gini_count, literal_table, node_stats
from dpjax.rules.config import RuleListLearner, UnprovenClaimWarning
from dpjax.rules.describe import describe_rule_list, literal_text
from dpjax.rules.greedy import (
    CALIBRATIONS,
    SELECTIONS,
    RuleList,
    fit,
    rule_cells,
    rule_list_predict,
    rule_list_proba,
)

__all__ = [
    "CALIBRATIONS",
    "SELECTIONS",
    "Literals",
    "RuleList",
    "RuleListLearner",
    "UnprovenClaimWarning",
    "describe_rule_list",
    "fit",
    "gini_count",
    "literal_table",
    "literal_text",
    "node_stats",
    "rule_cells",
    "rule_list_predict",
    "rule_list_proba",
]
