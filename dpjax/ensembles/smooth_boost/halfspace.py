"""The private large-margin halfspace weak learner ("centering with noise") — Bun, Carmosino &
Sorrell, "Efficient, Noise-Tolerant, and Private Learning via Boosting" (COLT 2020) §5.2,
Thm 27; spec ``docs/specs/private-smooth-boosting.md`` §4.

Examples are the one-hot encodings of the binned codes scaled to the unit sphere,
``x = onehot(codes)/sqrt(d)`` (``d`` features, ``‖x‖₂ = 1``: the unit-ball condition of §4.1
holds by construction). One round releases the weighted mean ``z = Σ_i μ̂(i)·y_i·x_i`` (the
non-private weak learner of Servedio 2003, §4.2) with Gaussian noise, ``ẑ = z + ν``, and the
hypothesis is the normalised halfspace ``h(x) = ẑ·x/‖ẑ‖₂ ∈ [−1, 1]`` (§4.3, the resolution of
A8; post-processing). A linear function of one-hot bins is an additive model: ``h(x) =
Σ_f w[f, code_f]/sqrt(d)``.

Privacy (replace-one, ``ζ = 1/(κn)``): ``‖z − z'‖₂ <= 2(1/(κn) + ζ) = 4/(κn)`` (Thm 27's
proof, the "generic" column of §3.3), so the exact discrete Gaussian on a fixed-point grid
(:func:`~dpjax.mechanisms.gaussian.gaussian_mechanism`) makes a round ``ρ``-zCDP. ``z`` is
computed from int32 signed counts per level of the
:class:`~dpjax.ensembles.smooth_boost.LevelMeasure`, which needs votes on a grid: the
votes the booster reweights by are rounded to ``{−1 + 2j/Q}`` (resolution ``Q``, post-processing
of the released ``ŵ``), and the float rounding of ``z`` is added to the sensitivity
(:func:`halfspace_sensitivity`). The final vote averages the unrounded values (the averaged
halfspace ``w̄ = (1/T) Σ_t ŵ_t`` of Alg. 5, post-processing): rounding them too would
silence most of them (``|ŵ·x|`` is typically below ``1/Q``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.data.binning import FeatureSpec
from dpjax.data.describe import code_label
from dpjax.ensembles.smooth_boost.reweighting import LevelMeasure, WeakLearner
from dpjax.ensembles.smooth_boost.stumps import level_rounding
from dpjax.mechanisms.gaussian import gaussian_mechanism
from dpjax.privacy import Cost
from dpjax.trees.histogram import node_histogram, valid_thresholds

RESOLUTION = 8
"""Votes are rounded to ``{−1 + 2j/8}``: at most ``1/8`` from the halfspace's value."""


class Halfspace(NamedTuple):
    """``h(x) = Σ_f weight[f, code_f]/sqrt(d)`` rounded to the vote grid; ``weight [d, K]`` is
    the released direction ``ẑ/‖ẑ‖₂`` (all zero: the round abstains)."""

    weight: jax.Array
    cost: Cost


def halfspace_sensitivity(size: ArrayLike, kappa: ArrayLike, levels: int) -> jax.Array:
    """``Δ₂ = 4/(κn)`` (Thm 27) plus twice the rounding of ``z``: each coordinate is
    ``Σ_c μ̂_c·S_c/sqrt(d)`` over signed int32 counts, within a relative
    ``level_rounding(levels)`` of ``A_{f,b} = Σ_c μ̂_c|S_c|/sqrt(d)`` (plus ``2**−22`` for the
    scaling), and ``Σ A² <= 1`` since ``Σ_b A_{f,b} <= 1/sqrt(d)`` for every feature."""
    unit = 1.0 / (jnp.asarray(kappa, jnp.float32) * jnp.asarray(size, jnp.float32))
    return 4.0 * unit + 2.0 * (level_rounding(levels) + 2.0**-22)


def weighted_mean(codes: jax.Array, y: jax.Array, measure: LevelMeasure,
                  n_codes: int) -> jax.Array:
    """``z = Σ_i μ̂(i)·y_i·x_i``, ``[d, K]``, from int32 signed counts per level and code."""
    n_features = codes.shape[1]
    label = jnp.stack([y < 0, y > 0], axis=-1).astype(jnp.int32) * measure.multiplicity[:, None]
    hist = node_histogram(codes, measure.level, label, measure.weight.shape[0], n_codes)
    signed = (hist[..., 1] - hist[..., 0]).astype(jnp.float32)               # [L, d, K]
    return jnp.sum(measure.weight[:, None, None] * signed, axis=0) / math.sqrt(n_features)


