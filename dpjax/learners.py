"""The learner registry behind :func:`dpjax.fit`: each learner is a pure, jittable
``fit(key, codes, y, epsilon, **static)`` plus its privacy ledger entries and prediction rule.

Static (shape-setting) hyper-parameters go in ``static``; traced ones (epsilon, ...) are arrays,
so sweeps over them are one ``vmap``.
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
from dpjax.mechanisms import LedgerEntry, allocate
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
      fit: ``(key, codes, y, epsilon, **traced, **static) -> params`` (pure, jittable;
        ``epsilon`` is ``None`` for a non-private fit).
      ledger: ``(epsilon, params, sensitivity) -> [LedgerEntry]``, every release of a private
        fit.
      proba: ``(params, codes, **predict_static) -> [m, C]``.
      predict: ``(params, codes, key, **predict_static) -> [m]`` class indices.
      predict_static: hyper-parameters the prediction rule reads.
      encode_traced: ``(name, value) -> float``, the traced array value of a hyper-parameter
        (e.g. ``alpha="oc"`` -> ``-1``).
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
    encode_traced: Callable[[str, Any], float] = lambda name, value: float(value)

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


def _float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (what a traced or constant share becomes)."""
    return float(np.float32(value))


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


def _forest_ledger(
    epsilon: float, params: dict[str, Any], sensitivity: float
) -> list[LedgerEntry]:
    per_leaf = params["leaf_composition"] == "leaf"
    count = params["n_trees"] * (2 ** params["depth"] if per_leaf else 1)
    mechanism = {"laplace": f"Laplace (L1 sens. {sensitivity:g})",
                 "discrete_laplace": f"discrete Laplace (L1 sens. {sensitivity:g})",
                 "exponential": "exponential (sens. 1)" if per_leaf or sensitivity == 1 else
                 "exponential (sens. 1, ε/2 per leaf)"}[params["noise"]]
    return [LedgerEntry(
        what=f"leaf class counts (one vector per {'leaf' if per_leaf else 'tree'})",
        mechanism=mechanism, epsilon=allocate(epsilon, [(1.0, count)])[0], count=count)]


def _forest(name: str, defaults: dict[str, Any], noises: tuple[str, ...]) -> Learner:
    return Learner(
        name=name,
        defaults=defaults,
        fit_static=("n_trees", "depth", "noise", "threshold_range", "leaf_estimate",
                    "leaf_composition"),
        traced=(),
        check=_forest_check(noises),
        fit=fit_random_trees,
        ledger=_forest_ledger,
        proba=forest_proba,
        predict=lambda params, codes, key, voting: forest_predict(params, codes, voting, key),
        predict_static=("voting",),
        needs_predict_key=lambda params: params["voting"] == "probabilistic",
    )


_FOREST_COMMON = {"threshold_range": "global"}
RANDOM_TREES = _forest("random_trees", {
    "n_trees": 11, "depth": 12, "voting": "threshold", "noise": "laplace",
    "leaf_estimate": "smoothed", "leaf_composition": "tree", **_FOREST_COMMON,
}, noises=("laplace", "discrete_laplace"))
RF_LAPLACE = _forest("rf_laplace", {
    "n_trees": 21, "depth": 4, "voting": "majority", "noise": "laplace",
    "leaf_estimate": "label", "leaf_composition": "leaf", **_FOREST_COMMON,
}, noises=("laplace", "discrete_laplace"))
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
        # shares are used as float32 inside the fit: the ledger uses the same float32 values,
        # so 1 - share (exact in float32 for share >= 1/2) agrees on both sides
        "beta_tree": _float32(_unit_interval(params, "beta_tree", open_high=True)),
        "clamp": _positive_float(params, "clamp"),
        "zeta": _unit_interval(params, "zeta", open_high=True),
        "oc_link_alpha": _unit_interval(params, "oc_link_alpha"),
        "leaf_mechanism": _choice(params, "leaf_mechanism", LEAF_MECHANISMS),
        "beta_mode": _choice(params, "beta_mode", BETA_MODES),
        "leaf_composition": _choice(params, "leaf_composition", LEAF_COMPOSITIONS),
        "oc_alpha": params["oc_alpha"] if params["oc_alpha"] is None else _choice(
            params, "oc_alpha", OC_ALPHA),
        "beta_oc": _float32(_unit_interval(params, "beta_oc", open_high=True)),
        "beta_share": _float32(_unit_interval(params, "beta_share", open_high=True)),
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


