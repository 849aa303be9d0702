"""Private smooth boosting (``method="smooth_boost"``): LazyBregBoost (Bun, Carmosino & Sorrell)
over DP weak learners — Asadi et al.'s DP-1R stumps and DP-TopDown trees, and BCS20's
large-margin halfspaces; specs ``docs/specs/private-smooth-boosting.md`` and
``docs/specs/private-boosted-stumps-smooth-reweighting.md``.

Release order under DP: the sample size ``ñ`` (a noisy row count with a share ``size_share`` of
``ε`` under add/remove neighbours unless ``public_size`` is declared; the row count under
replace-one), the data made a sample of exactly ``ñ`` examples
(:func:`~dpjax.ensembles.smooth_boost.sample_to_size`), then ``R`` weak hypotheses
(:func:`active_rounds`, at most ``n_rounds``), each with the per-round budget of the
``accounting`` route (:func:`round_budget`).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.data import DataDependentWarning
from dpjax.ensembles.smooth_boost import (
    WeakLearner,
    sample_to_size,
    smooth_boost,
    smooth_boost_decision,
    smooth_boost_predict,
)
from dpjax.learners.base import (
    FitContext,
    Learner,
    choice,
    hyper,
    positive_float,
    positive_int,
    register,
    traced,
    unit_interval,
)
from dpjax.linear.halfspace import (
    RESOLUTION,
    Halfspace,
    describe_halfspaces,
    dp_halfspace_learner,
    halfspace_value,
)
from dpjax.mechanisms.budgets import ACCOUNTING, round_epsilon, round_rho
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.mechanisms.rounding import float32_below, round_down
from dpjax.trees.stumps import Stump, describe_stumps, dp_stump_learner, stump_predict
from dpjax.trees.topdown import (
    CALIBRATIONS,
    SPLIT_SENSITIVITY,
    TopDownTree,
    describe_trees,
    dp_topdown_learner,
    topdown_predict,
)

WEAK_LEARNERS = ("stump", "tree", "halfspace")
MAX_SIZE = float(2**24 - 1)
"""The released size is clipped to ``[1, 2**24 − 1]`` (post-processing): float32 and int32 then
hold it exactly (the level counts and the sensitivity use the same integer)."""
PREDICT: dict[str, Callable[[Any, jax.Array], jax.Array]] = {
    "stump": stump_predict, "tree": topdown_predict, "halfspace": halfspace_value}
"""The votes of the final vote: the weak learners' own, except the halfspaces' unrounded values
(the averaged halfspace ``w̄·x`` of BCS20 Alg. 5; post-processing)."""


def round_budget(epsilon_total: ArrayLike, epsilon_size: ArrayLike, rounds: ArrayLike,
                 delta: float, accounting: str, gaussian: bool,
                 square_share: float = 1.0) -> jax.Array:
    """Per-round ``ε_0`` of ``rounds`` rounds beside the size release (``epsilon_size``):
    :func:`~dpjax.mechanisms.budgets.round_epsilon` for pure-DP weak learners (a round of
    releases of shares ``s_k`` of ``ε_0`` has ``square_share = Σ s_k²``), or for Gaussian
    ones the ``ε_0 = sqrt(2ρ_0)`` of their zCDP ``ρ_0``
    (:func:`~dpjax.mechanisms.budgets.round_rho`, ``ρ_0 = ε_0²/2``)."""
    if gaussian:
        return jnp.sqrt(2.0 * round_rho(epsilon_total, epsilon_size, rounds, delta))
    return round_epsilon(epsilon_total, epsilon_size, rounds, delta, accounting, square_share)


def active_rounds(round_eps: Callable[[jax.Array], jax.Array], size: ArrayLike,
                  kappa: ArrayLike, min_signal: ArrayLike, cost_per_signal: float,
                  n_rounds: int) -> jax.Array:
    """The public schedule ``R``: the most rounds ``r <= n_rounds`` whose weak learner keeps
    its signal ``ε_0(r)·κñ/c`` at ``min_signal`` or more (at least 1; a function of ``ε``, κ
    and the released size only). ``c`` (``cost_per_signal``) makes the signal the inverse
    temperature of the learner's selection: ``η = ε_b/(2Δ) = ε_b·κñ/4`` for DP-1R (stumps spec
    §3.5, Thm 4.2), ``ε_b/(2t)/(2·16/(κñ)) = ε_b·κñ/(64t)`` for DP-TopDown's splits, and for the
    halfspace (``c = 4``) the inverse noise ``1/σ = sqrt(2ρ_0)·κñ/4`` of any fixed direction of
    the weighted mean. Asadi et al. tune ``τ`` per ε on the data (their best stumps on adult:
    5 rounds at ε = 0.05, 39 at ε = 1, i.e. η ≈ 40–75)."""
    rounds = jnp.arange(1, n_rounds + 1, dtype=jnp.float32)
    signal = round_eps(rounds) * jnp.asarray(kappa) * jnp.asarray(size, jnp.float32)
    enough = signal / cost_per_signal >= jnp.asarray(min_signal)
    return jnp.clip(jnp.sum(enough).astype(jnp.float32), 1.0, float(n_rounds))


@register
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
    (sweepable): the number of rounds is the public schedule :func:`active_rounds` (at most
    ``n_rounds``; later rounds abstain). ``accounting`` composes the rounds: ``"basic"``
    (``ε/R`` each), ``"advanced"`` (Dwork–Rothblum–Vadhan, with the requested ``δ``),
    ``"zcdp"`` (each ``ε_0``-DP round is ``ε_0²/2``-zCDP), or ``"auto"`` (zCDP; basic when
    ``δ = 0``). Each route gives a round the larger of its own and the basic budget, and the
    ledger reports the smaller of basic composition and the route's total.

    Defaults: Asadi et al.'s most frequent settings (``κ = 0.35``; ``λ = 0.5``, their 0.25 in
    the margin form), not tuned on the data being fitted; ``n_rounds`` and ``min_signal``
    from a sweep on adult (train/test files). Choosing ``kappa``, ``learning_rate`` or
    ``min_signal`` by a sweep on the private data spends privacy no ledger sees (as the paper's
    cross-validation does, spec §6.3): tune on public or separately budgeted data."""

    name: ClassVar[str] = "smooth_boost"
    binary: ClassVar[bool] = True
    weak_learner: str = hyper("stump", choice(*WEAK_LEARNERS))
    n_rounds: int = hyper(15, positive_int(1024))
    kappa: float = traced(0.35, unit_interval(open_high=True))
    learning_rate: float = traced(0.5, positive_float)
    min_signal: float = traced(50.0, positive_float)
    size_share: float = hyper(0.05, unit_interval(open_high=True))
    tree_splits: int = hyper(2, positive_int(64))
    leaf_share: float = hyper(0.1, unit_interval(open_high=True))
    calibration: str = hyper("provable", choice(*CALIBRATIONS))
    accounting: str = hyper("auto", choice("auto", *ACCOUNTING))

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
        """``c`` of :func:`active_rounds` for the weak learner."""
        if self.weak_learner == "tree":
            return (2.0 * self.tree_splits * SPLIT_SENSITIVITY[self.calibration]
                    / (1.0 - self.leaf_share))
        return 4.0

    @property
    def square_share(self) -> float:
        """``Σ s_k²`` over the releases of one round (shares ``s_k`` of its ``ε_0``): 1 for a
        stump; ``t·(1/(2t))² + (1/2)²`` for a tree's splits and leaves."""
        if self.weak_learner == "tree":
            return (1.0 - self.leaf_share) ** 2 / self.tree_splits + self.leaf_share**2
        return 1.0

    @property
    def resolution(self) -> int:
        return RESOLUTION if self.weak_learner == "halfspace" else 1

    def not_private(self) -> list[str]:
        """The paper's DP-TopDown calibration (stumps spec §4.5: Lemma 9.2 is false)."""
        if self.calibration != "paper":
            return []
        what = "DP-TopDown splits at the paper's 4/(κn) sensitivity (false: spec §4.5)"
        warnings.warn(f"smooth_boost: {what}; the model is NOT differentially private (the "
                      "ledger says so)", DataDependentWarning, stacklevel=4)
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
        rho = None if epsilon is None else 0.5 * epsilon**2
        return dp_halfspace_learner(codes, rho, kappa, size, self.round_delta(context.delta))

    def round_delta(self, delta: float) -> float:
        """The ``δ`` at which a Gaussian round states its own ``(ε, δ)``: the largest float32
        at most ``δ/n_rounds``, so that the rounds' ``δ`` sum within ``δ`` in the basic view."""
        return float32_below(delta / self.n_rounds)

    def check_request(self, n_rows: int, private: bool, delta: float) -> None:
        if self.weak_learner == "halfspace" and private and delta <= 0.0:
            raise ValueError("weak_learner='halfspace' adds Gaussian noise: it needs delta > 0")

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced: jax.Array) -> tuple[Any, Any]:
        gaussian = self.weak_learner == "halfspace"
        kappa, learning_rate = traced["kappa"], traced["learning_rate"]
        rounds = jnp.float32(self.n_rounds)
        n_rows, n_features = codes.shape
        k_size, k_sample, k_rounds = jax.random.split(key, 3)
        costs: dict[str, Any] = {}
        labels = 2 * jnp.asarray(y, jnp.int32) - 1
        if epsilon is None:
            size, per_round = jnp.float32(n_rows), None
            multiplicity = jnp.concatenate([jnp.ones(n_rows, jnp.int32),
                                            jnp.zeros(2, jnp.int32)])
        else:
            epsilon = jnp.asarray(epsilon, jnp.float32)
            size_eps = round_down(epsilon * (self.size_share if context.size is None else 0.0))
            if context.size is None:
                size, costs["row count"] = laplace_mechanism(
                    k_size, jnp.int32(n_rows), 1, size_eps, integer=True, label="sens. 1")
            else:
                size = context.size
            size = jnp.clip(jnp.asarray(size, jnp.float32), 1.0, MAX_SIZE)

            def round_eps(r: jax.Array) -> jax.Array:
                return round_budget(epsilon, size_eps, r, context.delta,
                                    self.composition, gaussian, self.square_share)

            rounds = active_rounds(round_eps, size, kappa, traced["min_signal"],
                                   self.cost_per_signal, self.n_rounds)
            per_round = round_eps(rounds)
            multiplicity = sample_to_size(k_sample, n_rows, size)
        padded_codes = jnp.concatenate([codes, jnp.zeros((2, n_features), codes.dtype)])
        padded_labels = jnp.concatenate([labels, jnp.array([1, -1], jnp.int32)])
        hypotheses = smooth_boost(k_rounds, padded_codes, padded_labels,
                                  self.weak(context, per_round, kappa, size), self.n_rounds,
                                  kappa, learning_rate, multiplicity=multiplicity)
        live = jnp.arange(self.n_rounds) < rounds       # rounds after R release nothing
        return self.released(hypotheses, live, costs, epsilon is not None), costs

    def released(self, hypotheses: Any, live: jax.Array, costs: dict[str, Any],
                 private: bool) -> Any:
        """The live rounds' hypotheses without their costs, which go to ``costs`` (gated: an
        abstaining round spent nothing). Every field of a round after ``R`` is zeroed (its votes
        are 0): those rounds were computed (static shapes) but are not released."""
        if self.weak_learner == "stump":
            if private:
                costs["1-rules (DP-1R)"] = hypotheses.cost.gated(live)
            return Stump(jnp.where(live, hypotheses.feature, 0),
                         jnp.where(live, hypotheses.code, 0),
                         jnp.where(live, hypotheses.polarity, 0),
                         hypotheses.constant | ~live, None)
        if self.weak_learner == "tree":
            if private:
                costs["tree splits (DP-TopDown)"] = hypotheses.split_cost.gated(live[:, None])
                costs["tree leaf labels (DP-TopDown)"] = hypotheses.leaf_cost.gated(live)
            def masked(a: jax.Array) -> jax.Array:
                return jnp.where(live[:, None], a, 0)

            return TopDownTree(masked(hypotheses.split_leaf), masked(hypotheses.feature),
                               masked(hypotheses.code), masked(hypotheses.label), None, None)
        if private:
            costs["halfspaces (Gaussian)"] = hypotheses.cost.gated(live)
        return Halfspace(jnp.where(live[:, None, None], hypotheses.weight, 0.0), None)

    @property
    def predict_fn(self) -> Callable[[Any, jax.Array], jax.Array]:
        """The weak learner's vote ``(hypothesis, codes) -> [m]``."""
        return PREDICT[self.weak_learner]

    def proba(self, params: Stump | TopDownTree | Halfspace, codes: jax.Array) -> jax.Array:
        """``[(1 − f̂)/2, (1 + f̂)/2]`` with ``f̂`` the mean vote in ``[−1, 1]``."""
        mean = smooth_boost_decision(params, self.predict_fn, codes)
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
