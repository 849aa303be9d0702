"""Every learner with its defaults against the majority class and the peers (issue 28).

    python experiments/learner_defaults.py                   # every learner, 5 splits × 3 seeds
    python experiments/learner_defaults.py --learners rf_laplace,malpha   # rerun some
    python experiments/learner_defaults.py --quick           # two small datasets, 2 splits

The protocol is ``experiments/private_boosting.py``'s: its 13 binary datasets (adult a 20,000-row
sample), its stratified 70/30 splits (seeds ``0..splits-1``), public bounds, the native frame,
each learner's default bins, ``ε ∈ {0.1, 1, 10}``, pure ``ε``-DP (``δ = 0``). The peers are
that experiment's stored rows on the same splits (``private_boosting.csv``): diffprivlib's
random forest and logistic regression (pure ``ε``, the fair comparison for a pure learner) and
DP-EBM at ``δ = 1e-6`` on both encodings (the best peer of any ``δ``, reported beside it).

Per learner: the cells (dataset, ε) of the datasets with at least 500 training rows where the
default's mean accuracy (over the splits and ``--seeds`` fits per split: dpjax's own noise
averaged, the peers' stored rows are one fit per split) is below the majority rate − 0.01,
the cells at or above the best peer − 0.005, and the mean gap to the best peer. Writes
``experiments/results/learner_defaults.{csv, md}``; ``--learners`` reruns those learners and keeps
the others' stored rows.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import private_boosting as pb  # noqa: E402

import dpjax  # noqa: E402
from dpjax.data.splits import stratified_split  # noqa: E402

STEM = "learner_defaults"
EPSILONS = (0.1, 1.0, 10.0)
MIN_TRAIN_ROWS = 500
MARGIN_MAJORITY, MARGIN_PEER = 0.01, 0.005


def run(learners: list[str], datasets: tuple[str, ...], splits: int, seeds: int
        ) -> pd.DataFrame:
    rows = []
    for name in datasets:
        data = pb.load(name)
        for seed in range(splits):
            train, test = stratified_split(data.y, pb.TEST_FRACTION, seed)
            X, X_test = data.X.iloc[train], data.X.iloc[test]
            base = {"dataset": name, "split": seed, "train_rows": len(train)}
            majority = int(np.mean(data.y[train]) > 0.5)
            rows += [{**base, "method": "majority", "epsilon": e,
                      "accuracy": float(np.mean(data.y[test] == majority))} for e in EPSILONS]
            for method in learners:
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sweep = dpjax.sweep(X, data.y[train], method=method, epsilon=list(EPSILONS),
                                        seeds=[seed + 100 * k for k in range(seeds)],
                                        bounds=data.bounds, missing=data.missing)
                    accuracy = np.asarray(sweep.score(X_test, data.y[test]))
                seconds = time.perf_counter() - start
                for point, accs, ledger in zip(sweep.grid, accuracy, sweep.ledgers, strict=True):
                    assert ledger.epsilon <= point["epsilon"] and ledger.delta == 0.0
                    rows += [{**base, "method": method, "epsilon": point["epsilon"],
                              "seed": seed + 100 * k, "accuracy": float(acc),
                              "spent_epsilon": ledger.epsilon,
                              "seconds": seconds / accuracy.size} for k, acc in enumerate(accs)]
            print(f"{name} split {seed} done", flush=True)
    return pd.DataFrame(rows)


def peer_rows(splits: int) -> pd.DataFrame:
    """The peers' stored rows of ``private_boosting.py`` on the same splits."""
    stored = harness.read_results(pb.STEM)
    keep = stored["method"].isin(list(pb.PEERS)) & stored["epsilon"].isin(EPSILONS) & (
        stored["split"] < splits)
    return stored.loc[keep, ["dataset", "split", "train_rows", "method", "epsilon",
                             "accuracy"]]


