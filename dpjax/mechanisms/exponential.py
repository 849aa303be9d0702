"""Exponential mechanism by the Gumbel-max trick (McSherry & Talwar 2007).

Sampling ``argmax_i (eps * u_i / (2 * Delta) + G_i)`` with i.i.d. standard Gumbel ``G_i`` draws
index ``i`` with probability ``softmax(eps * u / (2 * Delta))_i``: exactly the exponential
mechanism with utility ``u`` of sensitivity ``Delta``, which is ``eps``-DP.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.mechanisms.rounding import round_down


def exponential_logits(
    utility: ArrayLike, sensitivity: ArrayLike, epsilon: ArrayLike, *, monotonic: bool = False
) -> jax.Array:
    """Log-probabilities (up to a constant) ``eps * u / (2 Delta)`` of the exponential mechanism.

    With ``monotonic=True`` (utilities that move in one direction between neighbours) the
    factor 2 is dropped, as McSherry & Talwar allow.
    """
    factor = 1.0 if monotonic else 2.0
    scale = round_down(jnp.asarray(epsilon, jnp.float32) / (factor * jnp.asarray(sensitivity)))
    return jnp.asarray(utility) * scale


def exponential_mechanism(
    key: jax.Array,
    utility: ArrayLike,
    sensitivity: ArrayLike,
    epsilon: ArrayLike,
    *,
    monotonic: bool = False,
) -> jax.Array:
    """Pick an index along the last axis of ``utility`` with the exponential mechanism.

    Candidates with utility ``-inf`` are never chosen (masking is free). Leading axes are
    independent selections (one per node, say), each ``epsilon``-DP on its own.

    Args:
      key: PRNG key.
      utility: ``[..., n_candidates]`` utilities (higher is better).
      sensitivity: global sensitivity ``Delta`` of the utility (scalar or broadcastable).
      epsilon: privacy budget of one selection (traced; may be an array under ``vmap``).
      monotonic: use ``eps * u / Delta`` for monotone utilities.

    Returns:
      int32 ``[...]`` chosen indices.
    """
    logits = exponential_logits(utility, sensitivity, epsilon, monotonic=monotonic)
    gumbel = jax.random.gumbel(key, logits.shape, dtype=logits.dtype)
    return jnp.argmax(logits + gumbel, axis=-1).astype(jnp.int32)
