"""The learners behind :func:`dpjax.fit`: frozen, validated configs with pure ``fit`` /
``proba`` / ``predict`` (the contract is in :mod:`dpjax.learners.base`).

    from dpjax.learners import Boosted
    model = dpjax.fit(X, y, method=Boosted(shape="random", depth=3), epsilon=1.0, bounds=...)

``LEARNERS`` maps each ``method=`` name to its config class.
"""

from dpjax.learners.base import LEARNERS, FitContext, Learner, get_learner, register
from dpjax.learners.boosted import Boosted
from dpjax.learners.forests import MAX_DEPTH, RandomTrees, RFExponential, RFLaplace
from dpjax.learners.malpha import MalphaBoosted
from dpjax.learners.rule_list import RuleListLearner
from dpjax.learners.smooth_boost import SmoothBoost

__all__ = [
    "LEARNERS",
    "MAX_DEPTH",
    "Boosted",
    "FitContext",
    "Learner",
    "MalphaBoosted",
    "RFExponential",
    "RFLaplace",
    "RandomTrees",
    "RuleListLearner",
    "SmoothBoost",
    "get_learner",
    "register",
]
