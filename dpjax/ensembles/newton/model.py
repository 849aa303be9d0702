"""The fitted params of private Newton boosting: :class:`NewtonBoostedModel`, its score, class
scores and predictions (pure functions of the released params)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from dpjax.trees.dense import DenseTree
from dpjax.trees.predict import apply_trees


@chex.dataclass(frozen=True)
class NewtonBoostedModel:
    """A fitted private Newton-boosted model: ``F(x) = prior + Σ_f table[f, x_f] + Σ_t
    trees.leaf[t, leaf_t(x)]``; ``P(y = 1 | x) = sigmoid(F(x))`` for two classes, and for
    ``C > 2`` classes ``F(x)`` is a vector of class scores, ``P(y = c | x) = softmax(F(x))_c``.

    Attributes:
      prior: float32 scalar, the released log-odds of the class balance (``F_0``); ``[C]``
        the centred log class counts for ``C > 2`` classes.
      table: float32 ``[n, K]`` (``[n, K, C]``) the cyclic rounds' moves summed per (feature,
        code) (zeros for the random shape).
      trees: :class:`DenseTree` batch ``[T]`` of the random shape's trees (leaf values the
        moves, ``[T, L]`` or ``[T, L, C]``); a single all-zero tree for the cyclic shape.
    """

    prior: jax.Array
    table: jax.Array
    trees: DenseTree


def newton_decision(model: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
    """The score ``F(x)`` of every row: ``[m]`` the log-odds of class 1, or ``[m, C]`` the class
    scores of a ``C > 2``-class model."""
    n = codes.shape[1]
    additive = model.table[jnp.arange(n)[None, :], codes.astype(jnp.int32)].sum(1)
    return model.prior + additive + apply_trees(model.trees, codes).sum(0)


def newton_proba(model: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
    """Class scores ``[m, C]``: ``P(y = 1) = sigmoid(F(x))``, or ``softmax(F(x))``."""
    score = newton_decision(model, codes)
    if score.ndim == 2:
        return jax.nn.softmax(score, axis=-1)
    positive = jax.nn.sigmoid(score)
    return jnp.stack([1.0 - positive, positive], axis=-1)


def newton_predict(model: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
    """``F(x) > 0`` as class indices (a score of exactly 0 takes the released prior's class);
    the largest class score for ``C > 2`` classes (ties to the lower index)."""
    score = newton_decision(model, codes)
    if score.ndim == 2:
        return jnp.argmax(score, axis=-1).astype(jnp.int32)
    return jnp.where(score != 0, score > 0, model.prior > 0).astype(jnp.int32)
