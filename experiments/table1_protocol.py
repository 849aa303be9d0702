"""Table 1 of Bojarski et al.: the protocol -- datasets, the paper's numbers, the forests of the
grid (composed from the stages of :mod:`dpjax.ensembles.random_trees`), the reference learners,
model selection and the pooled summary (spec ``shared/specs/dp-random-decision-trees.md`` §5).

Protocol (§5.2, A12, A13): per run, a stratified 90% / 10% train / test split, then 10% of the
training part held out for validation; ``epsilon = 1000 / n_tr`` with ``n_tr`` the 90% part;
``(k, h)`` chosen per method and per run with the smallest validation error over ``h in 1..15``
and ``k in {1, 3, ..., 21}``; the models are fitted on the 81% part; the reported number is the
pooled test error (%) of the selected models over 10 runs with the binomial 95% half-width
``1.96 sqrt(p (1 - p) / N)``, ``N`` the test points of all runs.

Efficiency: per (run, h) the library's forest stages run once over all ``k``: the structures of
21 random trees (``forest_structures``), the training leaf counts (``forest_leaf_index``,
``leaf_class_counts``) and, for every ``k``, a fresh release of all 21 trees' counts with
Laplace noise of scale ``k / eps`` (``release_counts``; each k its own eps-DP forest), their
leaf estimates ("paper" and "smoothed", the same noisy counts) and the votes of the first ``k``
trees (``forest_predict(..., n_active=k)``). The stages are jitted separately so that compiled
code is shared across datasets where shapes allow. Every run's keys derive from
``jax.random.key(run)``.
"""

from __future__ import annotations

import functools

import harness
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.tree import DecisionTreeClassifier

import dpjax
from dpjax.ensembles.random_trees import (
    fallback_leaves,
    forest_leaf_index,
    forest_predict,
    forest_structures,
    leaf_class_counts,
    leaf_estimates,
    release_counts,
)
from dpjax.trees import DenseTree

