"""Histograms by segment sums over uint8 codes (``docs/design.md``, "Speed rules").

A level's histogram ``[nodes, n_features, n_codes, S]`` holds, for every node, feature and code,
the sum of the examples' statistics (class one-hots, weights, ...). A cumulative sum over codes
gives the statistics of every threshold split at once: ``left[..., t, :]`` sums codes ``<= t``.
The only pass over the data is one ``segment_sum`` of ``m * n`` rows per level.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


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
    m, n = codes.shape
    segment = (node[:, None] * n + jnp.arange(n)[None, :]) * n_codes + codes.astype(jnp.int32)
    rows = jnp.broadcast_to(stats[:, None, :], (m, n, stats.shape[-1]))
    hist = jax.ops.segment_sum(
        rows.reshape(m * n, -1), segment.reshape(-1), num_segments=n_nodes * n * n_codes
    )
    return hist.reshape(n_nodes, n, n_codes, -1)


def split_stats(hist: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(left, right)`` statistics of every threshold split, each ``[nodes, n, n_codes, S]``:
    left sums codes ``<= t``, right the rest."""
    left = jnp.cumsum(hist, axis=2)
    return left, left[:, :, -1:, :] - left


def leaf_stats(leaf: jax.Array, stats: jax.Array, n_leaves: int) -> jax.Array:
    """Per-leaf sums ``[n_leaves, S]`` of ``stats`` ``[m, S]`` given each example's leaf."""
    return jax.ops.segment_sum(stats, leaf, num_segments=n_leaves)


def valid_thresholds(n_codes_per_feature: jax.Array, n_codes: int) -> jax.Array:
    """bool ``[n, n_codes]``: threshold ``t`` of feature ``f`` splits its codes iff
    ``t <= n_codes_f - 2``."""
    return jnp.arange(n_codes)[None, :] < (jnp.asarray(n_codes_per_feature)[:, None] - 1)
