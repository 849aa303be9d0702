"""The learner registry behind :func:`dpjax.fit`: each learner is a pure, jittable
``fit(key, codes, y, epsilon, **static)`` plus its privacy ledger entries and prediction rule.

Static (shape-setting) hyper-parameters go in ``static``; traced ones (epsilon, ...) are arrays,
so sweeps over them are one ``vmap``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from dpjax.data import FeatureSpec
from dpjax.ensembles import (
    LEAF_ESTIMATES,
    NOISE,
    VOTING,
    fit_random_trees,
    forest_predict,
    forest_proba,
)
from dpjax.mechanisms import LedgerEntry, split_budget
from dpjax.trees.grow import THRESHOLD_RANGES

MAX_DEPTH = 20


@dataclasses.dataclass(frozen=True)
class Learner:
    """A registered learning method.

    Attributes:
      name: the ``method=`` string.
      defaults: every hyper-parameter with its default.
      fit_static: hyper-parameters that set shapes or code paths (compile-time constants).
      traced: hyper-parameters that may be swept in one ``vmap`` (besides epsilon).
      check: validates and normalises hyper-parameters (raises ``ValueError``).
      fit: ``(key, codes, y, epsilon, **static) -> params`` (pure, jittable).
      ledger: ``(epsilon, params, sensitivity) -> [LedgerEntry]``, every release of the fit.
      proba: ``(params, codes, **predict_static) -> [m, C]``.
      predict: ``(params, codes, key, **predict_static) -> [m]`` class indices.
      predict_static: hyper-parameters the prediction rule reads.
    """

    name: str
    defaults: Mapping[str, Any]
    fit_static: tuple[str, ...]
    traced: tuple[str, ...]
    check: Callable[[dict[str, Any]], dict[str, Any]]
    fit: Callable[..., Any]
    ledger: Callable[[float, dict[str, Any], float], list[LedgerEntry]]
    proba: Callable[..., jax.Array]
    predict: Callable[..., jax.Array]
    predict_static: tuple[str, ...] = ()
    needs_predict_key: Callable[[dict[str, Any]], bool] = lambda params: False

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise ValueError(f"method {self.name!r} has no parameter(s) {unknown}; it takes "
                             f"{sorted(self.defaults)}")
        return self.check({**self.defaults, **params})


def _positive_int(params: dict[str, Any], name: str, upper: int | None = None) -> int:
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1 or (
        upper is not None and value > upper
    ):
        bound = f" and <= {upper}" if upper is not None else ""
        raise ValueError(f"{name} must be an integer >= 1{bound}, got {value!r}")
    return int(value)


def _choice(params: dict[str, Any], name: str, options: tuple[str, ...]) -> str:
    if params[name] not in options:
        raise ValueError(f"{name} must be one of {options}, got {params[name]!r}")
    return params[name]


def _check_random_trees(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "n_trees": _positive_int(params, "n_trees"),
        "depth": _positive_int(params, "depth", MAX_DEPTH),
        "voting": _choice(params, "voting", VOTING),
        "noise": _choice(params, "noise", NOISE),
        "threshold_range": _choice(params, "threshold_range", THRESHOLD_RANGES),
        "leaf_estimate": _choice(params, "leaf_estimate", LEAF_ESTIMATES),
    }


def _random_trees_ledger(
    epsilon: float, params: dict[str, Any], sensitivity: float
) -> list[LedgerEntry]:
    mechanism = {"laplace": "Laplace", "discrete_laplace": "discrete Laplace"}[params["noise"]]
    return [LedgerEntry(
        what="leaf class counts (one vector per tree)",
        mechanism=f"{mechanism} (L1 sens. {sensitivity:g})",
        epsilon=split_budget(epsilon, params["n_trees"]),
        count=params["n_trees"],
    )]


RANDOM_TREES = Learner(
    name="random_trees",
    defaults={"n_trees": 11, "depth": 12, "voting": "threshold", "noise": "laplace",
              "threshold_range": "global", "leaf_estimate": "smoothed"},
    fit_static=("n_trees", "depth", "noise", "threshold_range", "leaf_estimate"),
    traced=(),
    check=_check_random_trees,
    fit=fit_random_trees,
    ledger=_random_trees_ledger,
    proba=forest_proba,
    predict=lambda params, codes, key, voting: forest_predict(params, codes, voting, key),
    predict_static=("voting",),
    needs_predict_key=lambda params: params["voting"] == "probabilistic",
)

LEARNERS: dict[str, Learner] = {RANDOM_TREES.name: RANDOM_TREES}


def get_learner(method: str) -> Learner:
    if method not in LEARNERS:
        raise ValueError(f"unknown method {method!r}; available: {sorted(LEARNERS)}")
    return LEARNERS[method]


def fit_static_args(
    learner: Learner, params: Mapping[str, Any], spec: FeatureSpec, n_classes: int,
    sensitivity: float,
) -> dict[str, Any]:
    """Keyword arguments fixed at compile time for ``learner.fit``."""
    static = {name: params[name] for name in learner.fit_static}
    return {**static, "n_codes_per_feature": spec.n_codes, "n_classes": n_classes,
            "sensitivity": sensitivity}