STEM = "table1_random_trees"
# (registry name, paper's name, paper's n)
DATASETS = [
    ("banknote", "Ban Aut", 1372),
    ("transfusion", "BTSC", 748),
    ("vote", "CVR", 435),
    ("mammographic", "Mam Mass", 961),
    ("mushroom", "Mushroom", 8124),
    ("adult_a9a_train", "Adult", 32561),
    ("covertype", "Covertype", 581012),
    ("quantum", "Quantum", 50000),
]
PAPER_NAMES = {name: paper for name, paper, _ in DATASETS}
PAPER_METHODS = ("n-dpRFMV", "n-dpRFTA", "dpRFMV", "dpRFTA")
SMOOTHED = ("dpRFMV smoothed", "dpRFTA smoothed")
METHODS = (*PAPER_METHODS, *SMOOTHED)
REFERENCES = ("CART (rpart-like)", "HistGradientBoosting")
# Table 1 as decoded in the spec (§5.3): error, CI half-width, (k, h). BTSC's (k,h) digits
# "114"/"113" read (1,14) or (11,4) (A22).
PAPER = {
    "Ban Aut": {"rpart": (3.65, 0.99, ""), "n-dpRFMV": (3.09, 0.92, "(21,15)"),
                "n-dpRFTA": (3.46, 0.97, "(17,9)"), "dpRFMV": (5.44, 1.20, "(21,11)"),
                "dpRFTA": (5.22, 1.18, "(7,12)")},
    "BTSC": {"rpart": (18.92, 2.81, ""), "n-dpRFMV": (22.19, 2.98, "(1,14)|(11,4)"),
             "n-dpRFTA": (22.47, 2.99, "(1,14)|(11,4)"),
             "dpRFMV": (23.42, 3.03, "(1,14)|(11,4)"),
             "dpRFTA": (23.42, 3.03, "(1,13)|(11,3)")},
    "CVR": {"rpart": (9.30, 2.73, ""), "n-dpRFMV": (9.05, 2.70, "(19,6)"),
            "n-dpRFTA": (5.95, 2.22, "(13,9)"), "dpRFMV": (8.10, 2.56, "(15,9)"),
            "dpRFTA": (6.90, 2.38, "(15,9)")},
    "Mam Mass": {"rpart": (21.88, 2.61, ""), "n-dpRFMV": (16.95, 2.37, "(9,12)"),
                 "n-dpRFTA": (16.21, 2.33, "(19,15)"), "dpRFMV": (16.95, 2.37, "(5,12)"),
                 "dpRFTA": (17.37, 2.40, "(9,8)")},
    "Mushroom": {"rpart": (3.33, 0.39, ""), "n-dpRFMV": (0.83, 0.20, "(21,15)"),
                 "n-dpRFTA": (0.26, 0.11, "(13,14)"), "dpRFMV": (4.69, 0.46, "(3,13)"),
                 "dpRFTA": (4.16, 0.43, "(3,15)")},
    "Adult": {"rpart": (17.75, 0.42, ""), "n-dpRFMV": (21.70, 0.45, "(3,14)"),
              "n-dpRFTA": (21.58, 0.45, "(3,14)"), "dpRFMV": (22.18, 0.45, "(3,11)"),
              "dpRFTA": (21.72, 0.45, "(7,11)")},
    "Covertype": {"rpart": (26.90, 0.11, ""), "n-dpRFMV": (33.39, 0.12, "(21,15)"),
                  "n-dpRFTA": (30.80, 0.12, "(21,15)"), "dpRFMV": (38.75, 0.13, "(3,13)"),
                  "dpRFTA": (37.82, 0.12, "(3,13)")},
    "Quantum": {"rpart": (32.08, 0.41, ""), "n-dpRFMV": (34.81, 0.42, "(21,15)"),
                "n-dpRFTA": (33.06, 0.41, "(19,14)"), "dpRFMV": (39.91, 0.43, "(21,13)"),
                "dpRFTA": (39.01, 0.43, "(13,9)")},
}
SPLIT = harness.holdout(test_fraction=0.1, val_fraction=0.1)
ORDER = ("h", "k")  # selection ties: the first in the loop h = 1..15, k = 1, 3, ..., 21


def protocol_epsilon(split: harness.Split) -> float:
    """A13: ``epsilon = 1000 / n_tr``, ``n_tr`` the 90% part (training + validation)."""
    assert split.val is not None
    return 1000.0 / (len(split.train) + len(split.val))


def grid_key(run: int, h: int) -> jax.Array:
    """The key of every forest of height ``h`` in run ``run``."""
    return jax.random.fold_in(jax.random.key(run), h)


# ----------------------------------------------------------------- the forests (library stages)

structures = jax.jit(forest_structures, static_argnames=("n_trees", "depth", "threshold_range"))


@jax.jit
def training_counts(feature: jax.Array, threshold: jax.Array, codes: jax.Array,
                    y: jax.Array) -> jax.Array:
    """Exact class counts ``[T, 2**depth, 2]`` of the training rows in every tree."""
    return leaf_class_counts(forest_leaf_index(feature, threshold, codes), y, 2,
                             feature.shape[-1] + 1)


def noisy_counts(key: jax.Array, counts: jax.Array, epsilon: jax.Array,
                 k: jax.Array) -> jax.Array:
    """The release of the forest of size ``k``: every tree's counts at ``epsilon / k`` each
    (sensitivity 1, add/remove). The plain float32 quotient, not ``leaf_epsilon``'s rounded-
    down share: the numbers of this reproduction were produced with it."""
    return release_counts(key, counts, epsilon / k, sensitivity=1.0, noise="laplace",
                          budget="parallel")[0]


