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

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

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
    joint = joint.reshape((packed.shape[0], n_nodes, joint_codes, stats.shape[-1]))
    hist = joint_marginals(joint, n_codes, group)                 # [G, nodes, g, C, S]
    hist = jnp.moveaxis(hist, 0, 1).reshape(n_nodes, -1, n_codes, stats.shape[-1])
    return hist[:, :n_features]


def joint_marginals(joint: jax.Array, n_codes: int, group: int) -> jax.Array:
    """The per-feature marginals ``[..., g, C, S]`` of joint tables ``[..., C^g, S]`` over
    :func:`pack_codes`' joint codes (feature ``k`` of a group is digit ``k`` of the joint
    code)."""
    joint = joint.reshape(joint.shape[:-2] + (n_codes,) * group + joint.shape[-1:])
    lead = joint.ndim - group - 1
    # feature k of a group is axis lead + (group − 1 − k) of the row-major joint table
    marginals = [joint.sum(axis=tuple(lead + a for a in range(group) if a != group - 1 - k))
                 for k in range(group)]                           # each [..., C, S]
    return jnp.stack(marginals, axis=lead)


WINDOW_LANES = 16
"""Lanes of one windowed scatter (:func:`window_histograms`): a model's cell each, the lanes of
several models side by side. Every update adds a row's statistic to all its lanes at once (one
read of the row's joint code for every model); per lane the scatter measured fastest at 8 to
16 lanes on a 2-core CPU (a9a's 123 binary features and 20 features of 32 codes, 32,768 rows:
0.05–0.07 ms per lane and level against 0.9–1.1 ms per model for one scatter of every model's
rows, their ids offset)."""


def window_histograms(packed: jax.Array, lane: jax.Array, stats: jax.Array, lanes: int,
                      n_codes: int, group: int, n_features: int) -> jax.Array:
    """Histograms ``[M, lanes, n, C]`` of ``M`` models over the shared joint codes ``packed
    [G, m]`` (:func:`pack_codes`): model ``b``'s row ``i`` adds ``stats[b, i]`` to its lane
    ``lane[b, i]`` (int32 ``[M, m]``; out of ``[0, lanes)``: dropped), feature by feature and
    code by code (``docs/design.md``, "Models share reads"). The models' lanes are side by side
    on the last axis of one scatter per group, :data:`WINDOW_LANES` lanes at a time (a
    ``lax.map`` over the models in parts), so the joint codes are read once for every model of
    a part. Exact for integer ``stats`` (each sum the same integers in any layout). Under
    ``vmap`` the batch joins the models."""
    return _window_histograms(lanes, n_codes, group, n_features)(packed, lane, stats)


@functools.cache
def _window_histograms(lanes: int, n_codes: int, group: int,
                       n_features: int) -> Callable[..., jax.Array]:
    joint_codes = n_codes**group
    per = max(1, WINDOW_LANES // lanes)          # models per scatter

    @custom_vmap
    def histograms(packed: jax.Array, lane: jax.Array, stats: jax.Array) -> jax.Array:
        n_models, m = lane.shape
        parts = -(-n_models // per)
        pad = parts * per - n_models              # padding models: every lane dropped
        lane = jnp.pad(lane, ((0, pad), (0, 0)), constant_values=-1)
        stats = jnp.pad(stats, ((0, pad), (0, 0)))

        def part(args: tuple[jax.Array, jax.Array]) -> jax.Array:
            part_lane, part_stats = args                                    # [per, m]
            onehot = part_lane[:, :, None] == jnp.arange(lanes, dtype=part_lane.dtype)
            values = jnp.where(onehot, part_stats[:, :, None], 0)           # [per, m, L]
            values = jnp.moveaxis(values, 0, 1).reshape(m, per * lanes)
            return jax.lax.map(lambda joint: jax.ops.segment_sum(
                values, joint.astype(jnp.int32), joint_codes), packed)      # [G, C^g, pL]

        joint = jax.lax.map(part, (lane.reshape(parts, per, m), stats.reshape(parts, per, m)))
        hist = joint_marginals(joint, n_codes, group)           # [parts, G, g, C, per·L]
        hist = hist.reshape(parts, -1, n_codes, per, lanes)[:, :n_features]   # [p, n, C, per, L]
        hist = jnp.moveaxis(hist, (3, 4), (1, 2)).reshape(parts * per, lanes, n_features,
                                                            n_codes)
        return hist[:n_models]

    @histograms.def_vmap
    def batched(axis_size: int, in_batched: list[bool], packed: jax.Array, lane: jax.Array,
                stats: jax.Array) -> tuple[jax.Array, bool]:
        if in_batched[0]:          # models of other codes each: one after another
            return jax.lax.map(lambda args: histograms(*args), (
                packed, *(a if b else jnp.broadcast_to(a, (axis_size, *a.shape))
                          for a, b in zip((lane, stats), in_batched[1:], strict=True)))), True
        lane, stats = (a if b else jnp.broadcast_to(a, (axis_size, *a.shape))
                       for a, b in zip((lane, stats), in_batched[1:], strict=True))
        flat = histograms(packed, lane.reshape((-1, lane.shape[-1])),
                          stats.reshape((-1, stats.shape[-1])))
        return flat.reshape((axis_size, -1) + flat.shape[1:]), True

    return histograms


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
