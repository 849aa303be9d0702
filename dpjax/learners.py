"""The learner registry behind :func:`dpjax.fit`: each learner is a pure, jittable
``fit(key, codes, y, epsilon, **traced, **static) -> (params, costs)`` plus its prediction rule.

Static (shape-setting) hyper-parameters go in ``static``; traced ones (epsilon, ...) are arrays,
so sweeps over them are one ``vmap``. The privacy ledger is assembled from the ``costs`` the fit
returns (every mechanism reports what it spent); a learner adds only the static list of the
parts of a configuration that are *not* private (labelled paper modes).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from dpjax.data import DataDependentWarning, FeatureSpec
from dpjax.ensembles import (
    BETA_MODES,
    FOREST_COMPOSITIONS,
    LEAF_COMPOSITIONS,
    LEAF_ESTIMATES,
    LEAF_MECHANISMS,
    VALID_MODES,
    VOTING,
    boosted_predict,
    boosted_proba,
    fit_boosted,
    fit_random_trees,
    forest_predict,
    forest_proba,
)
from dpjax.trees.grow import THRESHOLD_RANGES
from dpjax.trees.malpha import OBJECTIVE_CALIBRATION, OC_ALPHA, resolve_oc_alpha

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
      fit: ``(key, codes, y, epsilon, **traced, **static) -> (params, costs)`` (pure,
        jittable; ``epsilon`` is ``None`` for a non-private fit; ``costs`` maps each kind of
        release to its :class:`~dpjax.mechanisms.Cost`).
      not_private: ``params -> [reason]``: the parts of a configuration that read the data
        outside any mechanism (labelled paper modes); each warns and makes the ledger's
        epsilon infinite.
      proba: ``(params, codes, **predict_static) -> [m, C]``.
      predict: ``(params, codes, key, **predict_static) -> [m]`` class indices.
      predict_static: hyper-parameters the prediction rule reads.
      encode_traced: ``(name, value) -> float``, the traced array value of a hyper-parameter
        (e.g. ``alpha="oc"`` -> ``-1``).
      uses_size: the fit takes the public sample size ``size`` (traced; ``None`` when the row
        count is private and the fit must release a noisy count).
      shares_structure: the fit takes a ``structure_key`` for data-independent randomness that
        the models of a sweep may share.
      footprint: ``(params, m, n, max_codes, n_classes) -> bytes``, a rough upper estimate of
        the memory one fit needs (the API refuses fits beyond the limit instead of running out
        of memory).
    """

    name: str
    defaults: Mapping[str, Any]
    fit_static: tuple[str, ...]
    traced: tuple[str, ...]
    check: Callable[[dict[str, Any]], dict[str, Any]]
    fit: Callable[..., Any]
    proba: Callable[..., jax.Array]
    predict: Callable[..., jax.Array]
    predict_static: tuple[str, ...] = ()
    needs_predict_key: Callable[[dict[str, Any]], bool] = lambda params: False
    encode_traced: Callable[[str, Any], float] = lambda name, value: float(value)
    not_private: Callable[[dict[str, Any]], list[str]] = lambda params: []
    uses_size: bool = False
    shares_structure: bool = False
    footprint: Callable[[dict[str, Any], int, int, int, int], float] = (
        lambda params, m, n, max_codes, n_classes: 0.0)

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


def _unit_interval(params: dict[str, Any], name: str, *, open_low: bool = True,
                   open_high: bool = False) -> float:
    value = params[name]
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    low_ok = number > 0 if open_low else number >= 0
    high_ok = number < 1 if open_high else number <= 1
    if isinstance(value, bool) or not (low_ok and high_ok):
        interval = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return number


def _positive_float(params: dict[str, Any], name: str) -> float:
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not (
        0 < float(value) < float("inf")
    ):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


# --- forests: random trees (Bojarski et al.) and the RF-L / RF-E baselines (Nock & Henecka) ---