def dp_halfspace(key: jax.Array, measure: LevelMeasure, codes: jax.Array, y: jax.Array, *,
                 n_codes_per_feature: np.ndarray, rho: ArrayLike | None, kappa: ArrayLike,
                 size: ArrayLike, delta: float) -> Halfspace:
    """One round of ``ŴL(S, μ̂, σ)`` (§4.3): :func:`weighted_mean` with the discrete Gaussian
    at zCDP ``rho`` (``None``: no noise, not private; ``delta`` states the round's own
    ``(ε, δ)`` in its cost), normalised."""
    n_codes_per_feature = np.asarray(n_codes_per_feature)
    n_features, n_codes = len(n_codes_per_feature), int(n_codes_per_feature.max())
    valid = valid_thresholds(n_codes_per_feature + 1, n_codes)
    z = weighted_mean(codes, y, measure, n_codes)
    if rho is None:
        cost = Cost(jnp.float32(0.0), jnp.float32(0.0), "none (not private)")
    else:
        sensitivity = halfspace_sensitivity(size, kappa, measure.weight.shape[0])
        z, cost = gaussian_mechanism(key, z, sensitivity, rho,
                                     bound=1.0 / math.sqrt(n_features), delta=delta,
                                     label="4/(κn), weighted mean")
    z = jnp.where(valid, z, 0.0)
    norm = jnp.sqrt(jnp.sum(z * z))
    return Halfspace(jnp.where(norm > 0, z / jnp.where(norm > 0, norm, 1.0), 0.0), cost)


def halfspace_value(halfspace: Halfspace, codes: jax.Array) -> jax.Array:
    """``h(x) = ŵ·x = Σ_f weight[f, code_f]/sqrt(d)`` in ``[−1, 1]``, ``[m]``."""
    n_features = codes.shape[1]
    picked = jnp.take_along_axis(halfspace.weight, codes.T.astype(jnp.int32), axis=1)   # [d, m]
    return jnp.clip(picked.sum(0) / math.sqrt(n_features), -1.0, 1.0)


def halfspace_predict(halfspace: Halfspace, codes: jax.Array,
                      resolution: int = RESOLUTION) -> jax.Array:
    """Votes ``[m]`` on the grid ``{−1 + 2j/Q}``: :func:`halfspace_value` rounded (what the
    booster's measure reads)."""
    value = halfspace_value(halfspace, codes)
    return 2.0 * jnp.round(0.5 * resolution * (1.0 + value)) / resolution - 1.0


def dp_halfspace_learner(n_codes_per_feature: np.ndarray, rho: ArrayLike | None,
                         kappa: ArrayLike, size: ArrayLike, delta: float) -> WeakLearner:
    """The halfspace learner as a :class:`~dpjax.ensembles.smooth_boost.WeakLearner` with
    votes of resolution :data:`RESOLUTION` and per-round zCDP ``rho`` (``None``: not
    private)."""
    def fit(key: jax.Array, measure: LevelMeasure, codes: jax.Array, y: jax.Array) -> Halfspace:
        return dp_halfspace(key, measure, codes, y, n_codes_per_feature=n_codes_per_feature,
                            rho=rho, kappa=kappa, size=size, delta=delta)

    return WeakLearner(fit, halfspace_predict, resolution=RESOLUTION)


def describe_halfspaces(halfspaces: Halfspace, spec: FeatureSpec, classes: tuple) -> str:
    """The averaged halfspace ``w̄ = (1/T) Σ_t ŵ_t`` as an additive score: the bins with the
    largest weights towards each class."""
    weight = np.asarray(halfspaces.weight)
    voting = int((np.abs(weight).reshape(weight.shape[0], -1).sum(1) > 0).sum())
    mean = weight.mean(0)
    order = np.argsort(-np.abs(mean), axis=None)[:12]
    lines = [f"average of {voting} halfspaces over the one-hot bins (largest weights):"]
    for flat in order:
        f, b = np.unravel_index(flat, mean.shape)
        if mean[f, b] == 0:
            break
        towards = classes[1] if mean[f, b] > 0 else classes[0]
        lines.append(f"  {code_label(spec, int(f), int(b))}: {mean[f, b]:+.3f} (-> {towards})")
    return "\n".join(lines)
