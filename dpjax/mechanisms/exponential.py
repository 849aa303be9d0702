"""Private selection: the permute-and-flip mechanism with exact coins.

McKenna & Sheldon, *Permute-and-Flip: A new mechanism for differentially private selection*
(NeurIPS 2020): visit the candidates in a uniformly random order and stop at the first ``r``
whose coin ``Bernoulli(exp(ε·(u_r − u*)/(2Δ)))`` comes up heads, ``u*`` the best utility. It
is ``ε``-DP for utilities of sensitivity ``Δ`` (the exponential mechanism's guarantee, McSherry
& Talwar 2007) and its expected utility is never worse than the exponential mechanism's.

The visit order is independent of the coins, so the first success in a random order is a
uniform choice among the candidates whose coin succeeds: every coin is drawn at once (exact
Bernoulli(exp(−γ)) coins, :func:`dpjax.mechanisms.exact.bernoulli_exp`) and one success is
picked by an exact uniform integer. The best candidate's coin is always heads, so there is
always one. No floating-point sampling is involved (the Gumbel-max trick in float32 never
picks a candidate ~20 logits behind the best, and is not exact elsewhere either).

``γ_r = min(c·(u* − u_r), 16)`` with ``c = (ε − slack)/(2Δ)`` rounded down. The cap at 16
(coins never below ``e^−16``) is permute-and-flip on the utilities ``max(u_r, u* − 16/c)``,
which have sensitivity ``Δ`` too (a maximum of two ``Δ``-sensitive quantities), and it makes
the float32 rounding of ``γ`` absolute: ``|fl(γ) − γ| <= 2·2**−24·16``. Rounding ``γ`` up to the
``2**−32`` grid adds ``2**−32``. A perturbation ``e`` of every ``γ`` is a perturbation ``e/c`` of
the utilities, i.e. a sensitivity ``Δ + 2e/c`` and a privacy loss ``2cΔ + 4e <= ε`` with
``slack = 4e = 8·2**−24·16 + 2**−30``: the selection is ``ε``-DP given utilities of sensitivity
``Δ`` as evaluated (callers add their own float margin to ``Δ``).

**Integer utilities** (int32 counts, fixed-point sums) are compared exactly: their gaps to the
best are taken in uint32 (exact for any two int32 values) and floored at ``−2**24``
(:data:`INTEGER_GAP_FLOOR`, :func:`dpjax.privacy.fixed_point.floored_gaps`) before the float32
conversion, which then holds them exactly: permute-and-flip on ``max(u_r, u* − 2**24)``, again
``Δ``-sensitive. A float32 utility past ``2**24`` would round, and its rounding differs between
neighbours by more than ``Δ``.

**Monotone utilities** (``monotone=True``): when adding a record to the data never raises any
candidate's utility (or never lowers any), the rate may be ``ε/Δ`` instead of ``ε/(2Δ)``, as for
the exponential mechanism. Permute-and-flip is report-noisy-max with exponential noise (Ding,
Kifer, Steinke et al., 2021), and the report-noisy-max argument for monotone scores (Dwork &
Roth 2014, Claim 3.9) needs only ``P[Z >= z + Δ] >= e^{−cΔ}·P[Z >= z]``, which exponential
noise of rate ``c`` meets: if ``i`` wins on ``D`` from noise ``z*`` up, it wins on the
neighbour from ``z* + Δ`` up. Utilities that are monotone only up to an evaluation error ``e``
(``u' − u`` in ``[−Δ − e, e]``) cost ``c·(Δ + 2e)``: pass ``Δ + 2e``. The floor at
``u* − 16/c`` keeps utilities monotone.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.mechanisms.exact import bernoulli_exp, uniform_below
from dpjax.privacy.costs import Cost
from dpjax.privacy.fixed_point import floored_gaps
from dpjax.privacy.rounding import round_down

GAMMA_CAP = 16.0
"""Coins are never below ``e^−16``: see the module docstring (a utility floor at ``u* − 16/c``)."""
INTEGER_GAP_FLOOR = 2**24
"""Integer utilities' gaps to the best are floored at ``−2**24`` (module docstring)."""
GAMMA_SLACK = 8 * 2.0**-24 * GAMMA_CAP + 2.0**-30
"""The part of ``ε`` set aside for the float32 rounding of the capped ``γ`` and its ``2**−32``
grid."""


