"""Pictures of models, sweeps and ledgers (needs matplotlib: ``pip install 'dpjax[plots]'``).

Every function draws on ``ax`` (a new figure's axes when ``None``) and returns the axes; all of
them draw released values and public settings only.

* :func:`plot_tree`: one dense tree of a model, splits as boxes, leaves with their released
  values, down to ``max_depth`` levels;
* :func:`plot_importances`: :meth:`dpjax.Model.feature_importances` as bars;
* :func:`plot_sweep`: test accuracy against ``ε`` of a :class:`dpjax.Sweep`, the mean over seeds
  with one standard deviation, a line per setting of the other swept values;
* :func:`plot_ledger`: a ledger as a budget bar, each release's share of the spent ``ε`` against
  the requested one.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

try:
    import matplotlib.pyplot as plt
except ImportError as error:  # pragma: no cover - exercised only without matplotlib
    raise ImportError("dpjax.plots needs matplotlib: pip install 'dpjax[plots]'") from error

from dpjax.data.describe import split_text
from dpjax.privacy import PrivacyLedger
from dpjax.trees.dense import DenseTree, depth_of
from dpjax.trees.describe import class_scores_text, values_text


def _axes(ax: Any, size: tuple[float, float]) -> Any:
    return plt.subplots(figsize=size)[1] if ax is None else ax


def _trees_of(model: Any) -> tuple[DenseTree, Any]:
    """The model's dense trees (:meth:`~dpjax.learner.Learner.dense_trees`) and a ``(t, first,
    stop) -> text`` of their leaves."""
    trees = model.config.dense_trees(model.params)
    if not isinstance(trees, DenseTree) or not np.any(np.asarray(trees.leaf) != 0):
        raise ValueError(f"a {model.method} model has no dense trees to draw")
    leaf = np.asarray(trees.leaf)
    if leaf.ndim == 3:
        return trees, lambda t, a, b: class_scores_text(leaf[t, a:b], model.classes)
    return trees, lambda t, a, b: values_text(leaf[t, a:b])


def plot_tree(model: Any, tree: int = 0, *, max_depth: int = 3, ax: Any = None) -> Any:
    """Tree ``tree`` of ``model`` (any learner with dense trees: random trees, RF-L/E, Mα-boost,
    Newton boosting's random shape): each split a box with its condition (left: true), each
    leaf (or deeper subtree) a box with its released values."""
    trees, leaf_text = _trees_of(model)
    feature = np.asarray(trees.feature)[tree]
    threshold = np.asarray(trees.threshold)[tree]
    depth = depth_of(feature.shape[-1])
    shown = min(depth, max_depth)
    ax = _axes(ax, (min(4.0 * 2**shown, 24.0), 2.0 + 1.6 * shown))
    box = dict(boxstyle="round", fc="white", ec="0.4")

    def place(level: int, position: int) -> tuple[float, float]:
        return (position + 0.5) / 2**level, -float(level)

    for level in range(shown + 1):
        for position in range(2**level):
            x, y = place(level, position)
            if level < shown:
                node = 2**level - 1 + position
                text = split_text(model.spec, int(feature[node]), int(threshold[node]))
                for child, label in ((2 * position, "yes"), (2 * position + 1, "no")):
                    cx, cy = place(level + 1, child)
                    ax.plot([x, cx], [y, cy], color="0.6", zorder=0)
                    ax.text((x + cx) / 2, (y + cy) / 2, label, fontsize=7, color="0.4",
                            ha="center")
            else:
                width = 2 ** (depth - level)
                text = leaf_text(tree, position * width, (position + 1) * width)
                text = text.replace(" (", "\n(").replace(" from ", "\nfrom ")
            ax.text(x, y, text, ha="center", va="center", fontsize=7, bbox=box)
    ax.set_xlim(0, 1)
    ax.set_ylim(-shown - 0.6, 0.6)
    ax.axis("off")
    ax.set_title(f"{model.method}: tree {tree + 1}"
                 + (f" (top {shown} of {depth} levels)" if shown < depth else ""))
    return ax


def plot_importances(model: Any, *, ax: Any = None) -> Any:
    """The model's feature importances (released values only) as horizontal bars."""
    importances = model.feature_importances()
    order = np.argsort(importances)
    ax = _axes(ax, (6.0, 0.8 + 0.3 * len(order)))
    ax.barh([model.spec.names[i] for i in order], importances[order], color="C0")
    ax.set_xlabel("importance (from the released model alone)")
    ax.set_title(f"{model.method}: feature importances")
    return ax


def plot_sweep(sweep: Any, X: Any, y: Any, *, ax: Any = None) -> Any:
    """Accuracy (a regression sweep's R²) of every model of ``sweep`` on ``(X, y)`` against
    ``ε``: the mean over seeds
    and one standard deviation, one line per setting of the other swept values."""
    accuracy = np.asarray(sweep.score(X, y))          # [grid, seeds]
    others = [name for name in sweep.grid[0] if name != "epsilon"]
    ax = _axes(ax, (6.0, 4.0))
    groups: dict[tuple, list[int]] = {}
    for i, point in enumerate(sweep.grid):
        groups.setdefault(tuple(point[n] for n in others), []).append(i)
    for colour, (setting, points) in zip(itertools.cycle([f"C{k}" for k in range(10)]),
                                         groups.items()):
        points = sorted(points, key=lambda i: sweep.grid[i]["epsilon"])
        eps = np.asarray([sweep.grid[i]["epsilon"] for i in points], float)
        mean, sd = accuracy[points].mean(1), accuracy[points].std(1)
        label = ", ".join(f"{n}={v}" for n, v in zip(others, setting, strict=True)) or None
        ax.plot(eps, mean, "o-", color=colour, label=label)
        ax.fill_between(eps, mean - sd, mean + sd, color=colour, alpha=0.2)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    metric = "accuracy" if getattr(sweep, "target", None) is None else "R²"
    ax.set_ylabel(f"{metric} (mean ± sd over {accuracy.shape[1]} seeds)")
    ax.set_title(f"{sweep.method}: {metric} against the privacy budget")
    if others:
        ax.legend(fontsize=8)
    return ax


def plot_ledger(ledger: PrivacyLedger, *, ax: Any = None) -> Any:
    """The ledger as one budget bar: each release kind's total ``ε`` (basic composition) in
    turn, against the requested ``ε`` (the composed total is marked when it is smaller)."""
    if not ledger.private:
        raise ValueError("the ledger is not private: " + "; ".join(ledger.not_private_reasons))
    ax = _axes(ax, (8.0, 2.2 + 0.25 * len(ledger.entries)))
    start = 0.0
    for k, entry in enumerate(ledger.entries):
        ax.barh(0, entry.total_epsilon, left=start, color=f"C{k % 10}", edgecolor="white",
                label=f"{entry.what} ({entry.count} x {entry.epsilon:.3g})")
        start += entry.total_epsilon
    ax.axvline(ledger.requested_epsilon, color="black", ls="--", label="requested epsilon")
    if ledger.epsilon < start:
        ax.axvline(ledger.epsilon, color="0.3", ls=":", label="spent (composed)")
    ax.set_yticks([])
    ax.set_xlim(0, max(start, ledger.requested_epsilon) * 1.05)
    ax.set_xlabel("epsilon")
    ax.set_title(f"privacy ledger: spent {ledger.epsilon:.4g} of {ledger.requested_epsilon:g}")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=2)
    return ax
