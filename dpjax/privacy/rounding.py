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
_INT_MIN = -(2**31)
_INF_ORDINAL = 0x7F800000
"""The ordinal of ``+inf`` (its bits): :func:`round_up` stops there, as ``nextafter`` does."""


def _ordinal(x: jax.Array) -> jax.Array:
    """float32 ``x`` as an int32 ordinal, monotone in ``x`` and counting ulps: the bits of
    ``x >= +0``, ``−2**31 − bits`` (``<= 0``) of a negative ``x``; ``±0`` are both 0."""
    bits = jax.lax.bitcast_convert_type(x, jnp.int32)
    return jnp.where(bits >= 0, bits, jnp.int32(_INT_MIN) - bits)


def _from_ordinal(ordinal: jax.Array) -> jax.Array:
    """The float32 of an :func:`_ordinal` (0 is ``+0``)."""
    return jax.lax.bitcast_convert_type(
        jnp.where(ordinal >= 0, ordinal, jnp.int32(_INT_MIN) - ordinal), jnp.float32)


def round_up(x: jax.Array, ulps: int = ULPS) -> jax.Array:
    """``x`` moved ``ulps`` float32 ulps towards ``+inf`` (for noise scales).

    Integer steps on the float's ordinal (``+inf`` stays ``+inf``, NaN stays NaN): the value
    of ``ulps`` ``jnp.nextafter(x, inf)`` calls on every normal, infinite or zero ``x``, with
    a program a fraction the size (``nextafter`` is two dozen operations per call). Subnormal
    results are kept, not flushed to zero: never below ``x``."""
    x = jnp.asarray(x, jnp.float32)
    moved = _from_ordinal(jnp.minimum(_ordinal(x) + ulps, _INF_ORDINAL))
    return jnp.where(jnp.isnan(x), x, moved)


def round_down(x: jax.Array, ulps: int = ULPS) -> jax.Array:
    """``x`` moved ``ulps`` float32 ulps towards 0 (for rates ``eps / Delta``; ``x >= 0``).

    Integer steps on the float's ordinal, stopping at ``+0`` (NaN stays NaN): the value of
    ``ulps`` ``jnp.nextafter(x, 0)`` calls on every normal, infinite or zero ``x``. A
    subnormal ``x`` moves by ulps too (not to 0 at once): never further from 0 than ``x``."""
    x = jnp.asarray(x, jnp.float32)
    ordinal = _ordinal(x)
    moved = jnp.where(ordinal > 0, jnp.maximum(ordinal - ulps, 0),
                      jnp.minimum(ordinal + ulps, 0))
    return jnp.where(jnp.isnan(x), x, _from_ordinal(moved))


def float32_below(x: float) -> float:
    """The largest float32 ``<= x`` (a static ``δ`` share: shares never sum above their total
    once the ledger reads them back from float32 costs)."""
    value = np.float32(x)
    return float(np.nextafter(value, np.float32(0.0)) if float(value) > x else value)


def float32_above(x: float) -> np.float32:
    """The smallest float32 ``>= x`` (a static bound stated in float32, rounded outward)."""
    value = np.float32(x)
    return value if float(value) >= x else np.nextafter(value, np.float32(np.inf))
