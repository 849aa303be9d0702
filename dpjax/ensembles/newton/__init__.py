"""Private Newton boosting, ``method="boosted"`` (the accurate default booster; DP-EBM's shape
with a private prior, noise-aware Newton leaves and a public schedule of rounds).

* :mod:`~dpjax.ensembles.newton.config`: :class:`Boosted`, its registration and ``describe``;
* :mod:`~dpjax.ensembles.newton.boosting`: the pure :func:`fit`, its schedule
  (:func:`active_rounds`) and releases;
* :mod:`~dpjax.ensembles.newton.model`: the params :class:`NewtonBoostedModel` and its score.
"""

from dpjax.ensembles.newton.boosting import (
    NOISES,
    SHAPES,
    active_rounds,
    auto_uses_random,
    fit,
    max_rounds,
)
from dpjax.ensembles.newton.config import Boosted
from dpjax.ensembles.newton.model import (
    NewtonBoostedModel,
    newton_decision,
    newton_predict,
    newton_proba,
)

__all__ = [
    "NOISES",
    "SHAPES",
    "Boosted",
    "NewtonBoostedModel",
    "active_rounds",
    "auto_uses_random",
    "fit",
    "max_rounds",
    "newton_decision",
    "newton_predict",
    "newton_proba",
]
