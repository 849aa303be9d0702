"""Private smooth boosting, ``method="smooth_boost"``: LazyBregBoost (Bun, Carmosino & Sorrell
2020) over DP weak learners — Asadi et al.'s DP-1R stumps and DP-TopDown trees, and BCS20's
large-margin halfspaces.

* :mod:`~dpjax.ensembles.smooth_boost.config`: :class:`SmoothBoost`, its registration and
  ``describe``;
* :mod:`~dpjax.ensembles.smooth_boost.boosting`: the pure :func:`fit`, its schedule
  (:func:`affordable_rounds`) and the released hypotheses;
* :mod:`~dpjax.ensembles.smooth_boost.reweighting`: LazyBregBoost itself (κ-dense measures,
  the lazy projection, the majority vote), over any :class:`WeakLearner`;
* the weak learners :mod:`~dpjax.ensembles.smooth_boost.stumps` (DP-1R),
  :mod:`~dpjax.ensembles.smooth_boost.topdown` (DP-TopDown) and
  :mod:`~dpjax.ensembles.smooth_boost.halfspace`, each with its params and ``describe``.
"""

from dpjax.ensembles.smooth_boost.boosting import affordable_rounds, fit, released
from dpjax.ensembles.smooth_boost.config import WEAK_LEARNERS, SmoothBoost
from dpjax.ensembles.smooth_boost.halfspace import Halfspace, dp_halfspace_learner
from dpjax.ensembles.smooth_boost.reweighting import (
    UPDATES,
    LevelMeasure,
    WeakLearner,
    level_weights,
    log_unprojected,
    majority_vote,
    next_measure,
    normalise,
    project_dense,
    round_votes,
    sample_to_size,
    smooth_boost,
    smooth_boost_decision,
    smooth_boost_predict,
)
from dpjax.ensembles.smooth_boost.stumps import Stump, dp_stump_learner
from dpjax.ensembles.smooth_boost.topdown import TopDownTree, dp_topdown_learner

__all__ = [
    "UPDATES",
    "WEAK_LEARNERS",
    "Halfspace",
    "LevelMeasure",
    "SmoothBoost",
    "Stump",
    "TopDownTree",
    "WeakLearner",
    "affordable_rounds",
    "dp_halfspace_learner",
    "dp_stump_learner",
    "dp_topdown_learner",
    "fit",
    "level_weights",
    "log_unprojected",
    "majority_vote",
    "next_measure",
    "normalise",
    "project_dense",
    "released",
    "round_votes",
    "sample_to_size",
    "smooth_boost",
    "smooth_boost_decision",
    "smooth_boost_predict",
]
