"""The families' pure fits called with keyword arguments, as the tests state them: each builds
the family's config from the static fields and a :class:`~dpjax.learner.FitContext` from the
data facts, then calls the family's ``fit(config, ...)``. The Mα tests state the paper's
settings (:data:`MALPHA_PAPER`) unless they name others: the paper's leaves and budget, not
dpjax's defaults."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from dpjax.ensembles import malpha, newton, random_trees
from dpjax.ensembles.malpha import MalphaBoosted
from dpjax.ensembles.newton import Boosted
from dpjax.ensembles.random_trees import RandomTrees, RFExponential
from dpjax.learner import FitContext
from dpjax.rules import RuleListLearner
from dpjax.rules import fit as rule_list_fit

MALPHA_PAPER = {"leaf_mechanism": "value", "beta_mode": "fold",
                "leaf_composition": "sequential", "budget": "paper"}
"""Mα-boost as the paper runs it (folded value leaves, sequential budgets), the setting of the
Mα tests that name no other (dpjax's defaults are the counts leaves in parallel)."""


FOREST_STAGES = {"noise": "laplace", "leaf_estimate": "smoothed", "budget": "parallel",
                 "threshold_range": "global", "prior_share": 0.0}
"""The forest settings of the stage tests that name no other (Bojarski et al.'s forest: one
Laplace release per tree, smoothed leaves, no class prior)."""


def fit_random_trees(key: jax.Array, codes: Any, y: Any, epsilon: Any, *,
                     n_codes_per_feature: Any, n_classes: int, sensitivity: float = 1.0,
                     structure_key: Any = None, weights: Any = None, **fields: Any) -> Any:
    """:func:`dpjax.ensembles.random_trees.fit` of the forest with ``fields`` over
    :data:`FOREST_STAGES` (``RFExponential`` for ``noise="exponential"``, else
    ``RandomTrees``)."""
    fields = {**FOREST_STAGES, **fields}
    config = (RFExponential if fields["noise"] == "exponential" else RandomTrees)(**fields)
    context = FitContext(np.asarray(n_codes_per_feature), n_classes, sensitivity,
                         structure_key=structure_key, weights=weights)
    return random_trees.fit(config, key, codes, y, epsilon, context)


def fit_malpha(key: jax.Array, codes: Any, y: Any, epsilon: Any, *, n_codes_per_feature: Any,
               n_classes: int = 2, sensitivity: float = 1.0, size: Any = None,
               n_active: Any = None, alpha: Any = 1.0, beta_tree: Any = 0.5,
               **fields: Any) -> Any:
    """:func:`dpjax.ensembles.malpha.fit` of ``MalphaBoosted(**{**MALPHA_PAPER, **fields})``
    with the traced ``alpha`` (default 1) and ``beta_tree``."""
    config = MalphaBoosted(**{**MALPHA_PAPER, **fields})
    context = FitContext(np.asarray(n_codes_per_feature), n_classes, sensitivity, size)
    return malpha.fit(config, key, codes, y, epsilon, context, n_active=n_active, alpha=alpha,
                      beta_tree=beta_tree)


def fit_newton_boosted(key: jax.Array, codes: Any, y: Any, epsilon: Any, *,
                       n_codes_per_feature: Any, sensitivity: float = 1.0, delta: float = 0.0,
                       structure_key: Any = None, n_ordered: Any = None, **fields: Any) -> Any:
    """:func:`dpjax.ensembles.newton.fit` of ``Boosted(**fields)`` (traced fields included:
    they are passed as traced values); ``n_ordered`` (each feature's ordered codes, default
    none: every code its own cell) lets the fit merge adjacent codes."""
    traced = {name: fields.pop(name) for name in Boosted.traced_names() if name in fields}
    context = FitContext(np.asarray(n_codes_per_feature), 2, sensitivity,
                         structure_key=structure_key, delta=delta,
                         n_ordered=None if n_ordered is None else np.asarray(n_ordered))
    return newton.fit(Boosted(**fields), key, codes, y, epsilon, context, **traced)


def fit_rule_list(key: jax.Array, codes: Any, y: Any, epsilon: Any, *, n_codes_per_feature: Any,
                  sensitivity: float = 1.0, delta: float = 0.0, size: Any = None,
                  **fields: Any) -> Any:
    """:func:`dpjax.rules.fit` of ``RuleListLearner(**fields)``."""
    context = FitContext(np.asarray(n_codes_per_feature), 2, sensitivity, size, delta=delta)
    return rule_list_fit(RuleListLearner(**fields), key, codes, y, epsilon, context)
