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

import dataclasses
from collections.abc import Callable

import numpy as np

from dpjax.data import FeatureSpec
from dpjax.data.describe import split_text
from dpjax.trees.dense import depth_of, level_slice


def branches_open(feature: np.ndarray, threshold: np.ndarray,
                  n_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which branches of each internal node of one dense tree some code vector can take, given
    the tests above it: ``(yes, no)``, bool ``[2**d - 1]`` each (both false at a node no code
    reaches). Along a path, feature ``f``'s codes lie in an interval ``[lo, hi]`` (``0 ..
    n_codes[f] - 1`` at the root, narrowed by every earlier test on ``f``); a test ``code <=
    t`` then sends some codes left iff ``lo <= t`` and some right iff ``hi > t``. A test with
    one branch open cannot split its rows (random structures draw such repeats). One pass per
    level, vectorised over the level's nodes and their ancestors (``O(d * 2**d)``)."""
    feature = np.asarray(feature, np.int64)
    threshold = np.asarray(threshold, np.int64)
    high_of = np.asarray(n_codes, np.int64) - 1
    depth = depth_of(feature.shape[-1])
    yes = np.zeros(feature.shape[-1], bool)
    no = np.zeros(feature.shape[-1], bool)
    reach = np.ones(1, bool)
    for level in range(depth):
        nodes = level_slice(level)
        position = np.arange(2**level)
        f, t = feature[nodes], threshold[nodes]
        lo, hi = np.zeros_like(f), high_of[np.clip(f, 0, len(high_of) - 1)]
        for above in range(level):
            ancestor = 2**above - 1 + (position >> (level - above))
            right = ((position >> (level - above - 1)) & 1).astype(bool)
            same = feature[ancestor] == f
            lo = np.where(same & right, np.maximum(lo, threshold[ancestor] + 1), lo)
            hi = np.where(same & ~right, np.minimum(hi, threshold[ancestor]), hi)
        yes[nodes], no[nodes] = reach & (lo <= t), reach & (hi > t)
        reach = np.stack([yes[nodes], no[nodes]], -1).reshape(-1)
    return yes, no


def reachable_leaves(feature: np.ndarray, threshold: np.ndarray,
                     n_codes: np.ndarray) -> np.ndarray:
    """Bool ``[2**d]``: the leaves of one dense tree that some code vector reaches
    (:func:`branches_open`)."""
    if not len(feature):
        return np.ones(1, bool)
    yes, no = branches_open(feature, threshold, n_codes)
    last = level_slice(depth_of(len(feature)) - 1)
    return np.stack([yes[last], no[last]], -1).reshape(-1)


@dataclasses.dataclass(frozen=True, eq=False)
class Shown:
    """A node of a dense tree as it is shown: a split (``node`` its heap index, ``children``
    its yes and no branches) or a group of leaves (``node = -1``); ``leaves`` the indices of
    the reachable leaves under it."""

    node: int
    leaves: np.ndarray
    children: tuple[Shown, ...] = ()


def shown_tree(feature: np.ndarray, threshold: np.ndarray, n_codes: np.ndarray,
               max_depth: int = 3) -> Shown:
    """One dense tree as it is shown (:class:`Shown`): down to ``max_depth`` tests that split,
    every test that cannot split given the path's earlier tests (:func:`branches_open`)
    dropped for its one open branch, and each deeper subtree a group of its reachable
    leaves."""
    depth = depth_of(len(feature))
    if depth == 0:
        return Shown(-1, np.zeros(1, np.int64))
    yes, no = branches_open(feature, threshold, n_codes)
    reach = np.flatnonzero(np.stack([yes[level_slice(depth - 1)], no[level_slice(depth - 1)]],
                                    -1).reshape(-1))

    def visit(node: int, level: int, tests: int) -> Shown:
        width = 2 ** (depth - level)
        first = (node - (2**level - 1)) * width
        leaves = reach[np.searchsorted(reach, first):np.searchsorted(reach, first + width)]
        if level == depth or tests == max_depth:
            return Shown(-1, leaves)
        if yes[node] and no[node]:
            return Shown(node, leaves, (visit(2 * node + 1, level + 1, tests + 1),
                                        visit(2 * node + 2, level + 1, tests + 1)))
        return visit(2 * node + (1 if yes[node] else 2), level + 1, tests)

    return visit(0, 0, 0)


def tree_lines(feature: np.ndarray, threshold: np.ndarray, spec: FeatureSpec,
               leaf_text: Callable[[np.ndarray], str], max_depth: int = 3) -> list[str]:
    """A dense tree as indented ``if … / else`` lines (:func:`shown_tree`: down to
    ``max_depth`` tests, none that cannot split given the earlier ones); a leaf, or a deeper
    subtree, is one line ``-> [N leaves: ]leaf_text(leaves)`` over the indices of its
    reachable leaves."""
    lines: list[str] = []

    def visit(shown: Shown, indent: str) -> None:
        if shown.node < 0:
            more = f"{len(shown.leaves)} leaves: " if len(shown.leaves) > 1 else ""
            lines.append(f"{indent}-> {more}{leaf_text(shown.leaves)}")
            return
        node = shown.node
        lines.append(f"{indent}if {split_text(spec, int(feature[node]), int(threshold[node]))}:")
        visit(shown.children[0], indent + "  ")
        lines.append(f"{indent}else:")
        visit(shown.children[1], indent + "  ")

    visit(shown_tree(feature, threshold, spec.n_codes, max_depth), "")
    return lines


