"""The fitted params of Mα-boost: :class:`MalphaModel`, its score ``H(x)``, class scores and
predictions (pure functions of the released params; spec
``docs/specs/boosted-dp-trees-malpha.md`` §3, A22)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from dpjax.losses.proper import inverse_link
from dpjax.trees.dense import DenseTree
from dpjax.trees.predict import apply_trees


@chex.dataclass(frozen=True)
class MalphaModel:
    """A fitted Mα-boosted ensemble: ``H(x) = prior + Σ_t beta[t]·trees.leaf[t, leaf_t(x)]``.

    Attributes:
      trees: :class:`DenseTree` batch ``[T]`` with released leaf values ``leaf [T, 2**d]``.
      beta: ``[T]`` released leveraging coefficients (1 when folded into the leaves).
      alpha: ``[T, 2**d - 1]`` the α each internal node was split with (O.C diagnostics).
      prior: float32 scalar ``H_0``, the score of the released class prior (0 without it).
    """

    trees: DenseTree
    beta: jax.Array
    alpha: jax.Array
    prior: jax.Array


def malpha_decision(model: MalphaModel, codes: jax.Array) -> jax.Array:
    """``H(x) = H_0 + Σ_t β_t·h̃_t(x)`` for every row of ``codes``, ``[m]``."""
    return model.prior + jnp.einsum("t,tm->m", model.beta, apply_trees(model.trees, codes))


def malpha_proba(model: MalphaModel, codes: jax.Array) -> jax.Array:
    """Class scores ``[m, 2]``: ``P(+1) = ψ^(1)^{-1}(H(x))``, the Matsushita (α = 1) inverse link
    of the score, strictly increasing in ``H`` (the α < 1 links are flat near 0 and would tie
    most scores at 1/2); ``P(+1) = 1/2`` exactly when ``H(x) = 0``."""
    positive = inverse_link(malpha_decision(model, codes), 1.0)
    return jnp.stack([1 - positive, positive], axis=-1)


def malpha_predict(model: MalphaModel, codes: jax.Array) -> jax.Array:
    """``sign(H(x))`` as class indices, with ``sign(0) := +1`` (A22)."""
    return (malpha_decision(model, codes) >= 0).astype(jnp.int32)


__all__ = ["MalphaModel", "malpha_decision", "malpha_predict", "malpha_proba"]
