"""Discrete Laplace (two-sided geometric) mechanism for integer counts (Ghosh et al. 2009).

``P(Z = z) ∝ exp(-eps |z| / Delta)`` on the integers; adding ``Z`` to a count of L1 sensitivity
``Delta`` is ``eps``-DP and the output stays an integer (no floating-point leakage of the
kind Mironov 2012 describes in the continuous mechanism).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.mechanisms.rounding import round_down


def discrete_laplace_noise(
    key: jax.Array, shape: tuple[int, ...], sensitivity: ArrayLike, epsilon: ArrayLike
) -> jax.Array:
    """Draw discrete-Laplace noise as the difference of two geometric variables.

    ``G = floor(E * Delta / eps)`` with ``E ~ Exp(1)`` has ``P(G = g) = (1 - q) q**g``,
    ``q = exp(-eps / Delta)``; ``G1 - G2`` is discrete Laplace with parameter ``q``.
    Returned as float32 holding integer values (exact below 2**24).
    """
    rate = round_down(jnp.asarray(epsilon, jnp.float32) / jnp.asarray(sensitivity, jnp.float32))
    k1, k2 = jax.random.split(key)
    g1 = jnp.floor(jax.random.exponential(k1, shape, dtype=jnp.float32) / rate)
    g2 = jnp.floor(jax.random.exponential(k2, shape, dtype=jnp.float32) / rate)
    return g1 - g2


def discrete_laplace_mechanism(
    key: jax.Array, counts: ArrayLike, sensitivity: ArrayLike, epsilon: ArrayLike
) -> jax.Array:
    """Release integer ``counts`` plus discrete-Laplace noise (``eps``-DP for L1 sensitivity
    ``Delta``). The result is float32 holding integers."""
    counts = jnp.asarray(counts, jnp.float32)
    return counts + discrete_laplace_noise(key, counts.shape, sensitivity, epsilon)
