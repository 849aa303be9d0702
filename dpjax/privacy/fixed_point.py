"""Fixed point: the one representation of every real-valued statistic a mechanism releases.

Float32 sums round differently on neighbouring datasets (by more than a sensitivity allows on
large data), so every sum that feeds a release is computed exactly, in int32, over per-record
values in units of ``2**−BITS``: boosting weights and gradients, record weights, fractional
counts. A record's value in ``[0, 1]`` is ``floor(v·2**BITS)`` units (rounded down, so it never
counts for more than it is), and a sum over up to :data:`MAX_ROWS` records stays below
``2**31``.

Past :data:`MAX_ROWS` records a sum is still exact, in two int32 limbs (:class:`WideSum`, from
:func:`exact_segment_sum`: one scatter into per-chunk sums, each exact in int32, then the chunks
added limb by limb), and a release reads it on a coarser power-of-two grid whose step is set
from public quantities (:func:`shift_clip`, :func:`dpjax.mechanisms.laplace.laplace_mechanism`).
JAX has no int64 without x64 mode, which would change every program.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap
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


WIDE_MAX_ROWS = 2**28 - 1
"""The most records of a fit that sums wide (:func:`exact_segment_sum`): its class counts,
released on a grid of one record, stay within the Laplace mechanism's ``2**28`` grid steps."""
CHUNK_BITS = 22
"""Rows per chunk of a wide sum, ``2**CHUNK_BITS``: a chunk's sum of values within
``±2**(31 − CHUNK_BITS − 1) = ±2**8`` units (a record's fixed-point statistic in ``[−1, 1]``)
is exact in int32."""
LIMB_BITS = 16
"""The low limb of a :class:`WideSum` holds ``LIMB_BITS`` bits."""


class WideSum(NamedTuple):
    """An exact integer sum beyond int32, ``hi·2**16 + lo`` with ``0 <= lo < 2**16`` (the
    canonical pair: equal sums are equal pairs), elementwise."""

    hi: jax.Array
    lo: jax.Array


def wide_total(parts: jax.Array, axis: int = 0) -> WideSum:
    """The exact sum of int32 ``parts`` along ``axis`` (each part exact, at most ``2**15`` of
    them) as a canonical :class:`WideSum`: each part split into its limbs, then
    :func:`wide_sum`."""
    return wide_sum(canonical(jnp.zeros_like(parts), parts), axis)


WIDE_SUM_BLOCK = 2**15
"""The most canonical :class:`WideSum` values one stage of :func:`wide_sum` adds: their low
limbs' sum stays below ``2**31``."""


