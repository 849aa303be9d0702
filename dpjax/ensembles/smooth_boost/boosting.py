"""Private smooth boosting's fit: LazyBregBoost (:mod:`~dpjax.ensembles.smooth_boost.reweighting`)
over a DP weak learner, with its public schedule and budget; specs
``docs/specs/private-smooth-boosting.md`` and
``docs/specs/private-boosted-stumps-smooth-reweighting.md``.

Release order under DP: the sample size ``ñ`` (a noisy row count with a share ``size_share`` of
``ε`` under add/remove neighbours unless ``public_size`` is declared, :func:`~dpjax.mechanisms.
release_size`; the row count under replace-one), the data made a sample of exactly ``ñ``
examples (:func:`~dpjax.ensembles.smooth_boost.reweighting.sample_to_size`), then ``R`` weak
hypotheses (:func:`affordable_rounds`, at most ``n_rounds``), each with the per-round budget of
the ``accounting`` route (:func:`dpjax.privacy.composition.round_budget`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.ensembles.smooth_boost.halfspace import Halfspace
from dpjax.ensembles.smooth_boost.reweighting import sample_to_size, smooth_boost
from dpjax.ensembles.smooth_boost.stumps import Stump
from dpjax.ensembles.smooth_boost.topdown import TopDownTree
from dpjax.learner import FitContext, records
from dpjax.mechanisms.laplace import laplace_releases
from dpjax.mechanisms.size import LABEL as SIZE_LABEL
from dpjax.mechanisms.size import (
    MAX_SIZE,
    class_counts_plan,
    class_totals,
    clip_size,
    size_plan,
)
from dpjax.privacy import Cost
from dpjax.privacy.composition import round_budget, share

if TYPE_CHECKING:
    from dpjax.ensembles.smooth_boost.config import SmoothBoost


def affordable_rounds(round_eps: Callable[[jax.Array], jax.Array], size: ArrayLike,
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
    enough = round_signal(round_eps, rounds, size, kappa, cost_per_signal) >= jnp.asarray(
        min_signal)
    return jnp.clip(jnp.sum(enough).astype(jnp.float32), 1.0, float(n_rounds))


def round_signal(round_eps: Callable[[jax.Array], jax.Array], rounds: ArrayLike,
                 size: ArrayLike, kappa: ArrayLike, cost_per_signal: float) -> jax.Array:
    """The weak learner's signal ``ε_0(r)·κñ/c`` when ``r`` rounds share the budget
    (:func:`affordable_rounds`)."""
    return (round_eps(jnp.asarray(rounds, jnp.float32)) * jnp.asarray(kappa)
            * jnp.asarray(size, jnp.float32) / cost_per_signal)


MAJORITY_LABEL = "class counts (majority fallback)"


def majority_fallback(released: tuple[jax.Array, Cost], learns: jax.Array,
                      costs: dict[str, Cost]) -> jax.Array:
    """Where the public schedule says even one round cannot beat its noise (``~learns``), the
    rounds' budget releases the class counts instead (``released``: the noisy counts and their
    cost, :func:`~dpjax.mechanisms.size.class_counts_plan` at the rounds' budget): the vote
    (``±1``) of the noisy majority, its cost entered gated on the branch (``learns`` is
    public)."""
    counts, cost = released
    costs[MAJORITY_LABEL] = cost.gated(~learns)
    return jnp.where(counts[1] >= counts[0], 1, -1).astype(jnp.int32)


def fit(config: SmoothBoost, key: jax.Array, codes: jax.Array, y: jax.Array,
        epsilon: jax.Array | None, context: FitContext, **traced: ArrayLike) -> tuple[Any, Any]:
    """Fit LazyBregBoost with ``config``'s weak learner (module docstring): the released
    hypotheses (rounds past ``R`` zeroed) and the costs of every release (empty without DP).
    The traced ``kappa``, ``learning_rate`` and ``min_signal`` are taken from ``traced`` where
    given, else from ``config``."""
    traced = config.resolve_traced(traced)
    gaussian = config.weak_learner == "halfspace"
    kappa, learning_rate = traced["kappa"], traced["learning_rate"]
    rounds = jnp.float32(config.n_rounds)
    n_features = codes.shape[1]
    k_size, k_sample, k_rounds, k_majority = jax.random.split(key, 4)
    costs: dict[str, Any] = {}
    record = records(y, 2)                      # a padding row (label 2) has multiplicity 0
    labels = jnp.where(record, 2 * jnp.asarray(y, jnp.int32) - 1, 1)      # its levels in range
    n_rows = jnp.sum(record, dtype=jnp.int32)
    if epsilon is None:
        size, per_round = n_rows.astype(jnp.float32), None
        multiplicity = jnp.concatenate([record.astype(jnp.int32), jnp.zeros(2, jnp.int32)])
    else:
        epsilon = jnp.asarray(epsilon, jnp.float32)
        size_share = config.size_share if context.size is None else 0.0
        size_eps = share(epsilon, size_share)
        # the released size and (stumps) the fallback's class counts at the rounds' budget,
        # drawn at one point by one sampler, each with its own key
        stump = config.weak_learner == "stump"
        keys, plans = [], []
        if context.size is None:
            keys, plans = [k_size], [size_plan(n_rows, size_eps)]
        if stump:
            keys.append(k_majority)
            plans.append(class_counts_plan(class_totals(y, 2), share(epsilon, 1.0 - size_share),
                                           context.sensitivity))
        releases = laplace_releases(keys, plans) if plans else []
        if context.size is None:
            size, costs[SIZE_LABEL] = clip_size(releases[0][0]), releases[0][1]
        else:
            size = jnp.clip(jnp.asarray(context.size, jnp.float32), 1.0, MAX_SIZE)

        def round_eps(r: jax.Array) -> jax.Array:
            return round_budget(epsilon, size_eps, r, context.delta, config.composition,
                                gaussian, config.round_shares, config.n_rounds)

        rounds = affordable_rounds(round_eps, size, kappa, traced["min_signal"],
                                   config.cost_per_signal, config.n_rounds)
        per_round = round_eps(rounds)
        multiplicity = sample_to_size(k_sample, record, size)
        if stump:                               # the fallback is a constant stump
            learns = round_signal(round_eps, 1.0, size, kappa, config.cost_per_signal) >= (
                traced["fallback_signal"])
            majority = majority_fallback(releases[-1], learns, costs)
            rounds = jnp.where(learns, rounds, 0.0)
    padded_codes = jnp.concatenate([codes, jnp.zeros((2, n_features), codes.dtype)])
    padded_labels = jnp.concatenate([labels, jnp.array([1, -1], jnp.int32)])
    hypotheses = smooth_boost(k_rounds, padded_codes, padded_labels,
                              config.weak(context, per_round, kappa, size), config.n_rounds,
                              kappa, learning_rate, multiplicity=multiplicity)
    live = jnp.arange(config.n_rounds) < rounds       # rounds after R release nothing
    model = released(config.weak_learner, hypotheses, live, costs, epsilon is not None)
    if epsilon is not None and config.weak_learner == "stump":   # round 0 votes the majority
        first = (jnp.arange(config.n_rounds) == 0) & ~learns
        model = model._replace(polarity=jnp.where(first, majority, model.polarity))
    return model, costs


def released(weak_learner: str, hypotheses: Any, live: jax.Array, costs: dict[str, Cost],
             private: bool) -> Stump | TopDownTree | Halfspace:
    """The live rounds' hypotheses without their costs, which go to ``costs`` (gated: an
    abstaining round spent nothing). Every field of a round after ``R`` is zeroed (its votes
    are 0): those rounds were computed (static shapes) but are not released."""
    if weak_learner == "stump":
        if private:
            costs["1-rules (DP-1R)"] = hypotheses.cost.gated(live)
        return Stump(jnp.where(live, hypotheses.feature, 0),
                     jnp.where(live, hypotheses.code, 0),
                     jnp.where(live, hypotheses.polarity, 0),
                     hypotheses.constant | ~live, None)
    if weak_learner == "tree":
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


__all__ = ["affordable_rounds", "fit", "released"]
