"""Private smooth boosting (``method="smooth_boost"``): LazyBregBoost (Bun, Carmosino & Sorrell)
over DP weak learners (Asadi et al.), specs ``docs/specs/private-smooth-boosting.md`` and
``docs/specs/private-boosted-stumps-smooth-reweighting.md``.

Release order under DP: the sample size ``ñ`` (a noisy row count with a share ``size_share`` of
``ε`` under add/remove neighbours unless ``public_size`` is declared; the row count under
replace-one), the data made a sample of exactly ``ñ`` examples
(:func:`~dpjax.ensembles.smooth_boost.sample_to_size`), then ``R`` weak hypotheses
(:func:`active_rounds`, at most ``n_rounds``), each with ``ε_b = (ε − ε_size)/R`` (basic
composition; rounded down).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.ensembles.smooth_boost import (
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
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.mechanisms.rounding import round_down
from dpjax.trees.stumps import Stump, describe_stumps, dp_stump_learner, stump_predict

WEAK_LEARNERS = ("stump",)
MAX_SIZE = float(2**24 - 1)
"""The released size is clipped to ``[1, 2**24 − 1]`` (post-processing): float32 and int32 then
hold it exactly (the level counts and the sensitivity use the same integer)."""


def active_rounds(epsilon_rounds: ArrayLike, size: ArrayLike, kappa: ArrayLike,
                  min_signal: ArrayLike, n_rounds: int) -> jax.Array:
    """The public schedule ``R``: the most rounds whose DP-1R keeps the exponential mechanism's
    inverse temperature ``η = ε_b/(2Δ) = ε_b·κñ/4`` (stumps spec §3.5, Thm 4.2) at
    ``min_signal`` or more, ``R = ⌊ε_rounds·κñ/(4·min_signal)⌋`` in ``[1, n_rounds]`` (a
    function of ``ε``, κ and the released size only). Asadi et al. tune ``τ`` per ε on the data
    (their best on adult: 5 rounds at ε = 0.05, 39 at ε = 1, i.e. η ≈ 40–75); with the one-hot
    1-rules more rounds than ~15 did not help on adult."""
    affordable = jnp.floor(jnp.asarray(epsilon_rounds, jnp.float32) * jnp.asarray(kappa)
                           * jnp.asarray(size, jnp.float32) / (4.0 * jnp.asarray(min_signal)))
    return jnp.clip(affordable, 1.0, float(n_rounds))


def smooth_budgets(epsilon: jax.Array, size_share: float) -> dict[str, jax.Array]:
    """``size`` (the noisy row count, ``size_share·ε``; pass 0 when the size is public) and
    ``rounds`` (what is left for the weak hypotheses), rounded down."""
    epsilon = jnp.asarray(epsilon, jnp.float32)
    size = round_down(epsilon * size_share)
    return {"size": size, "rounds": round_down(epsilon - size)}


@register
@dataclasses.dataclass(frozen=True)
class SmoothBoost(Learner):
    """LazyBregBoost with DP-1R stumps (binary labels): ``n_rounds`` rounds, each a 1-rule
    (one-hot literal ``code_f = b``, its negation, or a constant) chosen by permute-and-flip on
    the weighted error under the κ-dense measure of the lazy multiplicative update; the model
    is the unweighted majority vote. ``kappa`` (density κ: each example's mass is at most
    ``1/(κñ)``) and ``learning_rate`` (λ of the gain update, BCS20; twice Asadi et al.'s
    margin-form λ) are traced (sweepable), as is ``min_signal``: the number of rounds is the
    public schedule :func:`active_rounds` (at most ``n_rounds``; later rounds abstain).
    Defaults: Asadi et al.'s most frequent settings (``κ = 0.35``; ``λ = 0.5``, their 0.25 in
    the margin form), not tuned on the data being fitted; ``n_rounds`` and ``min_signal``
    from a sweep on adult (train/test files). Choosing ``kappa``, ``learning_rate`` or
    ``min_signal`` by a sweep on the private data spends privacy no ledger sees (as the paper's
    cross-validation does, spec §6.3): tune on public or separately budgeted data."""

    name: ClassVar[str] = "smooth_boost"
    weak_learner: str = hyper("stump", choice(*WEAK_LEARNERS))
    n_rounds: int = hyper(15, positive_int(1024))
    kappa: float = traced(0.35, unit_interval(open_high=True))
    learning_rate: float = traced(0.5, positive_float)
    min_signal: float = traced(50.0, positive_float)
    size_share: float = hyper(0.05, unit_interval(open_high=True))

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced: jax.Array) -> tuple[Stump, Any]:
        if context.n_classes != 2:
            raise ValueError(f"smooth_boost is a binary classifier; got {context.n_classes} "
                             "classes")
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
            budget = smooth_budgets(epsilon, self.size_share if context.size is None else 0.0)
            if context.size is None:
                noisy, costs["row count"] = laplace_mechanism(
                    k_size, jnp.int32(n_rows), 1, budget["size"], integer=True, label="sens. 1")
                size = noisy
            else:
                size = context.size
            size = jnp.clip(jnp.asarray(size, jnp.float32), 1.0, MAX_SIZE)
            rounds = active_rounds(budget["rounds"], size, kappa, traced["min_signal"],
                                   self.n_rounds)
            per_round = round_down(budget["rounds"] / rounds)
            multiplicity = sample_to_size(k_sample, n_rows, size)
        padded_codes = jnp.concatenate([codes, jnp.zeros((2, n_features), codes.dtype)])
        padded_labels = jnp.concatenate([labels, jnp.array([1, -1], jnp.int32)])
        learner = dp_stump_learner(context.n_codes_per_feature, per_round, kappa, size)
        stumps = smooth_boost(k_rounds, padded_codes, padded_labels, learner, self.n_rounds,
                              kappa, learning_rate, multiplicity=multiplicity)
        live = jnp.arange(self.n_rounds) < rounds       # rounds after R release nothing
        if epsilon is not None:
            costs["1-rules (DP-1R)"] = stumps.cost.gated(live)
        released = Stump(jnp.where(live, stumps.feature, 0), jnp.where(live, stumps.code, 0),
                         jnp.where(live, stumps.polarity, 0), stumps.constant | ~live, None)
        return released, costs

    def proba(self, params: Stump, codes: jax.Array) -> jax.Array:
        """``[(1 − f̂)/2, (1 + f̂)/2]`` with ``f̂`` the mean vote in ``[−1, 1]``."""
        mean = smooth_boost_decision(params, stump_predict, codes)
        return jnp.stack([(1 - mean) / 2, (1 + mean) / 2], axis=-1)

    def predict(self, params: Stump, codes: jax.Array, key: jax.Array | None) -> jax.Array:
        """The majority vote; ties to the earliest round's vote (no fixed class)."""
        return ((smooth_boost_predict(params, stump_predict, codes) + 1) // 2).astype(np.int32)

    def describe(self, params: Stump, spec: Any, classes: tuple) -> str:
        """The vote of the released 1-rules (:func:`~dpjax.trees.stumps.describe_stumps`)."""
        return describe_stumps(params, spec, classes)

    def footprint(self, m: int, n: int, max_codes: int, n_classes: int) -> float:
        """The codes, per-row levels and the per-level histograms of the rounds."""
        return 16.0 * m * n + 8.0 * (self.n_rounds + 1) * n * max_codes * 2 * self.n_rounds
