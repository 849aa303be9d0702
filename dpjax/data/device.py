"""Rows encoded on their device (``docs/design.md``, "Data stay where they are").

Numeric features given as a ``jax.Array`` are binned by a jitted function of the public
:class:`~dpjax.data.FeatureSpec` on the device that holds them (a row-sharded array stays
sharded: the binning is per value, the flags a reduction), and so are numeric labels given as
one: no host copy of the rows. The codes are the host path's (:func:`dpjax.data.encode`) bit
for bit: a value's bin is the number of inner edges at or below it, each edge rounded *up* to
the value's dtype (:func:`~dpjax.data.binning._ceil_to`), so that ``x >= edge`` in float64 and
in the value's dtype agree for every value of that dtype; the comparisons are made on order keys
(:func:`order_key`), whatever a device does with subnormal numbers. The checks are
the host path's too: per column, whether it holds NaN, infinite values or values outside its
bounds (a few booleans come back to the host), with the same errors and warnings, which print
no value.

Pandas tables, categorical features, wide integer features and non-numeric labels keep the
host path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpjax.data.binning import (
    FeatureSpec,
    _bound_slack,
    _ceil_to,
    _check_numeric,
    check_on_out_of_bounds,
    device_dtype,
)


def device_labels(y: Any) -> bool:
    """Whether the labels ``y`` take the device path: a 1-D ``jax.Array`` of integers or
    floats."""
    return (isinstance(y, jax.Array) and y.ndim == 1
            and (device_dtype(y.dtype) or jnp.issubdtype(y.dtype, jnp.integer)))


def device_encodable(spec: FeatureSpec) -> bool:
    """Whether every feature of ``spec`` is numeric (declared categories of a numeric column
    take the host path)."""
    return all(c is None for c in spec.categories)


def encode_on_device(spec: FeatureSpec, X: jax.Array, *, rows: int | None = None,
                     on_out_of_bounds: str = "clip") -> jax.Array:
    """Codes ``uint8 [rows, n]`` of the numeric ``jax.Array`` ``X`` under ``spec`` (every
    feature numeric: :func:`device_encodable`), binned on ``X``'s device; rows past ``X``'s are
    padding (codes 0). NaN is a missing value (the feature's missing code if it has one, else
    an error), infinite values are an error, and values outside the bounds are clipped with
    an :class:`~dpjax.data.OutOfBoundsWarning` (``on_out_of_bounds="clip"``) or refused
    (``"error"``), column by column as :func:`dpjax.data.encode` does (:func:`check_flags`);
    no message prints a value or a count."""
    check_on_out_of_bounds(on_out_of_bounds)
    check_width(spec, X)
    codes, flags = jax.jit(encoder(spec, str(X.dtype), X.shape[0] if rows is None else rows))(X)
    check_flags(spec, flags, on_out_of_bounds)
    return codes


def check_width(spec: FeatureSpec, X: jax.Array) -> None:
    """Refuse ``X`` whose column count is not the spec's."""
    if X.shape[1] != spec.n_features:
        raise ValueError(f"X has {X.shape[1]} features, the model expects {spec.n_features}")


def check_flags(spec: FeatureSpec, flags: jax.Array, on_out_of_bounds: str) -> None:
    """The host's errors and warnings (:func:`dpjax.data.encode`'s, column by column) from the
    flags of :func:`bin_values` (``[3, n]``: infinite values, NaN, values outside the
    bounds); the only values that come back from the device."""
    infinite, nan, outside = np.asarray(flags).tolist()
    missing_codes = [int(v) if m else None
                     for v, m in zip(spec.n_values, spec.missing, strict=True)]
    for j in range(spec.n_features):
        _check_numeric(spec, j, infinite[j], nan[j], outside[j], missing_codes[j],
                       on_out_of_bounds)


