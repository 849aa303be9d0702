"""Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006).

``f(D) + Lap(Delta / eps)`` is ``eps``-DP when ``f`` has L1 sensitivity ``Delta``. The noise
is drawn with floating point, which leaks through the low-order bits (Mironov 2012); use
:func:`dpjax.mechanisms.discrete_laplace_mechanism` on integer counts where that matters.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.mechanisms.rounding import round_up


def laplace_scale(sensitivity: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Scale ``b = Delta / eps`` of Laplace noise for ``eps``-DP (variance ``2 b**2``), rounded
    up a few float32 ulps so rounding never lowers it (:mod:`dpjax.mechanisms.rounding`)."""
    return round_up(jnp.asarray(sensitivity, jnp.float32) / jnp.asarray(epsilon, jnp.float32))


def laplace_mechanism(
    key: jax.Array, value: ArrayLike, sensitivity: ArrayLike, epsilon: ArrayLike
) -> jax.Array:
    """Release ``value + Lap(Delta / eps)`` element-wise (one ``eps``-DP release of the vector
    when ``Delta`` is its L1 sensitivity)."""
    value = jnp.asarray(value, jnp.float32)
    noise = jax.random.laplace(key, value.shape, dtype=jnp.float32)
    return value + noise * laplace_scale(sensitivity, epsilon)
