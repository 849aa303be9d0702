"""Conservative float32 rounding of mechanism parameters.

Budgets arrive as float32 arrays (traced, so sweeps are one ``vmap``) and each of the casts and
divisions on the way to a noise scale rounds to nearest: the scale can come out a few ulps
*below* the exact ``Delta / eps``, i.e. a hair less noise than the ledger's ``eps`` pays for.
Nudging every privacy-critical parameter by ``ULPS`` ulps in the safe direction (noise scales
up, rates and exponential-mechanism factors down) makes the released noise at least what the
ledger records.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

ULPS = 4


def round_up(x: jax.Array) -> jax.Array:
    """``x`` moved ``ULPS`` float32 ulps towards ``+inf`` (for noise scales)."""
    x = jnp.asarray(x, jnp.float32)
    for _ in range(ULPS):
        x = jnp.nextafter(x, jnp.float32(jnp.inf))
    return x


def round_down(x: jax.Array) -> jax.Array:
    """``x`` moved ``ULPS`` float32 ulps towards 0 (for rates ``eps / Delta``; ``x >= 0``)."""
    x = jnp.asarray(x, jnp.float32)
    for _ in range(ULPS):
        x = jnp.nextafter(x, jnp.float32(0.0))
    return x


def float32_below(x: float) -> float:
    """The largest float32 ``<= x`` (a static ``δ`` share: shares never sum above their total
    once the ledger reads them back from float32 costs)."""
    value = np.float32(x)
    return float(np.nextafter(value, np.float32(0.0)) if float(value) > x else value)


def float32_above(x: float) -> np.float32:
    """The smallest float32 ``>= x`` (a static bound stated in float32, rounded outward)."""
    value = np.float32(x)
    return value if float(value) >= x else np.nextafter(value, np.float32(np.inf))