def wide_sum(values: WideSum, axis: int | tuple[int, ...] = 0) -> WideSum:
    """The exact sum of canonical :class:`WideSum` ``values`` along ``axis`` (an int or a tuple
    of axes), canonical: the limbs summed apart, then the low limb's carry moved up, in stages
    of at most :data:`WIDE_SUM_BLOCK` values (padded with zeros) so that the low limbs' sums
    fit int32; the high limbs' sums must fit int32 too (they do while ``Σ|v| < 2**46`` over
    fewer than ``2**30`` values)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % values.hi.ndim for a in axes)
    rest = [a for a in range(values.hi.ndim) if a not in axes]
    shape = [values.hi.shape[a] for a in rest]
    hi, lo = (jnp.transpose(x, axes + tuple(rest)).reshape([-1] + shape) for x in values)
    while True:
        n = hi.shape[0]
        blocks = -(-n // WIDE_SUM_BLOCK)
        pad = [(0, blocks * WIDE_SUM_BLOCK - n if blocks > 1 else 0)] + [(0, 0)] * len(shape)
        hi, lo = (jnp.pad(x, pad).reshape([blocks, -1] + shape) for x in (hi, lo))
        hi, lo = jnp.sum(hi, axis=1), jnp.sum(lo, axis=1)
        hi, lo = canonical(hi, lo)
        if blocks == 1:
            return WideSum(hi[0], lo[0])


def canonical(hi: jax.Array, lo: jax.Array) -> WideSum:
    """The canonical :class:`WideSum` of ``hi·2**16 + lo`` for an int32 ``lo`` of any sign
    (the low limb's carry, floored, moved up)."""
    return WideSum(hi + jnp.right_shift(lo, LIMB_BITS),
                   jnp.bitwise_and(lo, jnp.int32(2**LIMB_BITS - 1)))


def negate(value: jax.Array | WideSum) -> jax.Array | WideSum:
    """``−v`` of an int32 array or a canonical :class:`WideSum` (canonical)."""
    if isinstance(value, WideSum):
        return canonical(-value.hi, -value.lo)
    return -value


def add(a: jax.Array | WideSum, b: jax.Array | WideSum) -> jax.Array | WideSum:
    """``a + b`` of two int32 arrays, or of two canonical :class:`WideSum` (canonical; the
    high limbs' sum must fit int32)."""
    if isinstance(a, WideSum):
        return canonical(a.hi + b.hi, a.lo + b.lo)
    return a + b


def minimal(values: jax.Array | WideSum, where: jax.Array) -> jax.Array:
    """bool: the entries of ``where`` that hold the minimum of ``values`` over ``where`` (an
    int32 array, or canonical :class:`WideSum` compared lexicographically by their limbs)."""
    largest = jnp.iinfo(jnp.int32).max
    if not isinstance(values, WideSum):
        return where & (values == jnp.min(jnp.where(where, values, largest)))
    low = where & (values.hi == jnp.min(jnp.where(where, values.hi, largest)))
    return low & (values.lo == jnp.min(jnp.where(low, values.lo, largest)))


def as_float(value: jax.Array | WideSum) -> jax.Array:
    """An exact integer statistic (int32, or a canonical :class:`WideSum` with ``|hi| <
    2**24``) as float32, rounded once to nearest: ``hi·2**16`` is exact in float32, so
    ``hi·2**16 + lo`` rounds once, as an int32's conversion does (the same float for the same
    integer, whichever form holds it)."""
    if not isinstance(value, WideSum):
        return jnp.asarray(value).astype(jnp.float32)
    return value.hi.astype(jnp.float32) * jnp.float32(2**LIMB_BITS) + value.lo.astype(
        jnp.float32)


def wide_abs(value: WideSum) -> WideSum:
    """``|v|`` of a canonical :class:`WideSum`, canonical: a value is negative iff its high
    limb is, and ``−(hi·2**16 + lo) = (−hi − 1)·2**16 + (2**16 − lo)`` when ``lo > 0``."""
    flipped = negate(value)
    negative = value.hi < 0
    return WideSum(jnp.where(negative, flipped.hi, value.hi),
                   jnp.where(negative, flipped.lo, value.lo))


def floored_gaps(values: jax.Array | WideSum, where: jax.Array, floor: int,
                 axis: int | None = None) -> jax.Array:
    """``max(v − max_{where} v, floor)`` as int32 where ``where`` holds, else int32's minimum,
    the maximum taken along ``axis`` (default: over every entry), exactly, for any int32
    ``values`` (the gap to the best taken in uint32, exact for two int32 values) or canonical
    :class:`WideSum` ones (``−2**30 + 2**16 <= floor < 0``): the best is the lexicographic
    maximum of the limbs, and a gap's high limb is saturated at ``−2**14`` first (a saturated
    gap is below ``−2**30 + 2**16`` either way, so it floors the same), so nothing
    overflows."""
    lowest = jnp.iinfo(jnp.int32).min
    if not isinstance(values, WideSum):
        best = jnp.max(jnp.where(where, values, lowest), axis=axis, keepdims=True)
        gap = best.astype(jnp.uint32) - values.astype(jnp.uint32)
        floored = -jnp.minimum(gap, jnp.uint32(-floor)).astype(jnp.int32)
        return jnp.where(where, floored, lowest)
    best_hi = jnp.max(jnp.where(where, values.hi, lowest), axis=axis, keepdims=True)
    best_lo = jnp.max(jnp.where(where & (values.hi == best_hi), values.lo, -1), axis=axis,
                      keepdims=True)
    high = jnp.clip(values.hi - best_hi, -(2**14), 0)
    gap = jnp.left_shift(high, LIMB_BITS) + (values.lo - best_lo)
    return jnp.where(where, jnp.maximum(gap, floor), lowest)


def chunk_count(m: int) -> int:
    """The wide path's number of chunks of ``2**CHUNK_BITS`` rows, ``⌈m/2**CHUNK_BITS⌉``
    (static; 1 up to :data:`MAX_ROWS` rows, where sums are not chunked)."""
    return 1 if m <= MAX_ROWS else -(-m // 2**CHUNK_BITS)


def row_chunks(m: int) -> tuple[int, jax.Array]:
    """:func:`chunk_count` and each row's chunk, int32 ``[m]``."""
    return chunk_count(m), jnp.right_shift(jnp.arange(m, dtype=jnp.int32), CHUNK_BITS)


def segment_sum(values: jax.Array, segments: jax.Array, num_segments: int) -> jax.Array:
    """``jax.ops.segment_sum(values, segments, num_segments)`` (``values [*segments.shape,
    ...]``; ids out of range dropped) whose ``vmap`` reads the rows once per batch
    (``docs/design.md``, "Models share reads"): XLA's own batching of a scatter with batched ids
    runs several times slower on a CPU than one model after another, so a batch of models is
    summed as one segment sum:

    * batched ``segments`` (each model its own cells): model ``b``'s ids offset by
      ``b·num_segments`` (an id out of range stays out of range: dropped), one scatter of
      every model's rows;
    * shared ``segments`` (models that share their cells: a sweep's grid points on one random
      structure): the models' values on the last axis, one scatter whose every update carries
      every model's statistics.

    Each output sums the same rows in the same order as the model's own segment sum: the same
    integers, and the same floats (``tests/privacy/test_fixed_point.py``)."""
    return _segment_sum(int(num_segments))(values, segments)


@functools.cache
def _segment_sum(num_segments: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
    @custom_vmap
    def summed(values: jax.Array, segments: jax.Array) -> jax.Array:
        return jax.ops.segment_sum(values, segments, num_segments)

    @summed.def_vmap
    def batched(axis_size: int, in_batched: list[bool], values: jax.Array,
                segments: jax.Array) -> tuple[jax.Array, bool]:
        values_batched, segments_batched = in_batched
        rows = segments.ndim - segments_batched                  # a model's row axes
        extra = values.shape[rows + values_batched:]             # per-row statistic axes
        if segments_batched and axis_size * num_segments > 2**31 - 1:
            # the offset ids would pass int32: one model after another
            values = values if values_batched else jnp.broadcast_to(
                values, (axis_size, *values.shape))
            return jax.lax.map(lambda a: segment_sum(*a, num_segments), (values, segments)), True
        if segments_batched:
            if not values_batched:
                values = jnp.broadcast_to(values, (axis_size, *values.shape))
            offset = num_segments * jnp.arange(axis_size, dtype=segments.dtype)
            # an id out of range stays out of range (dropped), not another model's segment
            inside = (segments >= 0) & (segments < num_segments)
            flat = jnp.where(inside, segments + offset.reshape(
                (axis_size,) + (1,) * (segments.ndim - 1)), axis_size * num_segments)
            out = segment_sum(values.reshape((-1, *extra)), flat.reshape(-1),
                              axis_size * num_segments)
            return out.reshape((axis_size, num_segments, *extra)), True
        if values_batched:
            out = segment_sum(jnp.moveaxis(values, 0, -1), segments, num_segments)
            return jnp.moveaxis(out, -1, 0), True
        return segment_sum(values, segments, num_segments), False

    return summed


def exact_segment_sum(values: jax.Array, segments: jax.Array,
                      num_segments: int) -> jax.Array | WideSum:
    """``jax.ops.segment_sum`` of int32 fixed-point ``values [m, ...]`` (each within
    ``±2**8`` units), exact for any ``m <= WIDE_MAX_ROWS``: the int32 sums up to
    :data:`MAX_ROWS` rows, beyond that a :class:`WideSum` (one scatter into ``⌈m/2**22⌉``
    chunks' sums, each exact in int32, then :func:`wide_total`). Which one is static (the
    shape); both hold the same exact integers, and a release reads either through
    :func:`shift_clip`."""
    m = values.shape[0]
    if m <= MAX_ROWS:
        return segment_sum(values, segments, num_segments)
    n_chunks, chunk = row_chunks(m)
    inside = (segments >= 0) & (segments < num_segments)     # out of range: dropped
    parts = segment_sum(values, jnp.where(inside, chunk * num_segments + segments,
                                          n_chunks * num_segments), n_chunks * num_segments)
    return wide_total(parts.reshape((n_chunks, num_segments) + values.shape[1:]))


def shift_clip(value: jax.Array | WideSum, exponent: ArrayLike, limit: int) -> jax.Array:
    """``clip(floor(v / 2**exponent), −limit, limit)`` as int32, exactly, for an int32 ``v``
    or a :class:`WideSum` (``0 <= exponent <= 31``, traced allowed; ``limit <= 2**28``): the
    grid value of an integer release. For a wide ``v = hi·2**16 + lo`` the floor is
    ``hi >> (e − 16)`` when ``e >= 16``, else ``hi·2**(16 − e) + (lo >> e)`` with ``hi`` first
    saturated at ``±2**(13 + e)`` (beyond it the result is beyond ``±2**29 − 2**16``, clipped
    to ``±limit`` either way), so nothing overflows."""
    exponent = jnp.asarray(exponent, jnp.int32)
    if not isinstance(value, WideSum):
        return jnp.clip(jnp.right_shift(jnp.asarray(value, jnp.int32), exponent), -limit, limit)
    low_shift = jnp.minimum(exponent, LIMB_BITS)
    saturation = jnp.left_shift(jnp.int32(1), 13 + low_shift)
    hi = jnp.clip(value.hi, -saturation, saturation)
    below = jnp.left_shift(hi, LIMB_BITS - low_shift) + jnp.right_shift(value.lo, low_shift)
    above = jnp.right_shift(value.hi, jnp.maximum(exponent - LIMB_BITS, 0))
    return jnp.clip(jnp.where(exponent >= LIMB_BITS, above, below), -limit, limit)
