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
    trees.leaf[t, leaf_t(x)]``; ``P(y = 1 | x) = sigmoid(F(x))``.

    Attributes:
      prior: float32 scalar, the released log-odds of the class balance (``F_0``).
      table: float32 ``[n, K]`` the cyclic rounds' moves summed per (feature, code) (zeros for
        the random shape).
      trees: :class:`DenseTree` batch ``[T]`` of the random shape's trees (leaf values the
        moves); a single all-zero tree for the cyclic shape.
    """

    prior: jax.Array
    table: jax.Array
    trees: DenseTree


def newton_decision(model: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
    """The score ``F(x)`` (log-odds of class 1) of every row, ``[m]``."""
    n = codes.shape[1]
    additive = model.table[jnp.arange(n)[None, :], codes.astype(jnp.int32)].sum(-1)
    return model.prior + additive + apply_trees(model.trees, codes).sum(0)


def newton_proba(model: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
    """Class scores ``[m, 2]``, ``P(y = 1) = sigmoid(F(x))``."""
    positive = jax.nn.sigmoid(newton_decision(model, codes))
    return jnp.stack([1.0 - positive, positive], axis=-1)


def newton_predict(model: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
    """``F(x) > 0`` as class indices; a score of exactly 0 takes the released prior's class."""
    score = newton_decision(model, codes)
    return jnp.where(score != 0, score > 0, model.prior > 0).astype(jnp.int32)