def _boosted_ledger(
    epsilon: float, params: dict[str, Any], sensitivity: float
) -> list[LedgerEntry]:
    """Every release of Mα-boost (spec §4.2, §4.6, §5.3), as :func:`fit_boosted` spends it."""
    oc = params["alpha"] == "oc"
    oc_alpha = resolve_oc_alpha(params["oc_alpha"], private=True)
    n_trees, depth, beta_tree = params["n_trees"], params["depth"], params["beta_tree"]
    oc_private = oc and oc_alpha == "private" and depth > 1
    share_oc = params["beta_oc"] if oc_private else 0.0
    share_beta = params["beta_share"] if params["beta_mode"] == "laplace" else 0.0
    per_leaf = params["leaf_composition"] == "sequential"
    alpha = "α_ℓ" if oc else f"α={params['alpha']:g}"
    parts = [(beta_tree * (1 - share_oc) / depth, n_trees * 2**k) for k in range(depth)]
    names = [(f"splits at depth {k}", f"exponential (sens. {sensitivity:g}·Δ^({alpha})(m))")
             for k in range(depth)]
    if oc_private:
        parts.append((beta_tree * share_oc, n_trees * depth))
        names.append(("O.C level errors", f"Laplace (sens. {sensitivity:g})"))
    leaf_sens = {"counts": f"L1 sens. {sensitivity:g}",
                 "value": "range 2α_LC" if params["beta_mode"] == "fold" else "range 2M"}
    parts.append(((1 - beta_tree) * (1 - share_beta), n_trees * (2**depth if per_leaf else 1)))
    leaf_what = "values x β_t" if params["beta_mode"] == "fold" else params["leaf_mechanism"]
    names.append((f"leaf {leaf_what} (one per {'leaf' if per_leaf else 'tree'})",
                  f"Laplace ({leaf_sens[params['leaf_mechanism']]})"))
    if share_beta:
        parts.append(((1 - beta_tree) * share_beta, n_trees))
        names.append(("leveraging coefficients β_t", "Laplace (sens. 2aM/m)"))
    entries = [LedgerEntry(what=what, mechanism=mechanism, epsilon=each, count=count)
               for (what, mechanism), each, (_, count) in zip(
                   names, allocate(epsilon, parts), parts, strict=True)]
    leaks = []
    if oc and oc_alpha == "exact":
        leaks.append("O.C α from exact weighted errors (paper)")
    if params["beta_mode"] == "paper_fast":
        leaks.append("β_t from the data without noise (paper_fast)")
    for what in leaks:
        warnings.warn(f"boosted: {what} reads the training data outside any mechanism; the "
                      "model is NOT differentially private (the ledger says so)",
                      DataDependentWarning, stacklevel=3)
        entries.append(LedgerEntry(what=what, mechanism="none", epsilon=0.0, private=False))
    return entries


BOOSTED = Learner(
    name="boosted",
    defaults={"n_trees": 10, "depth": 4, "alpha": "oc", "beta_tree": 0.5, "clamp": 10.0,
              "zeta": 1e-4, "oc_link_alpha": 1.0, "leaf_mechanism": "value",
              "beta_mode": "fold", "leaf_composition": "sequential", "oc_alpha": None,
              "beta_oc": 0.1, "beta_share": 0.1},
    fit_static=("n_trees", "depth", "clamp", "zeta", "oc_link_alpha", "leaf_mechanism",
                "beta_mode", "leaf_composition", "oc_alpha", "beta_oc", "beta_share"),
    traced=("alpha", "beta_tree"),
    check=_check_boosted,
    fit=fit_boosted,
    ledger=_boosted_ledger,
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