@functools.partial(jax.jit, static_argnames=("ks",))
def grid_leaves(k_noise: jax.Array, k_fallback: jax.Array, counts: jax.Array,
                epsilon: jax.Array, *, ks: tuple[int, ...]) -> jax.Array:
    """Leaf distributions ``[3, K, T, L, 2]``: non-private ("paper" estimate of the exact counts,
    U[0,1] on empty leaves; the same for every k), then for every k the private forest -- the
    k-th subkey of ``k_noise`` releases all T trees' counts (each k its own eps-DP release) --
    with the "paper" (k-th subkey of ``fold_in(k_fallback, 1)``) and the "smoothed" estimate
    of the same noisy counts. Depends on the depth only through shapes."""
    k = jnp.asarray(ks, jnp.float32)
    noisy = jax.vmap(noisy_counts, in_axes=(0, None, None, 0))(
        jax.random.split(k_noise, len(ks)), counts, epsilon, k)
    exact = leaf_estimates(k_fallback, counts.astype(jnp.float32), 2, estimate="paper",
                           noise="laplace")
    fallback_keys = jax.random.split(jax.random.fold_in(k_fallback, 1), len(ks))
    return jnp.stack([
        jnp.broadcast_to(exact, noisy.shape),
        jax.vmap(functools.partial(leaf_estimates, n_classes=2, estimate="paper",
                                   noise="laplace"))(
            fallback_keys, noisy),
        leaf_estimates(k_fallback, noisy, 2, estimate="smoothed", noise="laplace"),
    ])


@functools.partial(jax.jit, static_argnames=("ks",))
def grid_votes(feature: jax.Array, threshold: jax.Array, leaves: jax.Array, codes: jax.Array,
               *, ks: tuple[int, ...]) -> jax.Array:
    """Predictions (bool, True = class 1) ``[6, K, m]`` in the order of ``METHODS``: for each
    leaf estimate of :func:`grid_leaves`, majority voting then threshold averaging of the first
    k trees (``forest_predict`` with ``n_active = k``)."""

    def predict(leaf: jax.Array, k: jax.Array, voting: str) -> jax.Array:
        forest = DenseTree(feature=feature, threshold=threshold, leaf=leaf)
        return forest_predict(forest, codes, voting, n_active=k) == 1

    k = jnp.asarray(ks, jnp.int32)
    votes = [jax.vmap(jax.vmap(functools.partial(predict, voting=voting)), in_axes=(0, None))(
        leaves, k) for voting in ("majority", "threshold")]
    return jnp.stack(votes, axis=1).reshape(2 * leaves.shape[0], len(ks), -1)


def grid_predictions(key: jax.Array, n_codes: np.ndarray, codes_train: jax.Array,
                     y_train: jax.Array, codes_eval: jax.Array, epsilon: float, *, depth: int,
                     ks: tuple[int, ...]) -> np.ndarray:
    """Predictions (bool ``[len(METHODS), len(ks), m_eval]``) of every method for every forest
    size ``k`` in ``ks``, all forests of height ``depth`` drawn from ``key``.

    Key use mirrors the forest's ``fit``: ``(structure, noise, fallback) = split(key, 3)`` and
    the structures of ``max(ks)`` trees (the first k are a k-tree fit's trees); the non-private
    forests use the fallback key for their empty leaves, so at ``k = max(ks)`` they equal
    ``dpjax.fit`` with ``n_trees = max(ks)``, ``epsilon=None``, ``leaf_estimate="paper"``."""
    k_structure, k_noise, k_fallback = jax.random.split(key, 3)
    feature, threshold = structures(k_structure, n_trees=max(ks), depth=depth,
                                    n_codes_per_feature=jnp.asarray(n_codes))
    counts = training_counts(feature, threshold, codes_train, y_train)
    leaves = grid_leaves(k_noise, k_fallback, counts, jnp.float32(epsilon), ks=ks)
    return np.asarray(grid_votes(feature, threshold, leaves, codes_eval, ks=ks))


