"""Split criteria on class statistics (the proper-loss family grows here)."""

from dpjax.losses.impurity import gini_impurity, gini_split_score

__all__ = ["gini_impurity", "gini_split_score"]
