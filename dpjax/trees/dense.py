"""The dense tree: a complete binary tree of depth ``d`` as three arrays (``docs/design.md``,
"Dense trees").

Internal nodes are in heap order (children of ``i`` are ``2i+1`` and ``2i+2``); an example goes
right at node ``i`` iff ``code[feature[i]] > threshold[i]``. Leading batch axes (trees, seeds,
epsilons, ...) are allowed on every field.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

MAX_DEPTH = 20
"""The deepest dense tree a learner takes (``2**20`` leaves)."""


@chex.dataclass(frozen=True)
class DenseTree:
    """A complete binary tree (or a batch of them).

    Attributes:
      feature: int32 ``[..., 2**d - 1]`` split feature of each internal node.
      threshold: int32 ``[..., 2**d - 1]`` split code: right iff ``code > threshold``.
      leaf: float32 ``[..., 2**d]`` leaf values or ``[..., 2**d, C]`` class scores.
    """

    feature: jax.Array
    threshold: jax.Array
    leaf: jax.Array

    @property
    def depth(self) -> int:
        """Static depth ``d`` read off the shape."""
        return depth_of(self.feature.shape[-1])


def depth_of(n_internal: int) -> int:
    """Depth ``d`` of a complete tree with ``2**d - 1`` internal nodes."""
    depth = (n_internal + 1).bit_length() - 1
    if 2**depth - 1 != n_internal:
        raise ValueError(f"{n_internal} internal nodes is not 2**d - 1")
    return depth


def level_slice(level: int) -> slice:
    """Heap positions of the ``2**level`` nodes of a level."""
    return slice(2**level - 1, 2 ** (level + 1) - 1)


def set_level(array: jax.Array, level: int | jax.Array, values: jax.Array) -> jax.Array:
    """``array [2**d - 1]`` (heap order) with the nodes of level ``k`` set to ``values [w]``,
    ``w >= 2**k``: node ``i`` of the level takes ``values[i]``; the values past ``2**k`` (a
    level padded to a common width, :func:`dpjax.trees.grow.level_split_stats`) are dropped.
    ``level`` may be traced (a loop over the levels)."""
    width = values.shape[0]
    if isinstance(level, int) and width == 2**level:
        return array.at[level_slice(level)].set(values)
    index = jnp.arange(width, dtype=jnp.int32)
    nodes = jnp.left_shift(jnp.int32(1), level)
    heap = jnp.where(index < nodes, nodes - 1 + index, array.shape[0])
    return array.at[heap].set(values, mode="drop")


def empty_splits(depth: int) -> tuple[jax.Array, jax.Array]:
    """Zeroed ``(feature, threshold)`` arrays of a depth-``d`` tree."""
    shape = (2**depth - 1,)
    return jnp.zeros(shape, jnp.int32), jnp.zeros(shape, jnp.int32)