def random_trees_grid(ks: tuple[int, ...], hs: tuple[int, ...]) -> harness.Method:
    """All six Table 1 variants for every (k, h) of the grid in ``len(hs)`` passes."""

    def evaluate(data: harness.Data, split: harness.Split, seed: int) -> list[harness.Row]:
        epsilon = protocol_epsilon(split)
        codes = jnp.asarray(data.codes)
        evaluation = np.concatenate([split.val, split.test])
        n_val = len(split.val)
        truth = data.y[evaluation].astype(bool)
        rows = []
        for h in hs:
            pred = grid_predictions(
                grid_key(seed, h), data.spec.n_codes, codes[split.train],
                jnp.asarray(data.y[split.train]), codes[evaluation], epsilon, depth=h, ks=ks)
            wrong = pred != truth                                      # [M, K, m_eval]
            val_wrong, test_wrong = wrong[..., :n_val].sum(-1), wrong[..., n_val:].sum(-1)
            for i, method in enumerate(METHODS):
                for j, k in enumerate(ks):
                    rows.append({"method": method, "k": k, "h": h, "epsilon": epsilon,
                                 "val_wrong": int(val_wrong[i, j]),
                                 "test_wrong": int(test_wrong[i, j])})
        return rows

    return harness.Method("random trees", evaluate)


def check_against_fit(data: harness.Data, run: int, h: int, ks: tuple[int, ...]) -> None:
    """Sanity check of the grid's key schedule and masked votes: its non-private forests at
    ``k = max(ks)`` must predict exactly what ``dpjax.fit(..., method="random_trees",
    epsilon=None, n_trees=max(ks), depth=h, leaf_estimate="paper")`` does."""
    split = SPLIT(data.y, run)
    key = grid_key(run, h)
    pred = grid_predictions(
        key, data.spec.n_codes, jnp.asarray(data.codes[split.train]),
        jnp.asarray(data.y[split.train]), jnp.asarray(data.codes[split.test]), 1.0, depth=h,
        ks=ks)
    for i, voting in enumerate(("majority", "threshold")):
        model = dpjax.fit(data.X.iloc[split.train], data.y[split.train], method="random_trees",
                          epsilon=None, key=key, bounds=data.bounds, missing=data.missing,
                          n_bins=data.spec.n_bins, n_trees=max(ks), depth=h, voting=voting,
                          leaf_estimate="paper")
        expected = model.predict(data.X.iloc[split.test]) == 1
        if not np.array_equal(pred[i, -1], expected):
            raise AssertionError(f"{data.name} h={h} {voting}: grid != dpjax.fit "
                                 f"({np.sum(pred[i, -1] != expected)} differ)")


def fallback_share(data: harness.Data, run: int, k: int, h: int,
                   ks: tuple[int, ...]) -> tuple[float, float]:
    """For the private forest (k, h) of ``run`` -- the same keys as the grid -- the share of the
    k trees' votes on the test points that come from a leaf whose theta is the U[0,1] fallback
    of Algorithm 2 (a noisy count < 0, or both 0), and the share that comes from such a leaf
    although it holds training points (information thrown away)."""
    split = SPLIT(data.y, run)
    k_structure, k_noise, _ = jax.random.split(grid_key(run, h), 3)
    feature, threshold = structures(k_structure, n_trees=max(ks), depth=h,
                                    n_codes_per_feature=jnp.asarray(data.spec.n_codes))
    counts = training_counts(feature, threshold, jnp.asarray(data.codes[split.train]),
                             jnp.asarray(data.y[split.train]))
    leaves = forest_leaf_index(feature, threshold, jnp.asarray(data.codes[split.test]))[:k]
    noisy = noisy_counts(jax.random.split(k_noise, len(ks))[ks.index(k)], counts,
                         jnp.float32(protocol_epsilon(split)), jnp.float32(k))
    at = jnp.take_along_axis(fallback_leaves(noisy)[:k], leaves, axis=1)
    occupied = jnp.take_along_axis(counts.sum(-1)[:k] > 0, leaves, axis=1)
    return float(at.mean()), float((at & occupied).mean())


