"""Fixed point: the one representation of every real-valued statistic a mechanism releases.

Float32 sums round differently on neighbouring datasets (by more than a sensitivity allows on
large data), so every sum that feeds a release is computed exactly, in int32, over per-record
values in units of ``2**−BITS``: boosting weights and gradients, record weights, fractional
counts. A record's value in ``[0, 1]`` is ``floor(v·2**BITS)`` units (rounded down, so it never
counts for more than it is), and a sum over up to :data:`MAX_ROWS` records stays below
``2**31``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

BITS = 8
"""Fraction bits of a fixed-point value: a unit is ``2**−8`` of a record."""
UNIT = 2**BITS
"""Units per record (an int; ``float(UNIT)`` where a float is needed)."""
MAX_ROWS = 2**(31 - BITS) - 1
"""The most records whose fixed-point sums are exact in int32 (``2**23 − 1``): a public limit
that :func:`dpjax.fit` checks before any work for the learners that sum fixed-point values."""


def to_units(values: ArrayLike) -> jax.Array:
    """``floor(v·2**BITS)`` as int32: the fixed-point units of ``values`` (rounded down)."""
    return jnp.floor(jnp.asarray(values) * UNIT).astype(jnp.int32)
