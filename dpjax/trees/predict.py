"""Routing examples to leaves: ``d`` gathers, ``node = 2*node + 1 + (code > threshold)``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpjax.trees.dense import DenseTree, depth_of


def step(feature: jax.Array, threshold: jax.Array, codes: jax.Array,
         node: jax.Array) -> jax.Array:
    """Whether each example goes right at its current node: ``codes[i, feature[node_i]] >
    threshold[node_i]`` (0/1 int32 ``[m]``); ``feature``/``threshold`` are indexed by ``node``.
    The code is a row-wise gather with no bounds clamping (split features index the columns):
    1.5x faster than a clamped gather, and it keeps rows on their device when the codes are
    sharded by rows (no all-gather of the codes)."""
    code = jnp.take_along_axis(codes, feature[node][:, None], axis=1,
                               mode="promise_in_bounds")[:, 0]
    return (code.astype(jnp.int32) > threshold[node]).astype(jnp.int32)


def leaf_index(feature: jax.Array, threshold: jax.Array, codes: jax.Array) -> jax.Array:
    """Leaf ``0..2**d - 1`` reached by each example of ``codes`` (uint8 ``[m, n]``) in one tree
    with split arrays ``[2**d - 1]``. Returns int32 ``[m]``."""
    depth = depth_of(feature.shape[-1])
    node = jnp.zeros(codes.shape[0], jnp.int32)
    for _ in range(depth):
        node = 2 * node + 1 + step(feature, threshold, codes, node)
    return node - (2**depth - 1)


def apply_tree(tree: DenseTree, codes: jax.Array) -> jax.Array:
    """Leaf values of each example, ``[m]`` or ``[m, C]``, for one unbatched tree."""
    return tree.leaf[leaf_index(tree.feature, tree.threshold, codes)]


def apply_trees(trees: DenseTree, codes: jax.Array) -> jax.Array:
    """Leaf values ``[k, m, ...]`` for a batch of trees with one leading axis ``k``."""
    return jax.vmap(apply_tree, in_axes=(0, None))(trees, codes)