def summarise(df: pd.DataFrame, learners: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean accuracy per (dataset, ε) and method with the best peers, and one line per learner
    (cells below the majority, cells at the best peer, mean gaps)."""
    means = df.groupby(["dataset", "epsilon", "method"])["accuracy"].mean().unstack("method")
    pure = [p for p in pb.PURE_PEERS if p in means.columns]
    means["best pure peer"] = means[pure].max(axis=1)
    means["best peer"] = means[[p for p in pb.PEERS if p in means.columns]].max(axis=1)
    rows_of = df.groupby("dataset")["train_rows"].first()
    big = means.index.get_level_values("dataset").isin(rows_of[rows_of >= MIN_TRAIN_ROWS].index)
    lines = []
    for method in learners:
        acc = means[method]
        below = acc[big] < means.loc[big, "majority"] - MARGIN_MAJORITY
        lines.append({
            "learner": method,
            f"cells < majority − {MARGIN_MAJORITY} (≥ {MIN_TRAIN_ROWS} train rows)":
                f"{int(below.sum())}/{int(big.sum())}",
            "which": ", ".join(f"{d} {e:g}" for d, e in below[below].index) or "-",
            "cells ≥ best pure peer − 0.005":
                f"{int((acc >= means['best pure peer'] - MARGIN_PEER).sum())}/{len(acc)}",
            "mean gap to best pure peer": float((acc - means["best pure peer"]).mean()),
            "cells ≥ best peer (any δ) − 0.005":
                f"{int((acc >= means['best peer'] - MARGIN_PEER).sum())}/{len(acc)}",
            "mean gap to best peer (any δ)": float((acc - means["best peer"]).mean())})
    return means, pd.DataFrame(lines)


def report(df: pd.DataFrame, learners: list[str], meta: dict[str, Any]) -> str:
    means, lines = summarise(df, learners)
    shown = ["majority", *learners, "best pure peer", "best peer"]
    return "\n".join([
        "# Every learner's defaults vs the majority class and the peers (issue 28)", "",
        f"`python experiments/learner_defaults.py` — {meta['splits']} stratified 70/30 splits "
        f"per dataset (private_boosting.py's), {meta['seeds']} dpjax fits per split (seeds), "
        "public bounds, native frames, pure ε-DP, mean test accuracy; dpjax at source "
        f"{meta['source_digest']}, {meta['wall_s'] / 60:.0f} min; peers: private_boosting.py's "
        "stored rows on the same splits (best pure peer: "
        "diffprivlib RF / LR; best peer: also DP-EBM at δ = 1e-6).", "",
        harness.markdown_table(lines, floatfmt=".3f"), "",
        "## Mean accuracy per cell", "",
        harness.markdown_table(means[shown].reset_index(), floatfmt=".3f"), ""])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", default=",".join(sorted(dpjax.LEARNERS)))
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3,
                        help="dpjax fits per split (seeds s, s + 100, ...), averaged")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    learners = [name.strip() for name in args.learners.split(",") if name.strip()]
    datasets = pb.QUICK_DATASETS if args.quick else pb.DATASETS
    splits = 2 if args.quick else args.splits
    start = time.perf_counter()
    ours = run(learners, datasets, splits, 1 if args.quick else args.seeds)
    stem = STEM + ("_quick" if args.quick else "")
    path = harness.RESULTS_DIR / f"{stem}.csv"
    everyone = sorted(dpjax.LEARNERS)
    if path.exists() and set(learners) != set(everyone):   # keep the other learners' rows
        stored = pd.read_csv(path)
        ours = pd.concat([stored[~stored["method"].isin(learners + ["majority"])], ours])
    df = pd.concat([ours, peer_rows(splits)], ignore_index=True)
    df = df[df["dataset"].isin(datasets)]
    meta = {"splits": splits, "seeds": 1 if args.quick else args.seeds,
            "source_digest": harness.source_digest(), "wall_s": time.perf_counter() - start}
    present = [m for m in everyone if m in set(df["method"])]
    text = report(df, present, meta)
    print(text)
    harness.save_results(stem, tidy=ours, markdown=text)


if __name__ == "__main__":
    main()
