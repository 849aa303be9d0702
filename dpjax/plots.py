"""Pictures of models, sweeps and ledgers (needs matplotlib: ``pip install 'dpjax[plots]'``).

Every function draws on ``ax`` (a new figure's axes when ``None``) and returns the axes; all of
them draw released values and public settings only.

* :func:`plot_tree`: one dense tree of a model, splits as boxes, leaves with their released
  values, down to ``max_depth`` tests (tests that cannot split left out);
* :func:`plot_shape`: a feature's shape plot, the score against its bins: the exact term of an
  additive model (boosting's cyclic shape), else a partial dependence on rows ``X``
  (:func:`shape_of` returns the numbers);
* :func:`plot_importances`: :meth:`dpjax.Model.feature_importances` as bars;
* :func:`plot_sweep`: test accuracy against ``ε`` of a :class:`dpjax.Sweep`, the mean over seeds
  with one standard deviation, a line per setting of the other swept values;
* :func:`plot_ledger`: a ledger as a budget bar, each release's share of the spent ``ε`` against
  the requested one.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    import matplotlib.pyplot as plt
except ImportError as error:  # pragma: no cover - exercised only without matplotlib
    raise ImportError("dpjax.plots needs matplotlib: pip install 'dpjax[plots]'") from error

from dpjax._model import _jitted_decision, _jitted_proba, by_rows
from dpjax.data import encode
from dpjax.data.describe import code_label, split_text
from dpjax.learners import registration
from dpjax.privacy import PrivacyLedger
from dpjax.trees.dense import DenseTree, depth_of
from dpjax.trees.describe import Shown, class_scores_text, shown_tree, values_text


def _axes(ax: Any, size: tuple[float, float]) -> Any:
    return plt.subplots(figsize=size)[1] if ax is None else ax


def _trees_of(model: Any) -> tuple[DenseTree, Any]:
    """The model's dense trees (:meth:`~dpjax.learner.Learner.dense_trees`) and a ``(t,
    leaves) -> text`` of their reachable leaves ``leaves``."""
    trees = model.config.dense_trees(model.params)
    if not isinstance(trees, DenseTree) or not np.any(np.asarray(trees.leaf) != 0):
        hint = (": its moves are per-feature tables, drawn by dpjax.plots.plot_shape(model, "
                "feature)" if _terms_of(model) is not None else
                "; describe() shows it in words" + (
                    ", and dpjax.plots.plot_shape(model, feature, X) draws a feature's "
                    "partial dependence" if _has_decision(model) else ""))
        raise ValueError(f"a {model.method} model has no dense trees to draw{hint}")
    leaf = np.asarray(trees.leaf)
    if leaf.ndim == 3:
        return trees, lambda t, leaves: class_scores_text(leaf[t, leaves], model.classes)
    return trees, lambda t, leaves: values_text(leaf[t, leaves])


def plot_tree(model: Any, tree: int = 0, *, max_depth: int = 3, ax: Any = None) -> Any:
    """Tree ``tree`` of ``model`` (any learner with dense trees: random trees, RF-L/E, Mα-boost,
    Newton boosting's random and oblivious shapes) down to ``max_depth`` tests: each split a box
    with its condition (left: true), each leaf (or deeper subtree) a box with its released
    values (a subtree: its reachable leaves' mean scores). A test that cannot split given the
    tests above it is left out, as in :meth:`dpjax.Model.describe`
    (:func:`dpjax.trees.describe.shown_tree`). Boosting's cyclic shape has no trees: draw its
    per-feature moves with :func:`plot_shape`."""
    trees, leaf_text = _trees_of(model)
    feature = np.asarray(trees.feature)[tree]
    threshold = np.asarray(trees.threshold)[tree]
    depth = depth_of(feature.shape[-1])
    shown = min(depth, max_depth)
    root = shown_tree(feature, threshold, model.spec.n_codes, max_depth)
    groups: list[Shown] = []

    def collect(node: Shown, level: int) -> int:
        if node.node < 0:
            groups.append(node)
            return level
        return max(collect(child, level + 1) for child in node.children)

    levels = collect(root, 0)
    ax = _axes(ax, (min(2.2 * len(groups) + 1.0, 24.0), 2.0 + 1.6 * levels))
    box = dict(boxstyle="round", fc="white", ec="0.4")
    slot = {id(g): (i + 0.5) / len(groups) for i, g in enumerate(groups)}

    def draw(node: Shown, level: int) -> float:
        if node.node < 0:
            x = slot[id(node)]
            text = leaf_text(tree, node.leaves)
            for long, short in ((" (", "\n("), (" from ", "\nfrom "), ("; ", "\n"),
                                ("scores ", "scores\n"), (", ", "\n")):
                text = text.replace(long, short)
            if len(node.leaves) > 1:
                text = f"{len(node.leaves)} leaves\n{text}"
        else:
            xs = [draw(child, level + 1) for child in node.children]
            x = sum(xs) / 2
            text = split_text(model.spec, int(feature[node.node]), int(threshold[node.node]))
            for cx, label in zip(xs, ("yes", "no"), strict=True):
                ax.plot([x, cx], [-level, -level - 1], color="0.6", zorder=0)
                ax.text((x + cx) / 2, -level - 0.5, label, fontsize=7, color="0.4",
                        ha="center")
        ax.text(x, -level, text, ha="center", va="center", fontsize=7, bbox=box)
        return x

    draw(root, 0)
    ax.set_xlim(0, 1)
    ax.set_ylim(-levels - 0.6, 0.6)
    ax.axis("off")
    ax.set_title(f"{model.method}: tree {tree + 1}"
                 + (f" (down to {shown} tests that split, of {depth} levels)" if shown < depth
                    else ""))
    return ax


@dataclasses.dataclass(frozen=True)
class FeatureShape:
    """How a model's score moves with one feature (:func:`shape_of`).

    Attributes:
      feature: the feature's name; index: its column.
      labels: each code's meaning (``"x in [0, 0.25)"``, ``"colour = red"``, ``"x is
        missing"``), ``[K]`` for the feature's ``K`` codes.
      values: float ``[K]`` (``[K, C]``, one column per class): the feature's exact term of the
        model's additive score ``F(x)`` (``exact``), or the partial dependence on the rows
        ``X``: the mean score with every row's feature set to each code in turn.
      exact: whether ``values`` are the additive model's own term (else a partial dependence).
      ylabel: what ``values`` measure.
    """

    feature: str
    index: int
    labels: tuple[str, ...]
    values: np.ndarray
    exact: bool
    ylabel: str


def _terms_of(model: Any) -> np.ndarray | None:
    """The exact per-feature terms ``[n, K(, C)]`` of an additive model (its config's
    ``feature_terms``), or ``None``."""
    return model.config.feature_terms(model.params, model.spec)


def _has_decision(model: Any) -> bool:
    return registration(model.config).decision is not None


def _feature_index(model: Any, feature: int | str) -> int:
    names = model.spec.names
    if isinstance(feature, str):
        if feature not in names:
            raise ValueError(f"no feature named {feature!r}; the features are {list(names)}")
        return names.index(feature)
    index = int(feature)
    if not -len(names) <= index < len(names):
        raise ValueError(f"feature {feature} is out of range for {len(names)} features")
    return index % len(names)


def _score_text(model: Any) -> str:
    if model.target is not None:
        return "the prediction"
    if not _has_decision(model):
        return "P(class)" if len(model.classes) > 2 else f"P({model.classes[1]})"
    if len(model.classes) > 2:
        return "the class scores F(x)"
    return f"F(x) (positive: {model.classes[1]})"


def shape_of(model: Any, feature: int | str, X: Any = None, *,
             max_rows: int = 2000) -> FeatureShape:
    """How ``model``'s score moves with ``feature`` (an index or a name), from released values
    (and, for a partial dependence, the rows ``X`` you pass: nothing is read from the training
    data).

    An additive model (boosting's cyclic shape, or any whose trees each split on one feature:
    its config's ``feature_terms``) gives the feature's exact term of ``F(x)``, the moves of
    its codes; then ``F(x)`` changes by ``values[b] − values[a]`` when the feature moves from
    code ``a`` to ``b``, whatever the other features (``X`` is not needed, and not read). Any
    other model needs ``X``: the values
    are the partial dependence, the mean over (at most ``max_rows`` evenly spaced) rows of
    ``X`` of the model's decision function (its ``P(class)`` where it has none) with the
    feature set to each code in turn."""
    index = _feature_index(model, feature)
    spec = model.spec
    n_codes = int(spec.n_codes[index])
    labels = tuple(code_label(spec, index, c) for c in range(n_codes))
    name = spec.names[index]
    terms = _terms_of(model)
    if terms is not None:
        return FeatureShape(name, index, labels, np.asarray(terms[index, :n_codes]), True,
                            f"term of {_score_text(model)}")
    if X is None:
        raise ValueError(
            f"this {model.method} model is not additive (its trees split on several features, "
            "or it has no per-feature terms), so no one curve per feature is exact: pass X "
            "(rows to average over, e.g. a test set) for the partial dependence, "
            f"dpjax.plots.plot_shape(model, {feature!r}, X)")
    codes = encode(spec, X)
    if codes.shape[0] > max_rows:
        codes = codes[np.linspace(0, codes.shape[0] - 1, max_rows).round().astype(int)]
    varied = np.repeat(codes[None], n_codes, 0)
    varied[:, :, index] = np.arange(n_codes, dtype=codes.dtype)[:, None]
    varied = varied.reshape(-1, codes.shape[1])
    if _has_decision(model):
        scores = by_rows(_jitted_decision(model.config), model.params, varied)
    else:
        scores = by_rows(_jitted_proba(model.config), model.params, varied)
        scores = scores[:, 1] if scores.shape[-1] == 2 else scores
    values = np.asarray(scores, np.float64).reshape(n_codes, codes.shape[0], *scores.shape[1:])
    return FeatureShape(name, index, labels, values.mean(1), False,
                        f"partial dependence: mean {_score_text(model)} on X")


def plot_shape(model: Any, feature: int | str | Sequence[int | str], X: Any = None, *,
               ax: Any = None, max_rows: int = 2000) -> Any:
    """The shape plot of ``feature`` (:func:`shape_of`, as DP-EBM draws them): the score
    against the feature's bins, a step over each numeric bin's range (a point per category),
    the missing code a point of its own. Exact for an additive model (boosting's cyclic
    shape); any other needs ``X`` for a partial dependence. A list of features draws a grid,
    one axes each (returned as a list; ``ax`` then a sequence of axes or ``None``)."""
    if isinstance(feature, (list, tuple)):
        count = len(feature)
        if ax is None:
            cols = min(3, count)
            rows = -(-count // cols)
            axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows),
                                squeeze=False)[1].reshape(-1)
            for extra in axes[count:]:
                extra.axis("off")
            ax = axes[:count]
        if len(ax) != count:
            raise ValueError(f"{count} features need {count} axes, got {len(ax)}")
        drawn = [plot_shape(model, f, X, ax=a, max_rows=max_rows)
                 for f, a in zip(feature, ax, strict=True)]
        if drawn:
            drawn[0].figure.tight_layout()
        return drawn
    shape = shape_of(model, feature, X, max_rows=max_rows)
    spec, index = model.spec, shape.index
    values = shape.values.reshape(len(shape.labels), -1)
    names = ([f"class {c}" for c in model.classes] if values.shape[1] > 1
             and model.target is None else [None] * values.shape[1])
    ax = _axes(ax, (6.0, 4.0))
    n_values = int(spec.n_values[index])
    numeric = spec.categories[index] is None and int(spec.n_ordered[index]) > 0
    if numeric:
        edges = np.concatenate([[spec.lower[index]], spec.bin_edges(index),
                                [spec.upper[index]]])
        missing_x = edges[-1] + 0.06 * (edges[-1] - edges[0])
        for k, label in enumerate(names):
            ax.stairs(values[:n_values, k], edges, color=f"C{k % 10}", lw=2,
                      baseline=None, label=None if label is None else str(label))
        ax.set_xlabel(shape.feature)
    else:
        missing_x = n_values
        ticks = [lab.removeprefix(f"{shape.feature} ").removeprefix("= ").removeprefix("is ")
                 for lab in shape.labels[:n_values]]
        for k, label in enumerate(names):
            ax.plot(np.arange(n_values), values[:n_values, k], "o", color=f"C{k % 10}",
                    label=None if label is None else str(label))
        ax.set_xticks(np.arange(n_values), ticks, rotation=30, ha="right", fontsize=8)
        ax.set_xlabel(shape.feature)
    if len(shape.labels) > n_values:                # the missing code
        for k in range(values.shape[1]):
            ax.plot([missing_x], [values[n_values, k]], "D", color=f"C{k % 10}")
        ax.annotate("missing", (missing_x, values[n_values].max()), textcoords="offset points",
                    xytext=(0, 6), ha="center", fontsize=7)
    if shape.exact or _has_decision(model):
        ax.axhline(0.0, color="0.7", lw=0.8, zorder=0)
    ax.set_ylabel(shape.ylabel, fontsize=8)
    ax.set_title(f"{model.method}: {shape.feature}" + ("" if shape.exact
                                                       else " (partial dependence)"))
    if values.shape[1] > 1:
        ax.legend(fontsize=7)
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