def bin_values(spec: FeatureSpec, X: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Pure (jittable, vmappable): ``(codes uint8 [m, n], flags bool [3, n])`` of the numeric
    ``X`` under ``spec`` (every feature numeric): each value's bin (a NaN the feature's missing
    code, or 0 where it has none; values outside the bounds in the edge bins), and per column
    whether it holds infinite values, NaN and values outside its bounds."""
    return _binner(spec, str(X.dtype))(X)


@functools.lru_cache(maxsize=64)
def encoder(spec: FeatureSpec, dtype_name: str,
            rows: int) -> Callable[[jax.Array], tuple[jax.Array, jax.Array]]:
    """Pure :func:`bin_values` of ``spec`` for values of ``dtype_name``, the codes padded to
    ``rows`` rows (codes 0): the program a fit compiles (:func:`dpjax.fit`)."""
    binner = _binner(spec, dtype_name)

    def encode(X: jax.Array) -> tuple[jax.Array, jax.Array]:
        codes, flags = binner(X)
        return jnp.pad(codes, ((0, rows - X.shape[0]), (0, 0))), flags

    return encode


@functools.lru_cache(maxsize=64)
def _binner(spec: FeatureSpec,
            dtype_name: str) -> Callable[[jax.Array], tuple[jax.Array, jax.Array]]:
    """:func:`bin_values` for values of ``dtype_name``: its constants read once."""
    dtype = np.dtype(dtype_name)
    compute = np.dtype(np.float32) if dtype.itemsize < 4 or dtype.kind != "f" else dtype
    n_bins = spec.n_bins
    lo, hi = np.asarray(spec.lower, np.float64), np.asarray(spec.upper, np.float64)
    single = ~(hi > lo) | (n_bins == 1)
    # inner edges [n_bins − 1, n] rounded up to the values' dtype (+inf for a constant feature)
    edges = np.full((max(n_bins - 1, 1), spec.n_features), np.inf)
    for j in np.flatnonzero(~single).tolist():
        edges[:n_bins - 1, j] = spec.bin_edges(j)
    edges = _ceil_to(edges, compute)
    slack = _bound_slack(lo, hi)
    low = _ceil_to(lo - slack, compute)               # x < lo − s  iff  x < low
    high = -_ceil_to(-(hi + slack), compute)          # x > hi + s  iff  x > high
    # the bins: every comparison on order keys, exact whatever a device does with subnormal
    # numbers (it may flush them to zero when it compares floats)
    edge_keys, low_key, high_key = (order_key(np.asarray(t, compute))
                                    for t in (edges, low, high))
    # the flags from each column's extrema: as floats where no threshold is zero or subnormal
    # (there a subnormal number and zero fall on the same side of every threshold), else as
    # order keys; NaN-propagating extrema first, the NaN-free ones only where a column holds
    # a NaN (a select inside a reduction measured ten times slower than the reduction)
    tiny = np.finfo(compute).tiny
    float_bounds = bool(np.all(np.abs(np.concatenate([low, high])) >= tiny))
    missing = np.asarray([int(v) if m else 0 for v, m in zip(spec.n_values, spec.missing,
                                                             strict=True)], np.uint8)
    has_missing = np.asarray(spec.missing)
    counted = [k for k in range(edges.shape[0]) if np.isfinite(edges[k]).any()]

    def encode(X: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = X.astype(compute)
        # the codes from the bits alone: beside a float operation on the same value (isnan),
        # XLA rewrote a comparison of order keys into one of floats, which flushed subnormal
        # numbers to zero
        key, nan = order_key(x), is_nan(x)
        # a value's bin: the inner edges at or below it (a NaN gets its missing code below)
        codes = functools.reduce(jnp.add, [(key >= edge_keys[k]).astype(jnp.uint8)
                                           for k in counted], jnp.zeros(x.shape, jnp.uint8))
        codes = jnp.where(nan, jnp.where(has_missing, missing, np.uint8(0)), codes)
        if float_bounds:
            values, bounds = x, (low.astype(compute), high.astype(compute))
            infinite, fill = np.asarray(np.inf, compute), np.asarray(np.inf, compute)
        else:
            values, bounds = key, (low_key, high_key)
            infinite = order_key(np.asarray(np.inf, compute))
            fill = np.iinfo(key.dtype).max
        lowest, highest = jnp.min(values, axis=0), jnp.max(values, axis=0)
        columns_nan = jnp.any(nan, axis=0) if not float_bounds else (
            jnp.isnan(lowest) | jnp.isnan(highest))

        def present(_: None) -> tuple[jax.Array, jax.Array]:
            return (jnp.min(jnp.where(nan, fill, values), axis=0),
                    jnp.max(jnp.where(nan, -fill, values), axis=0))

        lowest, highest = jax.lax.cond(jnp.any(columns_nan), present,
                                       lambda _: (lowest, highest), None)
        flags = jnp.stack([(lowest == -infinite) | (highest == infinite), columns_nan,
                           (lowest < bounds[0]) | (highest > bounds[1])])
        return codes, flags

    return encode


def is_nan(x: jax.Array) -> jax.Array:
    """Whether each float of ``x`` is a NaN, read from its bits (its magnitude's bits above
    infinity's)."""
    bits = {4: np.int32, 8: np.int64}[np.dtype(x.dtype).itemsize]
    info = np.iinfo(bits)
    magnitude = jax.lax.bitcast_convert_type(x, bits) & jnp.asarray(info.max, bits)
    infinity = np.asarray(np.inf, x.dtype).view(bits)
    return magnitude > infinity


def order_key(x: Any) -> Any:
    """The order key of floats ``x`` (numpy or JAX; float32, or float64 under x64): their bits
    as a signed integer, negated magnitude for negative numbers, so that ``x >= y`` iff
    ``key(x) >= key(y)`` for any two numbers (``−0`` and ``+0`` share a key; subnormal numbers
    keep their order where a device flushes them to zero in arithmetic)."""
    xp = jnp if isinstance(x, jax.Array) else np
    bits = {4: np.int32, 8: np.int64}[np.dtype(x.dtype).itemsize]
    signed = xp.asarray(x).view(bits) if xp is np else jax.lax.bitcast_convert_type(x, bits)
    magnitude = signed & xp.asarray(np.iinfo(bits).max, bits)
    return xp.where(signed < 0, -magnitude, signed)


def encode_labels_on_device(y: jax.Array, classes: Sequence[Any], *, rows: int | None = None,
                            declared: bool = True) -> jax.Array:
    """Class indices int32 ``[rows]`` of the numeric labels ``y`` (a ``jax.Array``) on their
    device, against the numeric ``classes``; rows past ``y``'s are padding rows (the label
    ``len(classes)``). Missing labels and labels outside the classes are refused
    (:func:`check_label_flags`)."""
    index, flags = jax.jit(label_encoder(tuple(float(c) for c in classes), str(y.dtype),
                                         y.shape[0] if rows is None else rows))(y)
    check_label_flags(classes, flags, declared)
    return index


def check_label_flags(classes: Sequence[Any], flags: jax.Array, declared: bool) -> None:
    """Refuse, as :func:`dpjax.data.encode_labels` does, missing labels and labels outside the
    ``classes`` (``declared`` or the default), from the flags of :func:`label_values`."""
    missing, unknown = np.asarray(flags).tolist()
    if missing:
        raise ValueError("y has missing labels")
    if unknown:
        source = "declared" if declared else "default"
        hint = "" if declared else (
            "; numeric labels default to classes=[0, 1]: declare classes=[...] (e.g. "
            "classes=[-1, 1]) for other label values")
        raise ValueError(f"y has labels outside the {source} classes {list(classes)}{hint}")


def label_values(classes: Sequence[Any], y: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Pure (jittable, vmappable): ``(index int32 [m], flags bool [2])`` of the numeric labels
    ``y`` against the numeric ``classes``: each label's class index (``len(classes)``, a row
    that counts nowhere, for a missing label or one outside the classes), and whether any is
    missing and any outside the classes."""
    index, flags = _labeler(tuple(float(c) for c in classes), str(y.dtype))(y)
    return jnp.where(index < 0, len(classes), index), flags


@functools.lru_cache(maxsize=64)
def label_encoder(classes: tuple[float, ...], dtype_name: str,
                  rows: int) -> Callable[[jax.Array], tuple[jax.Array, jax.Array]]:
    """Pure class indices of labels of ``dtype_name``, padded to ``rows`` rows (the label
    ``len(classes)``): the program a fit compiles."""
    labeler = _labeler(classes, dtype_name)

    def encode(y: jax.Array) -> tuple[jax.Array, jax.Array]:
        index, flags = labeler(y)
        return jnp.pad(index, (0, rows - y.shape[0]), constant_values=len(classes)), flags

    return encode


@functools.lru_cache(maxsize=64)
def _labeler(classes: tuple[float, ...],
             dtype_name: str) -> Callable[[jax.Array], tuple[jax.Array, jax.Array]]:
    """Labels of ``dtype_name`` -> ``(index int32 [m] (−1: missing or no class), flags)``."""
    dtype = np.dtype(dtype_name)
    values = np.asarray(classes, np.float64)
    if dtype.kind in "iu":      # integers: exact integer equality with the integral classes
        info = np.iinfo(dtype)
        exact = (values == np.floor(values)) & (values >= info.min) & (values <= info.max)
        targets = np.where(exact, values, 0).astype(dtype)
    else:                       # floats: equal order keys (subnormal labels included)
        compute = np.dtype(np.float32) if dtype.itemsize < 4 else dtype
        exact = np.asarray(values.astype(compute), np.float64) == values
        targets = order_key(values.astype(compute))

    def encode(y: jax.Array) -> tuple[jax.Array, jax.Array]:
        if dtype.kind in "iu":
            key, missing = y, jnp.zeros(y.shape, bool)
        else:
            y = y.astype(compute)
            key, missing = order_key(y), jnp.isnan(y)
        match = (key[:, None] == jnp.asarray(targets)) & exact
        index = jnp.where(match.any(axis=1), jnp.argmax(match, axis=1), -1).astype(jnp.int32)
        flags = jnp.stack([jnp.any(missing), jnp.any((index < 0) & ~missing)])
        return index, flags

    return encode
