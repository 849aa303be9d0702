"""The default's checks of issue 52: accuracy grows with ε, interactions, multi-class.

    python experiments/default_checks.py            # 3 splits x 20 seeds (about 10 minutes)
    python experiments/default_checks.py --quick    # 2 splits x 4 seeds

Every fit is ``dpjax.fit``'s default (``method="boosted"``, its ``shape="auto"`` and noise) at
pure ε, public bounds, stratified 70/30 splits (seeds ``0..splits-1``), ``seeds`` keys per split:

* **banknote, ε ∈ {1, 1.5, 2, 3, 10}**: the mean test accuracy per ε and its standard error
  from the seeds' noise (the variance between seeds within a split, pooled over the splits,
  over the number of fits: the splits are shared by every ε); a step down between consecutive
  ε beyond two standard errors of the difference is a drop;
* **an XOR toy** (4,000 rows): ``y = (age > 50) XOR (colour == "red")`` with two noise
  columns, at ε = 1 and 10 (an additive model scores about 0.6–0.75 on it);
* **multi-class at ε ∈ {0.1, 1, 10}**: ``cardiotocography_full`` (3 classes) and ``yeast`` (10),
  declared classes, against the majority rate of each split's training labels.

Writes ``experiments/results/default_checks.{csv,md,json}``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

import dpjax  # noqa: E402
from dpjax.data.splits import stratified_split  # noqa: E402

STEM = "default_checks"
BANKNOTE_EPSILONS = (1.0, 1.5, 2.0, 3.0, 10.0)
XOR_EPSILONS = (1.0, 10.0)
MULTI_EPSILONS = (0.1, 1.0, 10.0)
MULTI_DATASETS = ("cardiotocography_full", "yeast")


def scores(X: pd.DataFrame, y: np.ndarray, epsilons: tuple[float, ...], splits: int,
           seeds: int, **fit: object) -> list[dict]:
    """The default's test accuracy of every split, ε and seed (one sweep per split), with the
    majority rate of the split's training labels."""
    rows = []
    for split in range(splits):
        train, test = stratified_split(y, 0.3, split)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sweep = dpjax.sweep(X.iloc[train], y[train], epsilon=list(epsilons),
                                seeds=[split * 1000 + k for k in range(seeds)], **fit)
            accuracy = np.asarray(sweep.score(X.iloc[test], y[test]))       # [ε, seeds]
        values, counts = np.unique(y[train], return_counts=True)
        majority = float(np.mean(y[test] == values[np.argmax(counts)]))
        for e, row in zip(epsilons, accuracy, strict=True):
            rows += [{"split": split, "epsilon": e, "seed": k, "accuracy": float(a),
                      "majority": majority} for k, a in enumerate(row)]
    return rows


def xor_toy(m: int = 4000) -> tuple[pd.DataFrame, np.ndarray, dict]:
    rng = np.random.default_rng(0)
    age = rng.uniform(18.0, 90.0, m)
    colour = rng.choice(["red", "green", "blue"], m)
    noise = rng.normal(size=(m, 2))
    y = ((age > 50) ^ (colour == "red")).astype(int)
    X = pd.DataFrame({"age": age, "colour": colour, "n1": noise[:, 0], "n2": noise[:, 1]})
    bounds = {"age": (18.0, 90.0), "colour": ["red", "green", "blue"], "n1": (-4.0, 4.0),
              "n2": (-4.0, 4.0)}
    return X, y, bounds