def coin_rates(gamma: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``γ`` in ``[0, GAMMA_CAP]`` (float32) as ``(whole, frac)`` with ``frac`` in units of
    ``2**−32``, rounded up (the coin ``exp(−γ)`` can only get less likely)."""
    whole = jnp.floor(gamma)
    frac = jnp.ceil((gamma - whole) * jnp.float32(2.0**32))
    return whole.astype(jnp.int32), frac.astype(jnp.uint32)


def permute_and_flip(
    key: jax.Array,
    utility: ArrayLike,
    sensitivity: ArrayLike,
    epsilon: ArrayLike,
    *,
    monotone: bool = False,
    label: str = "",
) -> tuple[jax.Array, Cost]:
    """Pick an index along the last axis of ``utility`` (higher is better) with permute-and-flip.

    Args:
      key: PRNG key of this selection (never shared with another release).
      utility: ``[*batch, n_candidates]``; ``-inf`` marks candidates that are never chosen. The
        leading axes are independent selections (one per node, say). Integer utilities
        (int32, every candidate valid) are compared by their exact gaps (module docstring).
      sensitivity: ``Δ`` of the utility between neighbouring datasets (broadcastable to
        ``batch``; traced allowed).
      epsilon: budget of one selection (traced allowed).
      monotone: the utilities move in one direction between neighbours (module docstring): the
        rate is ``ε/Δ`` rather than ``ε/(2Δ)``.
      label: how the sensitivity reads in the ledger.

    Returns:
      ``(index int32 [*batch], cost)`` with ``cost.epsilon`` of shape ``batch``. A row with no
      finite utility returns index 0.
    """
    # one materialised utility for the maximum and the gaps: XLA may otherwise recompute the
    # utility inside each consumer's fusion, and two compilations of one float expression can
    # differ in the last ulp (a candidate above "the maximum", a negative gap)
    utility = jnp.asarray(utility)
    if jnp.issubdtype(utility.dtype, jnp.integer):
        if utility.dtype != jnp.int32:
            raise TypeError(f"integer utilities must be int32, got {utility.dtype}")
        utility = floored_gaps(utility, jnp.ones(utility.shape, bool), -INTEGER_GAP_FLOOR,
                               axis=-1)
    utility = jax.lax.optimization_barrier(utility.astype(jnp.float32))
    batch_shape = utility.shape[:-1]
    epsilon = jnp.asarray(epsilon, jnp.float32)
    sensitivity = jnp.broadcast_to(jnp.asarray(sensitivity, jnp.float32), batch_shape)
    rate = round_down(jnp.maximum(epsilon - GAMMA_SLACK, 0.0)
                      / ((1.0 if monotone else 2.0) * sensitivity))
    finite = jnp.isfinite(utility)
    best = jnp.max(jnp.where(finite, utility, -jnp.inf), axis=-1, keepdims=True)
    gamma = jnp.clip(rate[..., None] * (best - utility), 0.0, GAMMA_CAP)
    # an infinite rate at the best (Δ = 0) or a zero rate by an infinite gap: a sure coin;
    # one materialised γ gives both parts of each coin's rate
    gamma = jax.lax.optimization_barrier(jnp.where(finite & ~jnp.isnan(gamma), gamma, 0.0))
    whole, frac = coin_rates(gamma)
    k_coins, k_pick = jax.random.split(key)
    heads = bernoulli_exp(k_coins, whole, frac) & finite
    count = jnp.sum(heads, axis=-1)
    pick = uniform_below(k_pick, jnp.maximum(count, 1).astype(jnp.uint32)).astype(jnp.int32)
    rank = jnp.cumsum(heads, axis=-1) - 1
    index = jnp.argmax(heads & (rank == pick[..., None]), axis=-1).astype(jnp.int32)
    name = "permute-and-flip" + (f" ({label})" if label else "")
    cost = Cost(jnp.broadcast_to(epsilon, batch_shape), jnp.zeros(batch_shape, jnp.float32),
                name)
    return index, cost
