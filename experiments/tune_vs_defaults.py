"""``dpjax.tune`` against ``dpjax.fit``'s defaults at the same total ε (``docs/tuning.md``).

    python experiments/tune_vs_defaults.py            # 9 datasets, 5 splits x 2 keys
    python experiments/tune_vs_defaults.py --quick    # 2 datasets, 2 splits x 1 key

Protocol: ``learner_defaults.py``'s (``private_boosting.py``'s binary datasets, adult a fixed
20,000-row sample; its stratified 70/30 splits, seeds ``0..splits-1``; public bounds, the
native frame, pure ``ε``-DP) on the datasets with at least 500 training rows, ``ε ∈ {0.1, 1,
10}``, ``--keys`` keys per split (each a different noise, ``K`` and candidate list). Per
dataset, split, ``ε`` and key, on the 70% training split, scored on the 30% test split:

* ``default``: ``dpjax.fit(method="boosted", epsilon=ε)``;
* ``tune``: ``dpjax.tune(method="boosted", epsilon=ε)`` (the default search space, ``γ = 0.1``:
  ten runs on average, a 30% validation part; each run at ``ε/3``);
* ``one run``: the defaults at ``ε/3`` on tune's own training part (the same coins): the
  candidate tune starts from, an ablation (it is never released by tune). ``tune − one run``
  is the gain from choosing; ``default − one run`` the price of the 3x budget split and the
  hold-out. It is fitted by ``dpjax.tune`` itself with the defaults as the only candidate and
  ``stop_probability=1`` (one run: the same compiled program as tune's, no extra compile).

Writes ``experiments/results/tune_vs_defaults.{csv,md,png,json}``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import private_boosting as pb  # noqa: E402

import dpjax  # noqa: E402
from dpjax import _tuning  # noqa: E402
from dpjax.data.splits import stratified_split  # noqa: E402

STEM = "tune_vs_defaults"
EPSILONS = (0.1, 1.0, 10.0)
MIN_TRAIN_ROWS = 500
STOP_PROBABILITY, VALIDATION_SHARE = 0.1, 0.3
METHODS = ("default", "tune", "one run")


def datasets(names: tuple[str, ...]) -> list[str]:
    """The datasets whose 70% training split has at least ``MIN_TRAIN_ROWS`` rows."""
    return [n for n in names
            if len(stratified_split(pb.load(n).y, pb.TEST_FRACTION, 0)[0]) >= MIN_TRAIN_ROWS]


DEFAULTS = {n: [getattr(dpjax.LEARNERS["boosted"](), n)]
            for n in dpjax.LEARNERS["boosted"].traced_names()}
"""The defaults as tune's only candidate (the ``one run`` ablation)."""


def run(names: list[str], splits: int, keys: int) -> pd.DataFrame:
    rows = []
    for name in names:
        data = pb.load(name)
        common = {"bounds": data.bounds, "missing": data.missing, "method": "boosted"}
        for split in range(splits):
            train, test = stratified_split(data.y, pb.TEST_FRACTION, split)
            X, y = data.X.iloc[train], data.y[train]
            X_test, y_test = data.X.iloc[test], data.y[test]
            base = {"dataset": name, "split": split, "train_rows": len(train)}
            for k in range(keys):
                key = 1000 * split + k
                for epsilon in EPSILONS:
                    for method in METHODS:
                        start = time.perf_counter()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            if method == "default":
                                model = dpjax.fit(X, y, epsilon=epsilon, key=key, **common)
                            elif method == "tune":
                                model = dpjax.tune(X, y, epsilon=epsilon, key=key,
                                                   stop_probability=STOP_PROBABILITY,
                                                   validation_share=VALIDATION_SHARE, **common)
                            else:       # one run of the defaults at ε/3, tune's split
                                model = dpjax.tune(X, y, epsilon=epsilon, key=key,
                                                   stop_probability=1.0, candidates=DEFAULTS,
                                                   validation_share=VALIDATION_SHARE, **common)
                        seconds = time.perf_counter() - start
                        assert model.privacy.private and model.privacy.epsilon <= epsilon
                        row = {**base, "key": key, "epsilon": epsilon, "method": method,
                               "accuracy": model.score(X_test, y_test),
                               "spent_epsilon": model.privacy.epsilon, "seconds": seconds}
                        if method == "tune":
                            stop_key = jax.random.split(dpjax.as_key(key), 3)[1]
                            row["runs"] = _tuning.stopping_count(stop_key, STOP_PROBABILITY)
                            row.update({f"chosen_{n}": model.hyperparams[n]
                                        for n in model.config.traced_names()})
                        rows.append(row)
            print(f"{name} split {split} done", flush=True)
    return pd.DataFrame(rows)


