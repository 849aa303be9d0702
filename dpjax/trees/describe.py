"""Looking inside dense trees: nested rules as text, and feature importances read off the
released values alone.

Everything here is post-processing of what a model released (its splits, noisy leaves, tables
and votes) and of the public feature spec: it reads no data and spends no budget.

**Importances** (non-negative, one per feature, summing to 1 when any is positive):

* a split of a dense tree on feature ``f`` at level ``l`` scores how far apart the released
  outputs of its two subtrees are (the gap of their mean leaf values; for class scores, the
  total-variation distance of their normalised summed scores), weighted by ``2**−l``, the share
  of cells under the node, and by the tree's weight (``|β|`` for Mα-boost);
* an additive table (cyclic Newton boosting) scores each feature by the range of its released
  moves over its codes;
* votes (stumps, rules) score each feature by the number of voting hypotheses that read it.

Without the data there are no record counts to weight by; these importances say what the
released model distinguishes, not how often it does so on a population.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpjax.data import FeatureSpec
from dpjax.data.describe import split_text
from dpjax.trees.dense import depth_of, level_slice


def tree_lines(feature: np.ndarray, threshold: np.ndarray, spec: FeatureSpec,
               leaf_text: Callable[[int, int], str], max_depth: int = 3) -> list[str]:
    """A dense tree as indented ``if … / else`` lines down to ``max_depth`` levels; a deeper
    subtree is one line ``leaf_text(first, stop)`` over its leaves ``[first, stop)``."""
    depth = depth_of(len(feature))
    lines: list[str] = []

    def visit(node: int, level: int, indent: str) -> None:
        position = node - (2**level - 1)
        width = 2 ** (depth - level)
        if level == depth or level == max_depth:
            more = f"{width} leaves: " if width > 1 else ""
            lines.append(f"{indent}-> {more}{leaf_text(position * width, (position + 1) * width)}")
            return
        lines.append(f"{indent}if {split_text(spec, int(feature[node]), int(threshold[node]))}:")
        visit(2 * node + 1, level + 1, indent + "  ")
        lines.append(f"{indent}else:")
        visit(2 * node + 2, level + 1, indent + "  ")

    visit(0, 0, "")
    return lines


def describe_dense_trees(feature: np.ndarray, threshold: np.ndarray, spec: FeatureSpec,
                         leaf_text: Callable[[int, int, int], str], *, title: str,
                         tree_titles: list[str] | None = None, max_trees: int = 3,
                         max_depth: int = 3) -> str:
    """A batch ``[T]`` of dense trees as text: ``title``, then the first ``max_trees`` trees
    (:func:`tree_lines`; ``leaf_text(t, first, stop)`` for tree ``t``)."""
    n_trees = feature.shape[0]
    lines = [title]
    for t in range(min(n_trees, max_trees)):
        lines.append(f"  {tree_titles[t] if tree_titles else f'tree {t + 1}'}:")
        lines += ["    " + line for line in tree_lines(
            feature[t], threshold[t], spec, lambda a, b, t=t: leaf_text(t, a, b), max_depth)]
    if n_trees > max_trees:
        lines.append(f"  ... {n_trees - max_trees} more trees")
    return "\n".join(lines)


def class_scores_text(scores: np.ndarray, classes: tuple) -> str:
    """Summed class scores of some leaves: the leading class and the scores."""
    total = scores.reshape(-1, scores.shape[-1]).sum(0)
    return (f"{classes[int(np.argmax(total))]} "
            f"({', '.join(f'{c}: {s:.3g}' for c, s in zip(classes, total, strict=True))})")


def values_text(values: np.ndarray) -> str:
    """Leaf values: the value, or the mean and range of several."""
    values = values.reshape(-1)
    if values.size == 1:
        return f"{values[0]:+.4g}"
    return f"mean {values.mean():+.4g} (from {values.min():+.4g} to {values.max():+.4g})"


def tree_importances(feature: np.ndarray, leaf: np.ndarray, n_features: int,
                     weight: np.ndarray | None = None) -> np.ndarray:
    """Per-feature importance of a batch ``[T]`` of dense trees (module docstring): ``leaf``
    ``[T, L]`` values or ``[T, L, C]`` class scores; ``weight [T]`` the trees' weights. One
    pass per level: a level's nodes split their leaves into halves side by side."""
    feature = np.asarray(feature).reshape(-1, np.shape(feature)[-1])
    n_trees, n_leaves = feature.shape[0], feature.shape[1] + 1
    leaf = np.asarray(leaf, np.float64).reshape(n_trees, n_leaves, -1)
    weight = np.ones(n_trees) if weight is None else np.abs(np.asarray(weight, np.float64))
    scores = np.zeros(n_features)
    for level in range(depth_of(feature.shape[1])):
        halves = leaf.reshape(n_trees, 2**level, 2, n_leaves // 2 ** (level + 1), -1)
        gaps = _gaps(halves[:, :, 0], halves[:, :, 1])               # [T, 2**level]
        np.add.at(scores, feature[:, level_slice(level)],
                  weight[:, None] * 2.0**-level * gaps)
    return scores


def _gaps(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """How far apart the outputs of subtrees ``[..., leaves, outputs]`` are: the gap of the
    mean values (one output) or the total-variation distance of the normalised summed class
    scores (0 where a side has no positive score)."""
    if left.shape[-1] == 1:
        return np.abs(left.mean((-2, -1)) - right.mean((-2, -1)))
    p, q = (np.clip(side.sum(-2), 0.0, None) for side in (left, right))
    p_total, q_total = p.sum(-1, keepdims=True), q.sum(-1, keepdims=True)
    valid = (p_total > 0) & (q_total > 0)
    distance = 0.5 * np.abs(p / np.where(valid, p_total, 1.0)
                            - q / np.where(valid, q_total, 1.0)).sum(-1, keepdims=True)
    return np.where(valid, distance, 0.0)[..., 0]


def normalised(scores: np.ndarray) -> np.ndarray:
    """``scores`` scaled to sum to 1 (all zeros stay zeros)."""
    scores = np.asarray(scores, np.float64)
    total = scores.sum()
    return scores / total if total > 0 else scores