def describe_dense_trees(feature: np.ndarray, threshold: np.ndarray, spec: FeatureSpec,
                         leaf_text: Callable[[int, np.ndarray], str], *, title: str,
                         tree_titles: list[str] | None = None, max_trees: int = 3,
                         max_depth: int = 3) -> str:
    """A batch ``[T]`` of dense trees as text: ``title``, then the first ``max_trees`` trees
    (:func:`tree_lines`; ``leaf_text(t, leaves)`` for the reachable leaves ``leaves`` of tree
    ``t``)."""
    n_trees = feature.shape[0]
    lines = [title]
    for t in range(min(n_trees, max_trees)):
        lines.append(f"  {tree_titles[t] if tree_titles else f'tree {t + 1}'}:")
        lines += ["    " + line for line in tree_lines(
            feature[t], threshold[t], spec, lambda leaves, t=t: leaf_text(t, leaves),
            max_depth)]
    if n_trees > max_trees:
        lines.append(f"  ... {n_trees - max_trees} more trees")
    return "\n".join(lines)


def class_scores_text(scores: np.ndarray, classes: tuple) -> str:
    """Released class scores (a leaf's class distribution) of one leaf or several. One leaf:
    its leading class and its scores, ``"1 (scores 0: 0.2, 1: 0.8)"``. Several: their mean
    scores and how many leaves each class leads, ``"mean scores 0: 0.4, 1: 0.6; leading 0 in 3,
    1 in 5"`` (never their sum: scores are not counts, and a sum over many leaves mostly
    weighs the leaves no record reached)."""
    scores = np.asarray(scores, np.float64).reshape(-1, np.shape(scores)[-1])
    if scores.shape[0] == 1:
        listed = ", ".join(f"{c}: {s:.3g}" for c, s in zip(classes, scores[0], strict=True))
        return f"{classes[int(np.argmax(scores[0]))]} (scores {listed})"
    mean = ", ".join(f"{c}: {s:.3g}" for c, s in zip(classes, scores.mean(0), strict=True))
    leading = np.bincount(scores.argmax(-1), minlength=len(classes))
    led = ", ".join(f"{c} in {n}" for c, n in zip(classes, leading, strict=True) if n)
    return f"mean scores {mean}; leading {led}"


def values_text(values: np.ndarray) -> str:
    """Leaf values: the value, or the mean and range of several."""
    values = np.asarray(values).reshape(-1)
    if values.size == 1:
        return f"{values[0]:+.4g}"
    return f"mean {values.mean():+.4g} (from {values.min():+.4g} to {values.max():+.4g})"


def additive_terms(table: np.ndarray | None, feature: np.ndarray, threshold: np.ndarray,
                   leaf: np.ndarray, n_codes: np.ndarray) -> np.ndarray | None:
    """Each feature's exact term of an additive score ``F(x) = F_0 + Σ_f term[f, x_f]``, float64
    ``[n, K]`` (``[n, K, C]`` for class scores), or ``None`` when the score is not additive.

    ``table`` ``[n, K(, C)]`` holds per-feature moves (or ``None``); the dense trees ``[T]``
    (``leaf [T, L(, C)]``) add theirs. A tree whose tests that split (:func:`branches_open`)
    all read one feature is a function of that feature: its leaf for each code is added to
    that feature's term. A tree of all-zero leaves adds nothing; a tree that splits on two
    features or more makes the score not additive (``None``); a tree that cannot split is a
    constant, added to the first feature's term (so that the terms sum to ``F − F_0``)."""
    by_class = np.ndim(leaf) == np.ndim(feature) + 1 or (table is not None
                                                        and np.ndim(table) == 3)
    feature = np.asarray(feature).reshape(-1, np.shape(feature)[-1])
    threshold = np.asarray(threshold).reshape(feature.shape)
    leaf = np.asarray(leaf, np.float64).reshape(feature.shape[0], feature.shape[1] + 1, -1)
    n_codes = np.asarray(n_codes, np.int64)
    width = int(n_codes.max(initial=1))
    if table is None:
        terms = np.zeros((len(n_codes), width, leaf.shape[-1]))
    else:
        table = np.asarray(table, np.float64)
        terms = table.reshape(*table.shape[:2], -1).copy()
    depth = depth_of(feature.shape[1])
    for t in range(feature.shape[0]):
        if not np.any(leaf[t]):
            continue
        yes, no = branches_open(feature[t], threshold[t], n_codes)
        read = np.unique(feature[t][yes & no])
        if len(read) > 1:
            return None
        f = int(read[0]) if len(read) else 0    # a tree that splits nothing: a constant, the
        code = np.arange(int(n_codes[f]))        # first feature's term carries it
        node = np.zeros_like(code)
        for _ in range(depth):     # a test on another feature has one open branch: take it
            right = np.where(feature[t][node] == f, code > threshold[t][node], ~yes[node])
            node = 2 * node + 1 + right
        terms[f, :len(code)] += leaf[t, node - (2**depth - 1)]
    return terms if by_class else terms[..., 0]


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