def paired(df: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Per (dataset, ε): the mean of ``a − b`` over the (split, key) pairs and its 95%
    half-width (normal approximation over the pairs)."""
    wide = df.pivot_table(index=["dataset", "epsilon", "split", "key"], columns="method",
                          values="accuracy").reset_index()
    wide["diff"] = wide[a] - wide[b]
    return harness.mean_ci(wide, "diff", by=("dataset", "epsilon"))


def summarise(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    means = (df.groupby(["dataset", "epsilon", "method"])["accuracy"].mean()
             .unstack("method")[list(METHODS)])
    versus = paired(df, "tune", "default").set_index(["dataset", "epsilon"])
    gain = paired(df, "tune", "one run").set_index(["dataset", "epsilon"])
    price = paired(df, "default", "one run").set_index(["dataset", "epsilon"])
    cells = means.copy()
    cells["tune − default"] = versus["mean"]
    cells["± (95%)"] = versus["ci"]
    cells["verdict"] = np.where(versus["mean"] - versus["ci"] > 0, "tune wins",
                                np.where(versus["mean"] + versus["ci"] < 0, "tune loses",
                                         "tie"))
    cells["gain of choosing (tune − one run)"] = gain["mean"]
    cells["price of 3x and hold-out (default − one run)"] = price["mean"]
    tuned = df[df.method == "tune"]
    cells["mean K"] = tuned.groupby(["dataset", "epsilon"])["runs"].mean()
    lines = []
    for epsilon, group in cells.groupby(level="epsilon"):
        lines.append({
            "epsilon": epsilon, "cells": len(group),
            "tune wins": int((group.verdict == "tune wins").sum()),
            "ties": int((group.verdict == "tie").sum()),
            "tune loses": int((group.verdict == "tune loses").sum()),
            "mean tune − default": group["tune − default"].mean(),
            "mean gain of choosing": group["gain of choosing (tune − one run)"].mean(),
            "mean price of 3x and hold-out":
                group["price of 3x and hold-out (default − one run)"].mean()})
    return cells.reset_index(), pd.DataFrame(lines)


def figure(cells: pd.DataFrame):
    plt = harness.pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    names = sorted(cells.dataset.unique())
    width = 0.26
    for i, epsilon in enumerate(EPSILONS):
        group = cells[cells.epsilon == epsilon].set_index("dataset").reindex(names)
        x = np.arange(len(names)) + (i - 1) * width
        ax.bar(x, group["tune − default"], width, yerr=group["± (95%)"], capsize=2,
               label=f"ε = {epsilon:g}")
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(np.arange(len(names)), names, rotation=30, ha="right")
    ax.set_ylabel("test accuracy: tune − default")
    ax.set_title("dpjax.tune (boosted, γ = 0.1, 30% validation) vs boosted defaults, same ε")
    ax.legend()
    return fig


def report(cells: pd.DataFrame, lines: pd.DataFrame, meta: dict) -> str:
    return "\n".join([
        "# dpjax.tune vs the boosted defaults at the same total ε", "",
        f"`python experiments/tune_vs_defaults.py` — {len(meta['datasets'])} binary datasets "
        f"with ≥ {MIN_TRAIN_ROWS} training rows ({', '.join(meta['datasets'])}), "
        f"{meta['splits']} stratified 70/30 splits × {meta['keys']} keys, pure ε-DP, mean "
        f"test accuracy; dpjax at source {meta['source_digest']}, "
        f"{meta['wall_s'] / 60:.1f} min on 2 CPU cores. `tune`: the default search space, "
        f"γ = {STOP_PROBABILITY} (K ~ Geometric, mean 10 runs), validation share "
        f"{VALIDATION_SHARE}, each run at ε/3. `one run`: the defaults at ε/3 on tune's "
        "training part (an ablation: what one candidate starts from). Verdicts: the 95% "
        "interval of the paired difference over the (split, key) pairs excludes 0.", "",
        harness.markdown_table(lines, floatfmt=".3f"), "",
        "## Per cell", "",
        harness.markdown_table(cells, floatfmt=".3f"), ""])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--keys", type=int, default=2, help="tune/fit keys per split")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    names = datasets(pb.QUICK_DATASETS[1:] + ("banknote",) if args.quick else pb.DATASETS)
    splits, keys = (2, 1) if args.quick else (args.splits, args.keys)
    df = run(names, splits, keys)
    cells, lines = summarise(df)
    meta = {"datasets": names, "splits": splits, "keys": keys, "epsilons": list(EPSILONS),
            "stop_probability": STOP_PROBABILITY, "validation_share": VALIDATION_SHARE,
            "source_digest": harness.source_digest(), "wall_s": time.perf_counter() - start}
    text = report(cells, lines, meta)
    print(text)
    stem = STEM + ("_quick" if args.quick else "")
    harness.save_results(stem, tidy=df, markdown=text, figure=figure(cells), meta=meta)


if __name__ == "__main__":
    main()
