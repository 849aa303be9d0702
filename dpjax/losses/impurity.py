"""Impurity criteria on per-class statistics ``[..., C]``."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gini_impurity(counts: jax.Array) -> jax.Array:
    """Gini impurity ``1 - sum_c p_c**2`` of class counts ``[..., C]`` (0 for empty sets)."""
    total = counts.sum(-1)
    p = counts / jnp.where(total > 0, total, 1.0)[..., None]
    return jnp.where(total > 0, 1.0 - (p * p).sum(-1), 0.0)


def gini_split_score(left: jax.Array, right: jax.Array) -> jax.Array:
    """Minus the size-weighted Gini impurity of a split, ``-(n_L G(L) + n_R G(R))``, on class
    statistics ``[..., C]`` (higher is better; the parent's impurity is a constant)."""
    return -(left.sum(-1) * gini_impurity(left) + right.sum(-1) * gini_impurity(right))
