"""The individual filter of private Newton boosting (``individual > 1``; Feldman & Zrnic 2021,
``docs/individual_filter.md``): each record's own privacy loss per round, read off its clipped
gradient and hessian, and the filter that keeps every record's total within the rounds'
budget.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.ensembles.newton.releases import GRAD_UNIT, round_sensitivity
from dpjax.mechanisms.exponential import GAMMA_SLACK
from dpjax.mechanisms.laplace import integer_grid

FILTER_LABEL = "rounds and level draws (individual filter)"
FILTER_MARGIN = 1e-4
"""The least relative margin of the individual filter's cap (:func:`filter_margin`)."""


def filter_margin(rounds: int, levels: int) -> float:
    """The individual filter stops each record at ``(1 − margin)·B``: a record's float32
    running sum of per-round losses (``rounds`` additions, each loss a few float32 operations
    over up to ``levels + 1`` terms) is within ``(rounds·(levels + 4) + 1)·2⁻²³`` of ``B``
    relative, so at least :data:`FILTER_MARGIN`, more for thousands of rounds (static)."""
    return max(FILTER_MARGIN, (rounds * (levels + 4) + 1) * 2.0**-23)


def individual_losses(stats: jax.Array, leaves_epsilon: ArrayLike, level_epsilon: ArrayLike,
                      levels: int, bound: ArrayLike | None) -> jax.Array:
    """Each record's privacy loss in one round (add/remove), ``[m]``, from its integer
    contributions ``(g, h)`` (``[m, 2]`` fixed-point units), ``docs/individual_filter.md``:

    * the exact Laplace release of the ``[cells, 2]`` sums at ``ε_r`` (L1 sensitivity
      ``Δ = 2**GRAD_BITS + 2`` units) on its integer grid of step ``s`` and sensitivity
      ``Δ_s`` (:func:`dpjax.mechanisms.laplace.integer_grid` with the release's public
      ``bound``, :func:`sums_bound`, and its 2 touched coordinates: ``s = 1``, ``Δ_s = Δ``
      unless ``ε_r`` is tiny or the data large) costs it ``ε_r·(⌈|g|/s⌉ + ⌈|h|/s⌉)/Δ_s``:
      its own shift of its cell's two grid values, at the noise's rate per grid unit (at most
      ``ε_r/Δ_s``);
    * each of ``levels`` permute-and-flip draws at ``ε_l`` over utilities of sensitivity
      ``2**GRAD_BITS`` costs it ``ε_l·|g|/2**8 + σ`` where ``g ≠ 0`` (it moves every level gain
      by at most ``|g|``; ``σ`` the draw's float slack,
      :data:`dpjax.mechanisms.exponential.GAMMA_SLACK`)."""
    leaves_epsilon = jnp.asarray(leaves_epsilon, jnp.float32)
    _, step, sensitivity_int = integer_grid(round_sensitivity(1.0) * GRAD_UNIT, leaves_epsilon,
                                            2, bound)
    g = jnp.abs(stats[:, 0]).astype(jnp.float32)
    h = jnp.abs(stats[:, 1]).astype(jnp.float32)
    leaves = leaves_epsilon * (jnp.ceil(g / step) + jnp.ceil(h / step)) / sensitivity_int
    draws = levels * (jnp.asarray(level_epsilon, jnp.float32) * g / GRAD_UNIT
                      + jnp.where(g > 0, GAMMA_SLACK, 0.0))
    return leaves + jnp.where(jnp.asarray(level_epsilon) > 0, draws, 0.0)


def filter_records(stats: jax.Array, spent: jax.Array, cap: ArrayLike, leaves_epsilon: ArrayLike,
                   level_epsilon: ArrayLike, levels: int,
                   bound: ArrayLike | None) -> tuple[jax.Array, jax.Array]:
    """The individual filter (Feldman & Zrnic 2021, pure form): each record's contributions
    scaled by ``w = min(1, (cap − spent)/loss)`` and truncated towards zero (so ``|w·g|`` never
    grows), ``w = 0`` once its budget is spent, and the loss it then spends
    (:func:`individual_losses`), at most ``cap − spent``. Returns ``(stats, loss)``."""
    full = individual_losses(stats, leaves_epsilon, level_epsilon, levels, bound)
    left = jnp.maximum(jnp.asarray(cap, jnp.float32) - spent, 0.0)
    weight = jnp.where(full > left, left / jnp.maximum(full, 1e-30), 1.0)
    kept = jnp.trunc(weight[:, None] * stats.astype(jnp.float32)).astype(jnp.int32)
    loss = individual_losses(kept, leaves_epsilon, level_epsilon, levels, bound)
    # a loss that is not proportional (a coarse grid's ceilings, a draw's slack) may still
    # exceed what is left after scaling: such a record sits the round out
    over = loss > left
    return jnp.where(over[:, None], 0, kept), jnp.where(over, 0.0, loss)