def run(splits: int, seeds: int) -> pd.DataFrame:
    directory = harness.data_dir()
    frames = []
    X, y = dpjax.load_dataset("banknote", directory)
    rows = scores(X, np.asarray(y), BANKNOTE_EPSILONS, splits, seeds,
                  bounds=dpjax.data.public_bounds("banknote", directory))
    frames.append(pd.DataFrame(rows).assign(check="banknote"))
    X, y, bounds = xor_toy()
    frames.append(pd.DataFrame(scores(X, y, XOR_EPSILONS, splits, seeds, bounds=bounds))
                  .assign(check="xor toy"))
    for name in MULTI_DATASETS:
        frame = pd.read_csv(directory / f"{name}.csv.gz")
        y = frame.pop("label").to_numpy()
        X = frame.astype(float)
        bounds = (X.min().to_numpy(), X.max().to_numpy())     # the file's ranges (public)
        classes = tuple(sorted(np.unique(y).tolist()))
        frames.append(pd.DataFrame(scores(X, y, MULTI_EPSILONS, splits, max(seeds // 4, 2),
                                          bounds=bounds, classes=classes)).assign(check=name))
    return pd.concat(frames, ignore_index=True)


def report(df: pd.DataFrame, meta: dict) -> str:
    cells = df.groupby(["check", "epsilon", "split"]).agg(
        accuracy=("accuracy", "mean"), variance=("accuracy", "var"), fits=("accuracy", "size"),
        majority=("majority", "mean"))
    table = cells.groupby(["check", "epsilon"]).agg(
        accuracy=("accuracy", "mean"), variance=("variance", "mean"), fits=("fits", "sum"),
        majority=("majority", "mean")).reset_index()
    table.insert(3, "se", np.sqrt(table.pop("variance") / table.pop("fits")))
    banknote = table[table["check"] == "banknote"].sort_values("epsilon")
    steps = np.diff(banknote["accuracy"].to_numpy())
    noise = 2 * np.sqrt(banknote["se"].to_numpy()[1:] ** 2 + banknote["se"].to_numpy()[:-1] ** 2)
    drops = [f"ε {a:g} → {b:g}: {d:+.4f}" for a, b, d, n in zip(
        banknote["epsilon"].to_numpy()[:-1], banknote["epsilon"].to_numpy()[1:], steps, noise,
        strict=True) if d < -n]
    at_ten = float(banknote.loc[banknote["epsilon"] == 10.0, "accuracy"].iloc[0])
    xor = table[(table["check"] == "xor toy") & (table["epsilon"] == 10.0)]["accuracy"].iloc[0]
    lines = ["# The default's checks (issue 52)", "",
             f"`python experiments/default_checks.py`: `dpjax.fit`'s default (`boosted`, "
             f"`shape=\"auto\"`), pure ε, public bounds, {meta['splits']} stratified 70/30 "
             f"splits × {meta['seeds']} seeds (multi-class {max(meta['seeds'] // 4, 2)}); "
             f"source {meta['source_digest']}, {meta['wall_s'] / 60:.0f} min on "
             f"{meta['machine']}.", "", "## Checks", "",
             f"- banknote monotone in ε over {', '.join(f'{e:g}' for e in BANKNOTE_EPSILONS)} "
             "(no step down beyond two standard errors of the seeds' noise): "
             f"**{'yes' if not drops else 'no: ' + '; '.join(drops)}**",
             f"- banknote at ε = 10 ≥ 0.97: **{at_ten:.4f}**",
             f"- XOR toy at ε = 10 ≥ 0.9: **{xor:.4f}**"]
    for name in MULTI_DATASETS:
        row = table[(table["check"] == name) & (table["epsilon"] == 1.0)]
        if len(row):
            gain = float(row["accuracy"].iloc[0] - row["majority"].iloc[0])
            lines.append(f"- {name} at ε = 1, above the majority rate by ≥ 0.02: "
                         f"**{gain:+.4f}** ({float(row['accuracy'].iloc[0]):.4f} against "
                         f"{float(row['majority'].iloc[0]):.4f})")
    lines += ["", "## Mean test accuracy", "", harness.markdown_table(table, floatfmt=".4f"), ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="2 splits x 4 seeds")
    args = parser.parse_args()
    splits, seeds = (2, 4) if args.quick else (args.splits, args.seeds)
    start = time.perf_counter()
    df = run(splits, seeds)
    meta = {"splits": splits, "seeds": seeds, "source_digest": harness.source_digest(),
            "wall_s": time.perf_counter() - start, "machine": f"{platform.machine()} CPU"}
    markdown = report(df, meta)
    harness.save_results(STEM, tidy=df, markdown=markdown, meta=meta)
    print(markdown)


if __name__ == "__main__":
    main()
