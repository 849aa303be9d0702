"""The toy learner's config (registered as ``method="toy_tree"``), its params, its pure fit and
its description."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import chex
import jax
import jax.numpy as jnp
import numpy as np

from dpjax.learner import (
    FitContext,
    Learner,
    hyper,
    positive_float,
    positive_int,
    traced,
)
from dpjax.learners import register
from dpjax.mechanisms import laplace_mechanism
from dpjax.trees import DenseTree, apply_trees, leaf_index, leaf_stats, random_splits
from dpjax.trees.describe import class_scores_text, describe_dense_trees, tree_importances


@chex.dataclass(frozen=True)
class ToyTreeModel:
    """The released tree: random splits, leaves the noisy class counts plus ``smoothing``."""

    tree: DenseTree


def fit(config: ToyTree, key: jax.Array, codes: jax.Array, y: jax.Array,
        epsilon: jax.Array | None, context: FitContext, **traced_values: Any,
        ) -> tuple[ToyTreeModel, dict[str, Any]]:
    """One tree of depth ``config.depth`` with splits from the key alone; its leaves' class
    counts released with exact discrete Laplace noise at the whole ``epsilon`` (one release)."""
    smoothing = config.resolve_traced(traced_values)["smoothing"]
    k_splits, k_noise = jax.random.split(key)
    feature, threshold = random_splits(k_splits, config.depth, context.n_codes_per_feature)
    onehot = jax.nn.one_hot(y, context.n_classes, dtype=jnp.int32)
    counts = leaf_stats(leaf_index(feature, threshold, codes), onehot, 2**config.depth)
    costs = {}
    if epsilon is not None:
        counts, costs["leaf class counts"] = laplace_mechanism(
            k_noise, counts, context.sensitivity, epsilon, integer=True,
            label=f"L1 sens. {context.sensitivity:g}")
    leaf = jnp.maximum(counts.astype(jnp.float32), 0.0) + smoothing
    tree = DenseTree(feature=feature[None], threshold=threshold[None], leaf=leaf[None])
    return ToyTreeModel(tree=tree), costs


@register(params=(ToyTreeModel, DenseTree), estimator="DPToyTreeClassifier")
@dataclasses.dataclass(frozen=True)
class ToyTree(Learner):
    """A toy: one random tree with noisy leaf class counts (``depth``, traced ``smoothing``)."""

    name: ClassVar[str] = "toy_tree"
    depth: int = hyper(3, positive_int(10))
    smoothing: float = traced(1.0, positive_float)

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced_values: jax.Array) -> tuple[ToyTreeModel, Any]:
        return fit(self, key, codes, y, epsilon, context, **traced_values)

    def proba(self, params: ToyTreeModel, codes: jax.Array) -> jax.Array:
        leaf = apply_trees(params.tree, codes)[0]
        return leaf / leaf.sum(-1, keepdims=True)

    def dense_trees(self, params: ToyTreeModel) -> DenseTree:
        return params.tree

    def describe(self, params: ToyTreeModel, spec: Any, classes: tuple) -> str:
        leaf = np.asarray(params.tree.leaf)
        return describe_dense_trees(
            np.asarray(params.tree.feature), np.asarray(params.tree.threshold), spec,
            lambda t, leaves: class_scores_text(leaf[t, leaves], classes), title="a toy tree:")

    def importances(self, params: ToyTreeModel, spec: Any) -> np.ndarray:
        return tree_importances(params.tree.feature, params.tree.leaf, spec.n_features)
