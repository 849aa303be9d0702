"""Histograms by segment sums over uint8 codes (``docs/design.md``, "Speed rules").

A level's histogram ``[nodes, n_features, n_codes, S]`` holds, for every node, feature and code,
the sum of the examples' statistics (class one-hots, weights, ...). A cumulative sum over codes
gives the statistics of every threshold split at once: ``left[..., t, :]`` sums codes ``<= t``.

Layout (the speed rule "measure against the memory floor"): a scatter-add costs about the same
per update whatever it carries, and materialising ``[m, n, S]`` updates costs more than the
scatter itself. So the codes are first *packed*: ``g`` features of ``C`` codes each become one
joint code ``Σ_k code_k·C^k < C^g`` (uint16, group-major ``[G, m]``, :func:`pack_codes`), and a
level is ``G = ⌈n/g⌉`` scatters of ``m`` updates each (one per group, in a ``lax.map``, reading
the stats once per group) into a joint histogram ``[nodes, C^g, S]`` whose marginals are the
per-feature histograms. ``g`` is the largest with ``C^g <= JOINT_CODES`` and
``nodes·C^g <= MAX_SEGMENTS`` (the table stays in cache). With integer statistics every sum is
exact, so the result does not depend on the layout.

Inside a fit the packing is loop-invariant: computed once per fit (XLA hoists it out of the
boosting ``scan``), it is smaller than the codes (2 bytes per ``g`` features).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpjax.privacy import fixed_point
from dpjax.privacy.fixed_point import WideSum

JOINT_CODES = 1024
"""Largest joint code count of one packed group (``C^g``)."""
MAX_SEGMENTS = 2**18
"""Largest ``nodes·C^g`` table of one group's scatter."""


def group_size(n_codes: int, n_nodes: int = 1) -> int:
    """Features per packed group: the largest ``g >= 1`` with ``n_codes**g <= JOINT_CODES`` and
    ``n_nodes·n_codes**g <= MAX_SEGMENTS`` (static)."""
    g = 1
    while (n_codes ** (g + 1) <= JOINT_CODES
           and n_nodes * n_codes ** (g + 1) <= MAX_SEGMENTS):
        g += 1
    return g


