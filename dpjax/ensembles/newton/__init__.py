"""Private Newton boosting, ``method="boosted"`` (the accurate default booster; DP-EBM's shape
with a private prior, noise-aware Newton leaves and a public schedule of rounds).

* :mod:`~dpjax.ensembles.newton.config`: :class:`Boosted`, its registration and ``describe``;
* :mod:`~dpjax.ensembles.newton.boosting`: the pure :func:`fit` (the schedule, then the
  rounds);
* :mod:`~dpjax.ensembles.newton.schedule`: the public schedule (:func:`active_rounds`), the
  releases it reads and the static plan; :mod:`~dpjax.ensembles.newton.releases`: the prior's
  and the rounds' releases; :mod:`~dpjax.ensembles.newton.rounds`: the round step and its
  scan; :mod:`~dpjax.ensembles.newton.individual`: the individual filter;
* :mod:`~dpjax.ensembles.newton.model`: the params :class:`NewtonBoostedModel` and its score.
"""

from dpjax.ensembles.newton.boosting import fit
from dpjax.ensembles.newton.config import Boosted
from dpjax.ensembles.newton.model import (
    NewtonBoostedModel,
    newton_decision,
    newton_predict,
    newton_proba,
)
from dpjax.ensembles.newton.schedule import (
    NOISES,
    SHAPES,
    active_rounds,
    auto_uses_random,
    max_rounds,
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
