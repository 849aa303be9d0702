"""Private smooth boosting (``method="smooth_boost"``): its config, fitted by
:func:`dpjax.ensembles.smooth_boost.boosting.fit`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from dpjax.data import DataDependentWarning
from dpjax.data.caller import warn
from dpjax.ensembles.smooth_boost import boosting
from dpjax.ensembles.smooth_boost.halfspace import (
    RESOLUTION,
    Halfspace,
    describe_halfspaces,
    dp_halfspace_learner,
    halfspace_value,
)
from dpjax.ensembles.smooth_boost.reweighting import (
    WeakLearner,
    smooth_boost_decision,
    smooth_boost_predict,
)
from dpjax.ensembles.smooth_boost.stumps import (
    Stump,
    describe_stumps,
    dp_stump_learner,
    stump_predict,
)
from dpjax.ensembles.smooth_boost.topdown import (
    CALIBRATIONS,
    SPLIT_SENSITIVITY,
    TopDownTree,
    describe_trees,
    dp_topdown_learner,
    topdown_predict,
)
from dpjax.learner import (
    FitContext,
    Learner,
    choice,
    hyper,
    non_negative_float,
    positive_float,
    positive_int,
    register,
    traced,
    unit_interval,
)
from dpjax.privacy.composition import ROUTES, epsilon_rho, float32_share

WEAK_LEARNERS = ("stump", "tree", "halfspace")
PREDICT: dict[str, Callable[[Any, jax.Array], jax.Array]] = {
    "stump": stump_predict, "tree": topdown_predict, "halfspace": halfspace_value}
"""The votes of the final vote: the weak learners' own, except the halfspaces' unrounded values
(the averaged halfspace ``w̄·x`` of BCS20 Alg. 5; post-processing)."""


@register(params=(Stump, TopDownTree, Halfspace), estimator="DPSmoothBoostClassifier")
@dataclasses.dataclass(frozen=True)
class SmoothBoost(Learner):
    """LazyBregBoost (binary labels): ``n_rounds`` rounds, each a weak hypothesis fitted to the
    κ-dense measure of the lazy multiplicative update; the model is their unweighted majority
    vote. Weak learners:

    * ``"stump"`` (default): DP-1R, a 1-rule (one-hot literal ``code_f = b``, its negation, or a
      constant) chosen by permute-and-flip on the weighted error;
    * ``"tree"``: DP-TopDown with ``tree_splits`` best-first splits on the literals (Gini gain,
      permute-and-flip) and jointly noised leaf labels; ``calibration="provable"`` (the
      corrected ``16/(κn)``) or ``"paper"`` (the paper's false ``4/(κn)``: not private);
    * ``"halfspace"``: the Gaussian weighted mean of the one-hot examples on the unit sphere,
      normalised (BCS20 §5.2); zCDP, needs ``delta > 0``.

    ``kappa`` (density κ: each example's mass is at most ``1/(κñ)``), ``learning_rate`` (λ of
    the gain update, BCS20; twice Asadi et al.'s margin-form λ) and ``min_signal`` are traced
    (sweepable): the number of rounds is the public schedule
    :func:`~dpjax.ensembles.smooth_boost.boosting.affordable_rounds` (at most
    ``n_rounds``; later rounds abstain). ``accounting`` composes the rounds: ``"basic"``
    (``ε/R`` each), ``"advanced"`` (Dwork–Rothblum–Vadhan, with the requested ``δ``),
    ``"zcdp"`` (each ``ε_0``-DP round is ``ε_0²/2``-zCDP), ``"optimal"`` (the rounds'
    releases as one block by the optimal composition of pure releases, after the released
    size, :mod:`dpjax.privacy.optimal`), or ``"auto"`` (zCDP; basic when ``δ = 0``). Each
    route gives a round the larger of its own and the basic budget, and the ledger reports
    the smaller of basic composition and the route's total.

    Defaults: Asadi et al.'s most frequent settings (``κ = 0.35``; ``λ = 0.5``, their 0.25 in
    the margin form), not tuned on the data being fitted; ``n_rounds`` and ``min_signal``
    from a sweep on adult (train/test files). Choosing ``kappa``, ``learning_rate`` or
    ``min_signal`` by a sweep on the private data spends privacy no ledger sees (as the paper's
    cross-validation does, spec §6.3): tune on public or separately budgeted data.

    Majority fallback (stumps): where even one round's signal is under ``fallback_signal``
    (traced; 20, chosen on the shared datasets with ``experiments/learner_defaults.py``, where
    no default falls below the majority class with it; 0 always boosts) the rounds' budget
    releases the class counts instead and the model is one constant vote for their majority
    (``describe()`` says so)."""

    name: ClassVar[str] = "smooth_boost"
    cpu_compile: ClassVar[str] = "lean"
    binary: ClassVar[bool] = True
    pads_rows: ClassVar[bool] = True    # a padding row's multiplicity is 0 (sample_to_size)
    weak_learner: str = hyper("stump", choice(*WEAK_LEARNERS))
    n_rounds: int = hyper(15, positive_int(1024))
    kappa: float = traced(0.35, unit_interval(open_high=True))
    learning_rate: float = traced(0.5, positive_float)
    min_signal: float = traced(50.0, positive_float)
    fallback_signal: float = traced(20.0, non_negative_float)
    size_share: float = hyper(0.05, unit_interval(open_high=True))
    tree_splits: int = hyper(2, positive_int(64))
    leaf_share: float = hyper(0.1, unit_interval(open_high=True))
    calibration: str = hyper("provable", choice(*CALIBRATIONS))
    accounting: str = hyper("auto", choice("auto", *ROUTES))

    def validate(self) -> None:
        if self.calibration != "provable" and self.weak_learner != "tree":
            raise ValueError("calibration applies to weak_learner='tree' only")
        if self.weak_learner == "halfspace" and self.accounting in ("basic", "advanced"):
            raise ValueError("weak_learner='halfspace' (Gaussian noise) composes in zCDP: use "
                             "accounting='zcdp' or 'auto'")

    @property
    def composition(self) -> str:
        return "zcdp" if self.accounting == "auto" else self.accounting

    @property
    def cost_per_signal(self) -> float:
        """``c`` of :func:`~dpjax.ensembles.smooth_boost.boosting.affordable_rounds` for the
        weak learner."""
        if self.weak_learner == "tree":
            return (2.0 * self.tree_splits * SPLIT_SENSITIVITY[self.calibration]
                    / (1.0 - self.leaf_share))
        return 4.0

    @property
    def round_shares(self) -> tuple[tuple[float, int], ...]:
        """The releases of one round, ``(s_k, m_k)``: ``m_k`` of a share ``s_k`` of its
        ``ε_0`` each (:data:`~dpjax.privacy.composition.Shares`): one for a stump; a tree's
        ``t`` splits of ``(1 − leaf_share)/t`` and its leaves' ``leaf_share``."""
        if self.weak_learner == "tree":
            return ((1.0 - self.leaf_share) / self.tree_splits, self.tree_splits), \
                (self.leaf_share, 1)
        return ((1.0, 1),)

    @property
    def resolution(self) -> int:
        return RESOLUTION if self.weak_learner == "halfspace" else 1

    def not_private(self) -> list[str]:
        """The paper's DP-TopDown calibration (stumps spec §4.5: Lemma 9.2 is false)."""
        if self.calibration != "paper":
            return []
        what = "DP-TopDown splits at the paper's 4/(κn) sensitivity (false: spec §4.5)"
        warn(f"smooth_boost: {what}; the model is NOT differentially private (the "
             "ledger says so)", DataDependentWarning)
        return [what]

    def weak(self, context: FitContext, epsilon: jax.Array | None, kappa: jax.Array,
             size: jax.Array) -> WeakLearner:
        """The weak learner with the round's budget ``epsilon`` (``ε_0``; ``None``: not
        private)."""
        codes = context.n_codes_per_feature
        if self.weak_learner == "stump":
            return dp_stump_learner(codes, epsilon, kappa, size)
        if self.weak_learner == "tree":
            return dp_topdown_learner(codes, self.tree_splits, epsilon, kappa, size,
                                      self.calibration, self.leaf_share)
        rho = None if epsilon is None else epsilon_rho(epsilon)
        return dp_halfspace_learner(codes, rho, kappa, size, self.round_delta(context.delta))

    def round_delta(self, delta: float) -> float:
        """The ``δ`` at which a Gaussian round states its own ``(ε, δ)``: the largest float32
        at most ``δ/n_rounds``, so that the rounds' ``δ`` sum within ``δ`` in the basic view."""
        return float32_share(delta, self.n_rounds)

    def check_request(self, private: bool, delta: float) -> None:
        if self.weak_learner == "halfspace" and private and delta <= 0.0:
            raise ValueError("weak_learner='halfspace' adds Gaussian noise: it needs delta > 0")

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced: jax.Array) -> tuple[Any, Any]:
        return boosting.fit(self, key, codes, y, epsilon, context, **traced)

    def decision(self, params: Stump | TopDownTree | Halfspace, codes: jax.Array) -> jax.Array:
        """The mean vote ``(1/T)·Σ_t h_t(x)`` in ``[−1, 1]`` (positive: the second class)."""
        return smooth_boost_decision(params, self.predict_fn, codes)

    @property
    def predict_fn(self) -> Callable[[Any, jax.Array], jax.Array]:
        """The weak learner's vote ``(hypothesis, codes) -> [m]``."""
        return PREDICT[self.weak_learner]

    def proba(self, params: Stump | TopDownTree | Halfspace, codes: jax.Array) -> jax.Array:
        """``[(1 − f̂)/2, (1 + f̂)/2]`` with ``f̂`` the mean vote in ``[−1, 1]``."""
        mean = self.decision(params, codes)
        return jnp.stack([(1 - mean) / 2, (1 + mean) / 2], axis=-1)

    def predict(self, params: Stump | TopDownTree | Halfspace, codes: jax.Array,
                key: jax.Array | None) -> jax.Array:
        """The majority vote; ties to the earliest round's vote (no fixed class)."""
        return ((smooth_boost_predict(params, self.predict_fn, codes) + 1) // 2).astype(
            np.int32)

    def describe(self, params: Any, spec: Any, classes: tuple) -> str:
        """The vote of the released hypotheses, readable."""
        describe = {"stump": describe_stumps, "tree": describe_trees,
                    "halfspace": describe_halfspaces}[self.weak_learner]
        return describe(params, spec, classes)

    def importances(self, params: Any, spec: Any) -> np.ndarray:
        """Voting stumps and trees: the number of voting hypotheses that read each feature;
        halfspaces: the mean absolute weight of each feature's codes in the averaged
        direction."""
        scores = np.zeros(spec.n_features)
        if self.weak_learner == "halfspace":
            return np.abs(np.asarray(params.weight).mean(0)).mean(-1)
        if self.weak_learner == "stump":
            for f, polarity, constant in zip(np.asarray(params.feature),
                                             np.asarray(params.polarity),
                                             np.asarray(params.constant), strict=True):
                if polarity != 0 and not constant:
                    scores[f] += 1.0
            return scores
        for features, label in zip(np.asarray(params.feature), np.asarray(params.label),
                                   strict=True):
            if label.any():
                scores[np.unique(features)] += 1.0
        return scores

    def footprint(self, m: int, n: int, max_codes: int, n_classes: int) -> float:
        """The codes, per-row levels and the per-level (per-slot) histograms of the rounds."""
        levels = self.n_rounds * self.resolution + 1
        slots = self.tree_splits + 1 if self.weak_learner == "tree" else 1
        return 16.0 * m * n + 8.0 * levels * slots * n * max_codes * 2 * self.n_rounds