def pack_codes(codes: jax.Array, n_codes: int, group: int) -> jax.Array:
    """Joint codes uint16 ``[G, m]`` of ``group`` consecutive features (the last group padded
    with code 0): ``Σ_k codes[:, j·group + k]·n_codes^k``."""
    m, n = codes.shape
    n_groups = -(-n // group)
    # feature-major from the start: the joint codes come out [G, m] in the layout the
    # per-group scatters read, with no transposing copy of them inside a fit's loops
    padded = jnp.pad(codes.T, ((0, n_groups * group - n), (0, 0))).astype(jnp.int32)
    radix = jnp.asarray([n_codes**k for k in range(group)], jnp.int32)
    joint = jnp.sum(padded.reshape(n_groups, group, m) * radix[:, None], axis=1)
    return joint.astype(jnp.uint16 if n_codes**group <= 2**16 else jnp.int32)


def packed_histogram(packed: jax.Array, node: jax.Array, stats: jax.Array, n_nodes: int,
                     n_codes: int, group: int, n_features: int) -> jax.Array:
    """:func:`node_histogram` from :func:`pack_codes`' ``packed [G, m]``: one scatter of ``m``
    updates per group, then the marginals of each group's joint table."""
    joint_codes = n_codes**group
    base = node.astype(jnp.int32) * joint_codes

    def group_histogram(joint: jax.Array) -> jax.Array:
        return fixed_point.segment_sum(stats, base + joint.astype(jnp.int32),
                                       n_nodes * joint_codes)

    joint = jax.lax.map(group_histogram, packed)                  # [G, nodes·C^g, S]
    joint = joint.reshape((packed.shape[0], n_nodes) + (n_codes,) * group + stats.shape[-1:])
    # feature k of a group is axis 2 + (group − 1 − k) of the row-major joint table
    marginals = [joint.sum(axis=tuple(2 + a for a in range(group) if a != group - 1 - k))
                 for k in range(group)]                           # each [G, nodes, C, S]
    hist = jnp.stack(marginals, axis=2)                           # [G, nodes, g, C, S]
    hist = jnp.moveaxis(hist, 0, 1).reshape(n_nodes, -1, n_codes, stats.shape[-1])
    return hist[:, :n_features]


def node_histogram(
    codes: jax.Array, node: jax.Array, stats: jax.Array, n_nodes: int, n_codes: int
) -> jax.Array:
    """Per-node, per-feature, per-code sums of ``stats``.

    Args:
      codes: uint8 ``[m, n]``.
      node: int32 ``[m]`` node of each example within its level, ``0..n_nodes - 1``.
      stats: ``[m, S]`` statistics to sum.
      n_nodes, n_codes: static sizes.

    Returns:
      ``[n_nodes, n, n_codes, S]``.
    """
    group = min(group_size(n_codes, n_nodes), codes.shape[1])
    return packed_histogram(pack_codes(codes, n_codes, group), node, stats, n_nodes, n_codes,
                            group, codes.shape[1])


def exact_node_histogram(
    codes: jax.Array, node: jax.Array, stats: jax.Array, n_nodes: int, n_codes: int
) -> jax.Array | WideSum:
    """:func:`node_histogram` of int32 fixed-point ``stats`` (each within ``±2**8`` units),
    exact for any row count up to :data:`~dpjax.privacy.fixed_point.WIDE_MAX_ROWS`: int32 sums
    up to :data:`~dpjax.privacy.fixed_point.MAX_ROWS` rows; beyond, one histogram per chunk of
    ``2**CHUNK_BITS`` rows (the chunk one more node index, each sum exact in int32), the chunks
    added in two limbs (a canonical :class:`~dpjax.privacy.fixed_point.WideSum`). Both hold the
    same integers."""
    if fixed_point.chunk_count(codes.shape[0]) == 1:
        return node_histogram(codes, node, stats, n_nodes, n_codes)
    n_chunks, chunk = fixed_point.row_chunks(codes.shape[0])
    hist = node_histogram(codes, chunk * n_nodes + node, stats, n_chunks * n_nodes, n_codes)
    return fixed_point.wide_total(hist.reshape((n_chunks, n_nodes) + hist.shape[1:]))


def split_stats(hist: jax.Array | WideSum) -> tuple[jax.Array, jax.Array] | tuple[WideSum,
                                                                                      WideSum]:
    """``(left, right)`` statistics of every threshold split, each ``[nodes, n, n_codes, S]``:
    left sums codes ``<= t``, right the rest. A canonical
    :class:`~dpjax.privacy.fixed_point.WideSum` histogram gives canonical wide sums (the limbs
    summed apart, at most 256 low limbs below ``2**24``, then carried)."""
    if isinstance(hist, WideSum):
        hi, lo = (jnp.cumsum(x, axis=2) for x in hist)
        left = fixed_point.canonical(hi, lo)
        right = fixed_point.canonical(hi[:, :, -1:, :] - hi, lo[:, :, -1:, :] - lo)
        return left, right
    left = jnp.cumsum(hist, axis=2)
    return left, left[:, :, -1:, :] - left


def leaf_stats(leaf: jax.Array, stats: jax.Array, n_leaves: int) -> jax.Array:
    """Per-leaf sums ``[n_leaves, S]`` of ``stats`` ``[m, S]`` given each example's leaf."""
    return fixed_point.segment_sum(stats, leaf, n_leaves)


def valid_thresholds(n_codes_per_feature: jax.Array, n_codes: int) -> jax.Array:
    """bool ``[n, n_codes]``: threshold ``t`` of feature ``f`` splits its codes iff
    ``t <= n_codes_f - 2``."""
    return jnp.arange(n_codes)[None, :] < (jnp.asarray(n_codes_per_feature)[:, None] - 1)
