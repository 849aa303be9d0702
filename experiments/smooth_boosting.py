"""Private smooth boosting of 1-rules (issue 10): the Asadi et al. protocol (spec
``docs/specs/private-boosted-stumps-smooth-reweighting.md`` §7) with dpjax's defaults.

    python experiments/smooth_boosting.py            # adult, mushroom, codrna (DP-LR needs peers)
    python experiments/smooth_boosting.py --quick    # mushroom only, 2 folds, 2 seeds
    python experiments/smooth_boosting.py --weak-learner tree   # DP-TopDown trees instead

Protocol: adult trains on ``adult_train`` and tests on ``adult_test`` (the canonical split);
mushroom and codrna by 5-fold stratified cross-validation (seed 0). Features: 10 equal-width bins
of the public ranges (the full files'), categories one-hot, missing values their own code — the
paper's "dataset-oblivious one-hot coding" (§7.1). ``ε ∈ {0.05, 0.1, ..., 0.5, 1, 3, 5}``.

* dpjax ``smooth_boost`` with its **defaults** (κ = 0.35, λ = 0.5, at most 15 rounds, the public
  round schedule; add/remove neighbours with the noisy row count): one ``dpjax.sweep`` over every
  ε × 5 seeds per training set (one compiled program; its compile and run times are reported),
  and the non-private fit (``epsilon=None``).
* diffprivlib's ``LogisticRegression`` (objective perturbation, the paper's DP-LR baseline) on the
  one-hot codes with ``data_norm = sqrt(attributes)`` (every row has that many ones), ``C = 1``
  (the paper tunes ``C`` by cross-validation on the private data, uncharged; we do not tune).

The paper tunes τ, κ and λ per ε by cross-validation on the private data without charging it
(§6.3); its numbers are thus optimistic relative to a fixed default. Reported: accuracy per ε
(mean over seeds and folds), the number of distinct binary features used (the paper's
sparsity, Tables 3, 6, 7), and the paper's figures where the text gives them.

``--weak-learner tree`` runs DP-TopDown trees (their defaults: 2 splits, 10% of a round for the
leaves, the provable calibration) in place of the 1-rules (the paper's secondary learner; its
text gives no tree numbers for these datasets).

Writes ``experiments/results/smooth_boosting.{csv,md,png,json}`` (``smooth_boosting_tree.*``
for trees).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

import dpjax  # noqa: E402

STEM = "smooth_boosting"
OURS = "dpjax smooth_boost"
LEARNER_NAMES = {"stump": "1-rules", "tree": "DP-TopDown trees (2 splits)"}
COMMAND_FLAGS = {"stump": "", "tree": " --weak-learner tree"}
EPSILONS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 1.0, 3.0, 5.0)
SEEDS = 5
FOLDS = 5
DATASETS = ("adult", "mushroom", "codrna")
# the paper's accuracies given in its text (Table 11 at ε = 1; Table 4's 0.4-DP adult model)
PAPER_ACCURACY = {("adult", 1.0): 0.83, ("codrna", 1.0): 0.86, ("mushroom", 1.0): 0.98,
                  ("adult", 0.4): 0.82}
# Tables 3, 6, 7: mean number of binary features used, per ε
PAPER_SPARSITY = {
    "adult": (4.6, 4.8, 3.8, 3.6, 7.0, 13.8, 7.6, 6.4, 19.2, 12.8, 30.6, 72.8, 49.8),
    "codrna": (6.0, 12.4, 19.6, 16.8, 11.2, 10.2, 26.4, 19.8, 34.4, 25.4, 54.2, 44.2, 32.0),
    "mushroom": (4.6, 7.2, 5.8, 8.6, 6.2, 5.6, 9.0, 9.8, 9.4, 11.8, 14.4, 28.8, 11.8),
}


def load(name: str) -> tuple[harness.Data, harness.Data | None]:
    """``(train, test)`` for adult (the canonical files, coded under the training file's
    public schema), ``(data, None)`` for the cross-validated datasets; 10 bins."""
    if name == "adult":
        train = harness.load("adult_train", n_bins=10)
        X, y = dpjax.load_dataset("adult_test", harness.data_dir())
        codes = dpjax.data.encode(train.spec, X)
        return train, harness.Data("adult_test", X, np.asarray(y), codes, train.spec,
                                   train.bounds, train.missing)
    return harness.load(name, n_bins=10), None


def features_used(sweep: dpjax.Sweep) -> np.ndarray:
    """Distinct binary features ``(feature, code)`` among the live, non-constant 1-rules (or
    the splits of the voting trees) of every model of a sweep, ``[grid, seeds]``."""
    params = sweep.params
    feature, code = np.asarray(params.feature), np.asarray(params.code)
    if hasattr(params, "label"):       # trees: [grid, seeds, rounds, splits]
        voting = np.any(np.asarray(params.label) != 0, axis=-1)
        live = np.broadcast_to(voting[..., None], feature.shape)
        feature, code, live = (a.reshape(*a.shape[:2], -1) for a in (feature, code, live))
    else:
        live = (np.asarray(params.polarity) != 0) & ~np.asarray(params.constant)
    out = np.zeros(feature.shape[:2], int)
    for i, j in np.ndindex(out.shape):
        out[i, j] = len(set(zip(feature[i, j][live[i, j]], code[i, j][live[i, j]],
                                strict=True)))
    return out


def one_hot(data: harness.Data) -> np.ndarray:
    """The one-hot codes (every row has ``n_features`` ones)."""
    n_codes = data.spec.n_codes
    offsets = np.concatenate([[0], np.cumsum(n_codes)[:-1]])
    matrix = np.zeros((len(data.y), int(n_codes.sum())), np.float32)
    rows = np.arange(len(data.y))[:, None]
    matrix[rows, offsets[None, :] + data.codes.astype(int)] = 1.0
    return matrix


def run_dpjax(name: str, train: harness.Data, test: harness.Data, fold: int,
              seeds: int, weak_learner: str) -> list[dict]:
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sweep = dpjax.sweep(train.X, train.y, method="smooth_boost", epsilon=list(EPSILONS),
                            seeds=[1000 * fold + s for s in range(seeds)], bounds=train.bounds,
                            missing=train.missing, n_bins=10, weak_learner=weak_learner)
        accuracy = sweep.score(test.X, test.y)
        used = features_used(sweep)
        plain = dpjax.fit(train.X, train.y, method="smooth_boost", epsilon=None,
                          weak_learner=weak_learner,
                          bounds=train.bounds, missing=train.missing, n_bins=10, key=fold)
    for i, point in enumerate(sweep.grid):
        for j in range(seeds):
            rows.append({"dataset": name, "fold": fold, "seed": j, "method": OURS,
                         "epsilon": point["epsilon"], "accuracy": float(accuracy[i, j]),
                         "features_used": int(used[i, j]),
                         "spent_epsilon": sweep.ledgers[i].epsilon,
                         "compile_s": sweep.timings.compile_s, "run_s": sweep.timings.run_s,
                         "models": len(sweep.grid) * seeds})
    rows.append({"dataset": name, "fold": fold, "seed": 0,
                 "method": f"{OURS} (non-private)", "epsilon": np.inf,
                 "accuracy": plain.score(test.X, test.y)})
    return rows


def run_dp_lr(name: str, train: np.ndarray, y_train: np.ndarray, test: np.ndarray,
              y_test: np.ndarray, n_attributes: int, fold: int, seeds: int) -> list[dict]:
    import diffprivlib.models as dp

    rows = []
    for epsilon in EPSILONS:
        for seed in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = dp.LogisticRegression(epsilon=epsilon, C=1.0,
                                              data_norm=float(np.sqrt(n_attributes)),
                                              random_state=1000 * fold + seed)
                model.fit(train, y_train)
            rows.append({"dataset": name, "fold": fold, "seed": seed,
                         "method": "diffprivlib DP-LR", "epsilon": epsilon,
                         "accuracy": float(np.mean(model.predict(test) == y_test))})
    return rows


def run(datasets: tuple[str, ...], folds: int, seeds: int, peers: bool,
        weak_learner: str = "stump") -> pd.DataFrame:
    rows: list[dict] = []
    for name in datasets:
        start = time.perf_counter()
        data, held_out = load(name)
        if held_out is not None:
            parts = [(np.arange(len(data.y)), None)]
        else:
            parts = [(split.train, split.test)
                     for split in harness.stratified_kfold(data.y, FOLDS, 0)[:folds]]
        matrix = one_hot(data) if peers else None
        test_matrix = one_hot(held_out) if peers and held_out is not None else None
        for fold, (train_rows, test_rows) in enumerate(parts):
            train = subset(data, train_rows)
            test = held_out if held_out is not None else subset(data, test_rows)
            rows += run_dpjax(name, train, test, fold, seeds, weak_learner)
            if peers:
                rows += run_dp_lr(name, matrix[train_rows], train.y,
                                  test_matrix if held_out is not None else matrix[test_rows],
                                  test.y, data.spec.n_features, fold, seeds)
            majority = int(np.mean(train.y) > 0.5)
            rows.append({"dataset": name, "fold": fold, "seed": 0, "method": "majority",
                         "epsilon": np.inf, "accuracy": float(np.mean(test.y == majority))})
        print(f"{name}: {time.perf_counter() - start:.0f}s", flush=True)
    return pd.DataFrame(rows)


def subset(data: harness.Data, rows: np.ndarray) -> harness.Data:
    return harness.Data(data.name, data.X.iloc[rows].reset_index(drop=True), data.y[rows],
                        data.codes[rows], data.spec, data.bounds, data.missing)


def report(df: pd.DataFrame, meta: dict[str, Any]) -> str:
    private = df[np.isfinite(df["epsilon"])]
    accuracy = private.groupby(["dataset", "epsilon", "method"])["accuracy"].mean().unstack(
        "method")
    ours = private[private["method"] == OURS]
    sparsity = ours.groupby(["dataset", "epsilon"])["features_used"].agg(["mean", "std"])
    table = accuracy.join(sparsity.rename(columns={"mean": "features used (mean)",
                                                   "std": "features used (std)"}))
    table["paper accuracy"] = [PAPER_ACCURACY.get((d, e), np.nan) for d, e in table.index]
    table["paper features used"] = [
        PAPER_SPARSITY[d][EPSILONS.index(e)] if d in PAPER_SPARSITY and e in EPSILONS
        else np.nan for d, e in table.index]
    baselines = df[~np.isfinite(df["epsilon"])].groupby(["dataset", "method"])[
        "accuracy"].mean().unstack("method")
    timing = ours.groupby(["dataset", "fold"])[["compile_s", "run_s", "models"]].first()
    timing = timing.groupby("dataset").mean()
    checks = []
    for (name, epsilon), target in (("adult", 1.0), 0.82), (("mushroom", 1.0), 0.95):
        if (name, epsilon) in accuracy.index:
            value = accuracy.loc[(name, epsilon), OURS]
            checks.append(f"- {name} at ε = {epsilon:g}: **{value:.3f}** (target ≥ {target}; "
                          f"paper {PAPER_ACCURACY[(name, epsilon)]})")
    if ("codrna", 1.0) in accuracy.index:
        checks.append(f"- codrna at ε = 1: **"
                      f"{accuracy.loc[('codrna', 1.0), OURS]:.3f}** (paper 0.86)")
    lines = [
        f"# Private smooth boosting of {LEARNER_NAMES[meta['weak_learner']]} (Asadi et al. "
        "protocol, dpjax defaults)", "",
        f"`python experiments/smooth_boosting.py{COMMAND_FLAGS[meta['weak_learner']]}` — "
        f"dpjax {meta['source_digest']}, "
        f"{meta['wall_s'] / 60:.0f} min on {meta['machine']}. Adult: canonical train/test; "
        f"mushroom, codrna: {meta['folds']}-fold CV; {meta['seeds']} seeds; 10 equal-width bins "
        "of the public ranges, one-hot literals. dpjax uses its defaults at every ε (no tuning); "
        "the paper tunes τ, κ, λ per ε by uncharged cross-validation (spec §6.3).", "",
        ("## Must-show checks" if meta["weak_learner"] == "stump" else
         "## At ε = 1 (the issue's targets are the 1-rules'; here for comparison)"), "",
        *checks, "",
        "## Accuracy and sparsity per ε", "",
        harness.markdown_table(table.reset_index(), floatfmt=".3f"), "",
        "## Non-private references", "",
        harness.markdown_table(baselines.reset_index(), floatfmt=".3f"), "",
        "## One sweep per training set: every ε × seed in one compiled call", "",
        harness.markdown_table(timing.reset_index(), floatfmt=".2f"), "",
    ]
    return "\n".join(lines)


def figure(df: pd.DataFrame) -> Any:
    plt = harness.pyplot()
    private = df[np.isfinite(df["epsilon"])]
    means = private.groupby(["dataset", "epsilon", "method"])["accuracy"].mean().reset_index()
    names = list(dict.fromkeys(means["dataset"]))
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.5), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for method, part in means[means["dataset"] == name].groupby("method"):
            ax.plot(part["epsilon"], part["accuracy"], marker="o", label=method)
        for (dataset, epsilon), value in PAPER_ACCURACY.items():
            if dataset == name:
                ax.plot([epsilon], [value], marker="*", color="k", linestyle="none",
                        markersize=10, label="paper (tuned)")
        ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel("ε")
        ax.set_ylabel("accuracy")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--weak-learner", choices=tuple(LEARNER_NAMES), default="stump")
    args = parser.parse_args(argv)
    peers = harness.diffprivlib_wanted(not args.no_peers)
    datasets, folds, seeds = (("mushroom",), 2, 2) if args.quick else (DATASETS, FOLDS, SEEDS)
    start = time.perf_counter()
    df = run(datasets, folds, seeds, peers, args.weak_learner)
    meta = {"folds": folds, "seeds": seeds, "wall_s": time.perf_counter() - start,
            "machine": f"{platform.machine()} {jax_device()}",
            "source_digest": harness.source_digest(), "quick": args.quick,
            "weak_learner": args.weak_learner}
    markdown = report(df, meta)
    stem = STEM if args.weak_learner == "stump" else f"{STEM}_{args.weak_learner}"
    paths = harness.save_results(stem, tidy=df, markdown=markdown, figure=figure(df), meta=meta)
    print(markdown)
    print("wrote " + ", ".join(str(p) for p in paths))


def jax_device() -> str:
    import jax
    return jax.devices()[0].platform


if __name__ == "__main__":
    main()