def _forest_check(noises: tuple[str, ...]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def check(params: dict[str, Any]) -> dict[str, Any]:
        return {
            "n_trees": _positive_int(params, "n_trees"),
            "depth": _positive_int(params, "depth", MAX_DEPTH),
            "voting": _choice(params, "voting", VOTING),
            "noise": _choice(params, "noise", noises),
            "threshold_range": _choice(params, "threshold_range", THRESHOLD_RANGES),
            "leaf_estimate": _choice(params, "leaf_estimate", LEAF_ESTIMATES),
            "leaf_composition": _choice(params, "leaf_composition", FOREST_COMPOSITIONS),
        }
    return check


LANE_BYTES = 48
"""Memory of one lane of the exact samplers (state, words, compaction copies)."""


def _forest_footprint(params: dict[str, Any], m: int, n: int, max_codes: int,
                      n_classes: int) -> float:
    """Routing every row through every tree (int32 leaves and temporaries) and the noisy leaf
    counts (a sampler lane each)."""
    trees, leaves = params["n_trees"], 2 ** params["depth"]
    return 16.0 * trees * m + float(LANE_BYTES) * trees * leaves * n_classes


def _boosted_footprint(params: dict[str, Any], m: int, n: int, max_codes: int,
                       n_classes: int) -> float:
    """The deepest level's histogram, candidate statistics and selection lanes, the
    per-example statistics broadcast over features, and the stacked trees."""
    nodes = 2 ** (params["depth"] - 1)
    return (16.0 * m * n + float(24 + LANE_BYTES) * nodes * n * max_codes
            + 16.0 * params["n_trees"] * 2 ** params["depth"])


def _forest(name: str, defaults: dict[str, Any], noises: tuple[str, ...]) -> Learner:
    return Learner(
        name=name,
        defaults=defaults,
        fit_static=("n_trees", "depth", "noise", "threshold_range", "leaf_estimate",
                    "leaf_composition"),
        traced=(),
        check=_forest_check(noises),
        fit=fit_random_trees,
        proba=forest_proba,
        predict=lambda params, codes, key, voting: forest_predict(params, codes, voting, key),
        predict_static=("voting",),
        needs_predict_key=lambda params: params["voting"] == "probabilistic",
        shares_structure=True,
        footprint=_forest_footprint,
    )


_FOREST_COMMON = {"threshold_range": "global"}
RANDOM_TREES = _forest("random_trees", {
    "n_trees": 11, "depth": 12, "voting": "threshold", "noise": "laplace",
    "leaf_estimate": "smoothed", "leaf_composition": "tree", **_FOREST_COMMON,
}, noises=("laplace",))
RF_LAPLACE = _forest("rf_laplace", {
    "n_trees": 21, "depth": 4, "voting": "majority", "noise": "laplace",
    "leaf_estimate": "label", "leaf_composition": "leaf", **_FOREST_COMMON,
}, noises=("laplace",))
RF_EXPONENTIAL = _forest("rf_exponential", {
    "n_trees": 21, "depth": 4, "voting": "majority", "noise": "exponential",
    "leaf_estimate": "label", "leaf_composition": "leaf", **_FOREST_COMMON,
}, noises=("exponential",))


# --- Mα-boost (Nock & Henecka) ---------------------------------------------------------------


def _check_boosted(params: dict[str, Any]) -> dict[str, Any]:
    alpha = params["alpha"]
    if not (isinstance(alpha, str) and alpha == "oc"):
        alpha = _unit_interval(params, "alpha")
    checked = {
        "n_trees": _positive_int(params, "n_trees"),
        "depth": _positive_int(params, "depth", MAX_DEPTH),
        "alpha": alpha,
        "beta_tree": _unit_interval(params, "beta_tree", open_high=True),
        "clamp": _positive_float(params, "clamp"),
        "zeta": _unit_interval(params, "zeta", open_high=True),
        "oc_link_alpha": _unit_interval(params, "oc_link_alpha"),
        "leaf_mechanism": _choice(params, "leaf_mechanism", LEAF_MECHANISMS),
        "beta_mode": _choice(params, "beta_mode", BETA_MODES),
        "leaf_composition": _choice(params, "leaf_composition", LEAF_COMPOSITIONS),
        "oc_alpha": params["oc_alpha"] if params["oc_alpha"] is None else _choice(
            params, "oc_alpha", OC_ALPHA),
        "beta_oc": _unit_interval(params, "beta_oc", open_high=True),
        "beta_share": _unit_interval(params, "beta_share", open_high=True),
        "size_share": _unit_interval(params, "size_share", open_high=True),
    }
    if checked["zeta"] >= 0.5:
        raise ValueError(f"zeta must be in (0, 0.5), got {checked['zeta']}")
    if (checked["leaf_mechanism"], checked["beta_mode"]) not in VALID_MODES:
        raise ValueError(f"leaf_mechanism={checked['leaf_mechanism']!r} does not go with "
                         f"beta_mode={checked['beta_mode']!r}; valid: {sorted(VALID_MODES)}")
    if checked["leaf_composition"] == "parallel" and checked["leaf_mechanism"] != "counts":
        raise ValueError("leaf_composition='parallel' needs leaf_mechanism='counts': folded or "
                         "value leaves share data-dependent factors (spec §4.2)")
    return checked


def _boosted_not_private(params: dict[str, Any]) -> list[str]:
    """The parts of a Mα-boost configuration that read the data outside any mechanism (the
    paper's modes, spec §4.5 and §5.2), each with a warning."""
    leaks = []
    if params["alpha"] == "oc" and resolve_oc_alpha(params["oc_alpha"], True) == "exact":
        leaks.append("O.C α from exact weighted errors (paper)")
    if params["beta_mode"] == "paper_fast":
        leaks.append("β_t from the data without noise (paper_fast)")
    for what in leaks:
        warnings.warn(f"boosted: {what} reads the training data outside any mechanism; the "
                      "model is NOT differentially private (the ledger says so)",
                      DataDependentWarning, stacklevel=4)
    return leaks


BOOSTED = Learner(
    name="boosted",
    defaults={"n_trees": 10, "depth": 4, "alpha": "oc", "beta_tree": 0.5, "clamp": 10.0,
              "zeta": 1e-4, "oc_link_alpha": 1.0, "leaf_mechanism": "value",
              "beta_mode": "fold", "leaf_composition": "sequential", "oc_alpha": None,
              "beta_oc": 0.1, "beta_share": 0.1, "size_share": 0.05},
    fit_static=("n_trees", "depth", "clamp", "zeta", "oc_link_alpha", "leaf_mechanism",
                "beta_mode", "leaf_composition", "oc_alpha", "beta_oc", "beta_share",
                "size_share"),
    traced=("alpha", "beta_tree"),
    check=_check_boosted,
    fit=fit_boosted,
    not_private=_boosted_not_private,
    uses_size=True,
    footprint=_boosted_footprint,
    proba=boosted_proba,
    predict=lambda params, codes, key: boosted_predict(params, codes),
    encode_traced=lambda name, value: OBJECTIVE_CALIBRATION if (
        name == "alpha" and value == "oc") else float(value),
)


LEARNERS: dict[str, Learner] = {
    learner.name: learner for learner in (RANDOM_TREES, RF_LAPLACE, RF_EXPONENTIAL, BOOSTED)}


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
