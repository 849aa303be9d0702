"""Private oblivious trees: one split per level, shared by all the level's nodes, each chosen by
one permute-and-flip draw (issue 27, deliverable 4; ``docs/design.md``, "Dense trees").

An oblivious tree of depth ``d`` is a :class:`~dpjax.trees.dense.DenseTree` whose level-``l``
nodes all hold the same ``(feature, threshold)``; its ``2**d`` leaves are the cells indexed by
the ``d`` comparison bits, a dense tensor. Level ``l`` is chosen among every ``(f, t)`` split
(``t <= n_codes_f − 2``) by its *level-summed absolute gradient*

    u(f, t) = Σ_{cells c of level l} ( |Σ_{i∈c, x_if <= t} g_i| + |Σ_{i∈c, x_if > t} g_i| ),

the first-order gain of the split: the larger the gradient sums that the split separates into
cells of one sign, the larger a Newton move each cell can take. **Sensitivity.** A record sits
in exactly one cell and, for every candidate, on one side of it, so adding or removing it moves
each candidate's utility by at most its ``|g_i| <= 1`` (the triangle inequality; ``2`` under
replace-one, which removes one record and adds another). The sums are exact fixed point
(:mod:`dpjax.privacy.fixed_point`, ``|floor(g·2**8)| <= 2**8`` units; int32, or two int32 limbs
past ``2**23 − 1`` records) and the utilities are compared as exact int32 gaps to the best,
floored at ``−2**24`` units (:data:`GAP_FLOOR`) so that their float32 conversion is exact:
permute-and-flip on ``max(u, u* − 2**24)``, whose sensitivity is still ``Δ`` (a maximum of two
``Δ``-sensitive quantities, as the mechanism's own cap). The utility is not monotone (a record
can raise one candidate and lower another), so each level's draw is ``ε_l``-DP at the rate
``ε_l/(2Δ)`` (:func:`dpjax.mechanisms.exponential.permute_and_flip`, McKenna & Sheldon
2020). A tree's ``d`` draws compose sequentially (each
level reads the cells the previous draws made): ``d·ε_l``.

The levels run as one ``lax.scan``, each level's histogram padded to the last level's
``2**(d−1)`` cells (the padded cells hold no record and add 0 to every exact utility), so a tree
compiles one level's program instead of ``d``, with the same draws bit for bit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap
from jax.typing import ArrayLike

from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.privacy import fixed_point
from dpjax.privacy.costs import Cost
from dpjax.privacy.fixed_point import UNIT
from dpjax.trees.dense import empty_splits, set_level
from dpjax.trees.histogram import (
    group_size,
    node_histogram,
    pack_codes,
    packed_histogram,
    split_stats,
    valid_thresholds,
    window_histograms,
)
from dpjax.trees.predict import step

GAP_FLOOR = -(2**24)
"""The utilities' gaps to the best are floored here (units): float32 holds every integer down
to it exactly."""


def wide_row_limit(depth: int) -> int:
    """The most rows whose level histograms an oblivious tree of ``depth`` can index in int32:
    past :data:`~dpjax.privacy.fixed_point.MAX_ROWS` rows the histogram has a node per chunk
    and cell, ``⌈m/2**CHUNK_BITS⌉·2**(d−1)`` of them, times up to 256 codes (the segment
    index, :func:`~dpjax.trees.histogram.node_histogram`), so from depth 18 fewer than
    ``2**28`` rows (a public limit, checked before any work)."""
    chunks = (2**31 - 1) // (2 ** (depth - 1) * 256)
    return max(fixed_point.MAX_ROWS, chunks * 2**fixed_point.CHUNK_BITS - 1)


def level_utility(codes: jax.Array, cell: jax.Array, gradient: jax.Array, n_cells: int,
                  n_codes: int, n_codes_per_feature: ArrayLike) -> jax.Array:
    """``u(f, t)`` of every split of one level (module docstring) as int32 gaps to the best
    valid split, floored at :data:`GAP_FLOOR` (``GAP_FLOOR <= gap <= 0``), ``[n, n_codes]``;
    invalid thresholds are ``int32`` minimum. The sums are exact: in int32 up to
    :data:`~dpjax.privacy.fixed_point.MAX_ROWS` rows, past it per chunk of
    ``2**CHUNK_BITS`` rows (each side's sum within ``±2**30`` units) and then across chunks in
    two limbs (:func:`~dpjax.privacy.fixed_point.wide_total`), whose floored gaps are the same
    integers (:func:`~dpjax.privacy.fixed_point.floored_gaps`).

    Args:
      codes: uint8 ``[m, n]``; cell: int32 ``[m]``, each record's cell of the level
        (``0..n_cells − 1``); gradient: int32 ``[m]`` fixed-point gradients.
    """
    m = codes.shape[0]
    valid = valid_thresholds(n_codes_per_feature, n_codes)
    if m <= fixed_point.MAX_ROWS:
        left, right = split_stats(node_histogram(codes, cell, gradient[:, None], n_cells,
                                                 n_codes))
        utility = jnp.sum(jnp.abs(left[..., 0]) + jnp.abs(right[..., 0]), axis=0)  # [n, C]
        return fixed_point.floored_gaps(utility, valid, GAP_FLOOR)
    n_chunks, chunk = fixed_point.row_chunks(m)
    left, right = split_stats(node_histogram(codes, chunk * n_cells + cell, gradient[:, None],
                                             n_chunks * n_cells, n_codes))
    sides = jnp.stack([left[..., 0], right[..., 0]]).reshape(
        (2, n_chunks, n_cells) + left.shape[1:3])                   # [2, chunks, cells, n, C]
    per_cell = fixed_point.wide_total(sides, axis=1)                # [2, cells, n, C]
    utility = fixed_point.wide_sum(fixed_point.wide_abs(per_cell), axis=(0, 1))
    return fixed_point.floored_gaps(utility, valid, GAP_FLOOR)


def level_histogram(packed: jax.Array, cell: jax.Array, gradient: jax.Array,
                    parent: jax.Array, level: jax.Array, n_codes: int, group: int,
                    n_features: int) -> jax.Array:
    """The exact gradient histogram ``[W, n, C]`` (int32) of level ``level`` (its records in
    cells ``0..2**level − 1``, ``cell`` int32 ``[m]``; ``W`` the last level's cells, the rows
    of ``parent``, the previous level's histogram; rows of no cell are zero), over the joint
    codes ``packed`` (:func:`~dpjax.trees.histogram.pack_codes`). One model: one scatter of its
    rows by cell and joint code into ``W`` cells, every level alike. Under ``vmap`` (a sweep's
    models; ``docs/design.md``, "Models share reads"), by ``lax.switch`` on the level: the
    level's left cells (``2p``: a record that went left at the last level) are summed for
    every model by one windowed scatter per group (:func:`~dpjax.trees.histogram.
    window_histograms`, the models' cells side by side) and each right cell is its parent's
    less its left sibling. The sums are exact integers, so both give the same histogram."""
    return _level_histogram(parent.shape[0], n_codes, group, n_features)(
        packed, cell, gradient, parent, level)


@functools.cache
def _level_histogram(width: int, n_codes: int, group: int,
                     n_features: int) -> Callable[..., jax.Array]:
    @custom_vmap
    def histogram(packed: jax.Array, cell: jax.Array, gradient: jax.Array,
                  parent: jax.Array, level: jax.Array) -> jax.Array:
        return packed_histogram(packed, cell, gradient[:, None], width, n_codes, group,
                                n_features)[..., 0]

    def models_level(cells: int, packed: jax.Array, cell: jax.Array, gradient: jax.Array,
                     parent: jax.Array) -> jax.Array:
        """Every model's histogram of a level of ``cells`` cells: its left cells by one
        windowed scatter, its right ones by subtraction."""
        if cells == 1:              # the root: every record in cell 0
            hist = window_histograms(packed, jnp.zeros_like(cell), gradient, 1, n_codes,
                                     group, n_features)
        else:
            half = cells // 2
            left = window_histograms(packed, jnp.where(cell % 2 == 0, cell // 2, -1),
                                     gradient, half, n_codes, group, n_features)
            right = parent[:, :half] - left                         # [B, half, n, C]
            hist = jnp.stack([left, right], axis=2).reshape(
                (cell.shape[0], cells) + left.shape[2:])
        return jnp.pad(hist, ((0, 0), (0, width - cells), (0, 0), (0, 0)))

    @histogram.def_vmap
    def batched(axis_size: int, in_batched: list[bool], packed: jax.Array, cell: jax.Array,
                gradient: jax.Array, parent: jax.Array,
                level: jax.Array) -> tuple[jax.Array, bool]:
        if in_batched[0] or in_batched[4]:   # other codes or levels per model: in turn
            args = tuple(a if b else jnp.broadcast_to(a, (axis_size, *jnp.shape(a)))
                         for a, b in zip((packed, cell, gradient, parent, level), in_batched,
                                         strict=True))
            return jax.lax.map(lambda a: histogram(*a), args), True
        cell, gradient, parent = (a if b else jnp.broadcast_to(a, (axis_size, *a.shape))
                                  for a, b in zip((cell, gradient, parent), in_batched[1:4],
                                                  strict=True))
        levels = [functools.partial(models_level, 2**k) for k in range(width.bit_length())]
        return jax.lax.switch(level, levels, packed, cell, gradient, parent), True

    return histogram


def grow_oblivious(key: jax.Array, codes: jax.Array, gradient: jax.Array, depth: int,
                   n_codes_per_feature: ArrayLike, epsilon: ArrayLike | None,
                   sensitivity: float) -> tuple[jax.Array, jax.Array, jax.Array, Cost]:
    """One private oblivious tree of depth ``depth`` over the records' fixed-point gradients.

    Args:
      key: this tree's key (level ``l`` draws with ``fold_in(key, l)``).
      codes: uint8 ``[m, n]``; gradient: int32 ``[m]`` in units of ``2**−8``, ``|g| <= 2**8``.
      n_codes_per_feature: static codes of each feature.
      epsilon: each level's budget ``ε_l`` (traced), or ``None`` without privacy (each level
        takes its best split; the cost is zero).
      sensitivity: 1 under add/remove, 2 under replace-one.

    Returns:
      ``(feature, threshold, leaf, cost)``: the dense split arrays ``[2**d − 1]`` (every node of
      a level the same), each record's leaf ``[m]`` (``0..2**d − 1``, the comparison bits from
      the root down, :func:`dpjax.trees.predict.leaf_index`'s order) and the draws' cost
      (``[d]``, sequential).

    Up to :data:`~dpjax.privacy.fixed_point.MAX_ROWS` rows a level's histogram is
    :func:`level_histogram`'s (under ``vmap``, the left cells of every model at once and the
    right ones by subtraction); past it, the chunked one of :func:`level_utility`. Either is
    padded to the last level's cells, so the levels run as one ``lax.scan``.
    """
    n_codes_per_feature = np.asarray(n_codes_per_feature, np.int32)
    n_codes = int(max(int(n_codes_per_feature.max(initial=2)), 2))
    n_features = codes.shape[1]
    delta_units = sensitivity * UNIT
    width = 2 ** (depth - 1)
    valid = valid_thresholds(n_codes_per_feature, n_codes)
    narrow = codes.shape[0] <= fixed_point.MAX_ROWS
    group = min(group_size(n_codes, width), n_features)
    packed = pack_codes(codes, n_codes, group) if narrow else None

    def level_gaps(cell: jax.Array, parent: jax.Array,
                   level: jax.Array) -> tuple[jax.Array, jax.Array]:
        if not narrow:
            return level_utility(codes, cell, gradient, width, n_codes,
                                 n_codes_per_feature), parent
        hist = level_histogram(packed, cell, gradient, parent, level, n_codes, group,
                               n_features)
        left, right = split_stats(hist[..., None])
        utility = jnp.sum(jnp.abs(left[..., 0]) + jnp.abs(right[..., 0]), axis=0)  # [n, C]
        return fixed_point.floored_gaps(utility, valid, GAP_FLOOR), hist

    def grow_level(state, level):
        feature, threshold, cell, parent = state
        gaps, parent = level_gaps(cell, parent, level)
        utility = jnp.where(gaps > jnp.iinfo(jnp.int32).min, gaps.astype(jnp.float32),
                            -jnp.inf).reshape(-1)
        if epsilon is None:
            index = jnp.argmax(utility).astype(jnp.int32)
            cost = Cost(jnp.float32(0.0), jnp.float32(0.0), "none")
        else:
            index, cost = permute_and_flip(jax.random.fold_in(key, level), utility,
                                           delta_units, epsilon,
                                           label=f"level gain, sens. {sensitivity:g}")
        f, t = index // n_codes, index % n_codes
        feature = set_level(feature, level, jnp.full(width, f, jnp.int32))
        threshold = set_level(threshold, level, jnp.full(width, t, jnp.int32))
        # the level's nodes are 2**level − 1 + cell in the dense layout
        cell = 2 * cell + step(feature, threshold, codes, cell + (1 << level) - 1)
        return (feature, threshold, cell, parent), cost

    parent = jnp.zeros((width, n_features, n_codes) if narrow else (0,), jnp.int32)
    (feature, threshold, cell, _), cost = jax.lax.scan(
        grow_level, (*empty_splits(depth), jnp.zeros(codes.shape[0], jnp.int32), parent),
        jnp.arange(depth, dtype=jnp.int32))
    return feature, threshold, cell, cost

__all__ = ["GAP_FLOOR", "grow_oblivious", "level_histogram", "level_utility", "wide_row_limit"]