def reference_methods() -> list[harness.Method]:
    """Non-private references, fitted on train + validation codes: a CART with rpart's default
    minsplit/minbucket (no cp pruning: not identical to rpart) and gradient boosting."""
    cart, boosting = REFERENCES
    return [
        harness.sklearn_method(cart, lambda: DecisionTreeClassifier(
            min_samples_split=20, min_samples_leaf=7, random_state=0)),
        harness.sklearn_method(boosting, lambda: HistGradientBoostingClassifier(
            random_state=0)),
    ]


def mammographic_birads_fixed(directory: str | None) -> harness.Data:
    """Data-version check: mammographic with its one BI-RADS value 55 (UCI documents 1-5; 55
    is a typo) set to 5 and BI-RADS bounds (0, 6), the documented assessment range."""
    data = harness.load("mammographic", directory)
    X = data.X.copy()
    X.loc[X["bi_rads"] == 55, "bi_rads"] = 5.0
    bounds = {**data.bounds, "bi_rads": (0.0, 6.0)}
    spec = dpjax.data.make_feature_spec(X, bounds, n_bins=255, missing=data.missing)
    return harness.Data(data.name, X, data.y, dpjax.data.encode(spec, X), spec, bounds,
                        data.missing)


# ------------------------------------------------------------------ selection and summary


def select(grid: pd.DataFrame, tie_break: str = "first") -> pd.DataFrame:
    """The selected (k, h) per dataset, method and run (smallest validation error; ties to the
    first, or last, in the loop order), with ``n_ties``: settings tied at that error."""
    selected = harness.select_best(grid, order=ORDER, tie_break=tie_break)
    best = grid.groupby(["dataset", "method", "run"])["val_error"].transform("min")
    ties = (grid["val_error"] == best).groupby(
        [grid["dataset"], grid["method"], grid["run"]]).sum().rename("n_ties")
    return selected.merge(ties.reset_index(), on=["dataset", "method", "run"])


def parse_setting(text: str) -> tuple[int, int]:
    """``"(k,h)"`` -> ``(k, h)``."""
    k, h = (int(v) for v in text.strip("()").split(","))
    return k, h


def paper_setting(dataset: str, method: str) -> tuple[int, int]:
    """The paper's (k, h) for a dataset and method (BTSC: the first reading)."""
    return parse_setting(PAPER[dataset][method][2].split("|")[0])


def sort_table(table: pd.DataFrame) -> pd.DataFrame:
    """Rows in the paper's dataset order, then in the order of ``METHODS``."""
    return harness.sort_rows(table, {"dataset": [paper for _, paper, _ in DATASETS],
                                     "method": list(METHODS)})


def summarise(selected: pd.DataFrame, references: pd.DataFrame) -> pd.DataFrame:
    """Per dataset x method: pooled test error and CI (%), modal (k, h), the paper's numbers,
    the difference, and the reference columns (majority class, CART, gradient boosting)."""
    ours = harness.binomial_summary(selected).merge(
        harness.mode_setting(selected, ["k", "h"]), on=["dataset", "method"])
    ours["setting"] = ours["mode"]
    refs = harness.binomial_summary(references).pivot(index="dataset", columns="method",
                                                       values="error").reset_index()
    ours["dataset"] = ours["dataset"].map(PAPER_NAMES)
    refs["dataset"] = refs["dataset"].map(PAPER_NAMES)
    paper = pd.DataFrame([
        {"dataset": d, "method": m, "error": e, "ci": c, "setting": s}
        for d, methods in PAPER.items() for m, (e, c, s) in methods.items() if m in METHODS])
    table = harness.paper_comparison(ours, paper).merge(refs, on="dataset", how="left")
    table = table.rename(columns={"majority class": "majority"})
    table["rpart paper"] = table["dataset"].map({d: v["rpart"][0] for d, v in PAPER.items()})
    return sort_table(table)
