"""Main job: ``python -m dpjax`` (or ``dpjax``) trains DP random-tree forests (or another
``--method``) on a dataset shipped with the package at several privacy budgets and prints test
accuracy, privacy spent and fit time (compile and run separately).

``dpjax --data file.csv --label column --bounds ...`` does the same on your own CSV (gzipped or
not), with the bounds and classes you declare; ``--save model.json`` then fits one model on every
row with fresh entropy at the one budget of ``--epsilons`` and writes it."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpjax
from dpjax.data.splits import stratified_split


def title(method: str) -> str:
    """What ``method`` is, in words: the first sentence of its config's docstring."""
    doc = " ".join((dpjax.LEARNERS[method].__doc__ or method).split())
    return doc.split(": ")[0].split(". ")[0].rstrip(".")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="dpjax", description=__doc__)
    parser.add_argument("--dataset", default="banknote",
                        help=f"registered dataset (shipped: {', '.join(dpjax.data.EMBEDDED)})")
    parser.add_argument("--data-dir", default=None, help="directory of <name>.csv.gz files")
    parser.add_argument("--method", default="random_trees", choices=sorted(dpjax.LEARNERS),
                        help="learner (default random_trees)")
    parser.add_argument("--seeds", type=int, default=5, help="splits/seeds per budget")
    parser.add_argument("--epsilons", default="0.1,1,10,none",
                        help="comma-separated budgets; 'none' = non-private")
    parser.add_argument("--version", action="version", version=f"dpjax {dpjax.__version__}")
    own = parser.add_argument_group("your own data (instead of --dataset)")
    own.add_argument("--data", help="a CSV file (.csv or .csv.gz) with a header row")
    own.add_argument("--label", help="the label column of --data")
    own.add_argument("--bounds", help="the public bounds: 'lo,hi' for every column, or a "
                     "JSON file mapping each column to [lo, hi] or to {\"categories\": [...]}")
    own.add_argument("--classes", help="the declared labels, comma-separated")
    own.add_argument("--save", help="fit one model on every row of --data at the one budget "
                     "of --epsilons, with fresh entropy, and write it here (JSON)")
    args = parser.parse_args(argv)
    try:
        run(args)
    except (ValueError, FileNotFoundError) as error:   # a usage error: one line, no traceback
        parser.exit(2, f"dpjax: error: {error}\n")


def _budgets(text: str) -> list[float | None]:
    """``--epsilons``: comma-separated positive numbers or ``none``."""
    budgets: list[float | None] = []
    for item in text.split(","):
        item = item.strip().lower()
        try:
            budgets.append(None if item == "none" else float(item))
        except ValueError:
            raise ValueError(f"--epsilons takes numbers or 'none'; got {item!r}") from None
        if budgets[-1] is not None and not budgets[-1] > 0:
            raise ValueError(f"--epsilons must be positive; got {item!r}")
    return budgets


def _declared_bounds(text: str | None) -> Any:
    """``--bounds``: ``lo,hi`` for every column (all numeric), or a JSON file of column ->
    ``[lo, hi]`` (numeric) or ``{"categories": [...]}`` (categorical), every column declared."""
    if text is None:
        raise ValueError("--data needs --bounds: the public range of every numeric column "
                         "('lo,hi' or a JSON file); reading them off the data is not private")
    path = Path(text)
    if path.suffix == ".json" or path.exists():
        try:
            spec = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"--bounds: cannot read {text!r} as JSON ({error})") from None
        if not isinstance(spec, dict):
            raise ValueError("--bounds: the JSON file must map column names to [lo, hi] or to "
                             '{"categories": [...]}')
        declared = {}
        for column, value in spec.items():
            if isinstance(value, dict) and isinstance(value.get("categories"), list):
                declared[column] = [str(c) for c in value["categories"]]
            elif isinstance(value, list) and len(value) == 2 and all(
                    isinstance(v, int | float) and not isinstance(v, bool) for v in value):
                declared[column] = (float(value[0]), float(value[1]))
            else:
                raise ValueError(f"--bounds: column {column!r} must be [lo, hi] or "
                                 '{"categories": [...]}')
        return declared
    parts = text.split(",")
    try:
        lo, hi = (float(part) for part in parts)
    except ValueError:
        raise ValueError(f"--bounds takes 'lo,hi' or a JSON file; got {text!r}") from None
    return (lo, hi)


def read_csv(path: str, label: str | None, bounds: Any, classes: str | None
             ) -> tuple[pd.DataFrame, np.ndarray, tuple]:
    """``--data``: every cell read as text, then typed by the declarations alone (pandas'
    own type inference reads the values: one odd record would retype a whole column):
    numeric columns ``pd.to_numeric`` with anything else missing, categorical ones as the
    declared strings; the labels as strings against ``--classes``."""
    if label is None:
        raise ValueError("--data needs --label: the name of the label column")
    if classes is None:
        raise ValueError("--data needs --classes: the declared labels, comma-separated (the "
                         "labels read off the data are not private)")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    if label not in frame.columns:
        raise ValueError(f"--label {label!r} is not a column of {path}")
    y = frame.pop(label).to_numpy(dtype=object)
    if isinstance(bounds, dict):
        undeclared = [c for c in frame.columns if c not in bounds]
        if undeclared:
            raise ValueError(f"--bounds declares no range or categories for column(s) "
                             f"{undeclared[:5]}")
    for column in frame.columns:
        if isinstance(bounds, dict) and isinstance(bounds[column], list):
            frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
        else:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame, y, tuple(name.strip() for name in classes.split(","))


def run(args: argparse.Namespace) -> None:
    """The main job for parsed arguments."""
    epsilons = _budgets(args.epsilons)
    if args.seeds < 1:
        raise ValueError(f"--seeds must be at least 1; got {args.seeds}")
    classes = None
    if args.data is not None:
        bounds = _declared_bounds(args.bounds)
        X, y, classes = read_csv(args.data, args.label, bounds, args.classes)
        missing = "code"       # any column may be missing: which ones are is not read off
        name, source = Path(args.data).name, "declared by --bounds"
        if args.save is not None:
            save(args, X, y, epsilons, bounds, classes, missing)
            return
    else:
        if args.save is not None:
            raise ValueError("--save goes with --data (your own file)")
        X, y = dpjax.load_dataset(args.dataset, args.data_dir)
        bounds = dpjax.data.public_bounds(args.dataset, args.data_dir)
        missing = dpjax.data.missing_columns(args.dataset, args.data_dir)
        name, source = args.dataset, "the benchmark file's ranges"
    print(f"dpjax {dpjax.__version__}: {title(args.method)} on "
          f"{name} ({X.shape[0]} x {X.shape[1]}), 70/30 stratified splits, "
          f"{args.seeds} seeds, public bounds = {source}\n")
    if args.data is not None:
        print("These test accuracies are computed on your data and are not private: they are "
              "for choosing settings. Release a model with --save.\n")
    header = (f"{'epsilon':>8} {'test accuracy':>16} {'eps spent':>10} {'compile s':>10} "
              f"{'run s':>8}")
    print(header)
    print("-" * len(header))
    example = None
    start = time.perf_counter()
    for epsilon in epsilons:
        accuracy, compile_s, run_s, spent = [], 0.0, [], []
        for seed in range(args.seeds):
            train, test = stratified_split(y, 0.3, seed)
            model = dpjax.fit(X.iloc[train], y[train], method=args.method, epsilon=epsilon,
                              key=seed, bounds=bounds, missing=missing, classes=classes)
            accuracy.append(model.score(X.iloc[test], y[test]))
            compile_s += model.timings.compile_s
            run_s.append(model.timings.run_s)
            spent.append(model.privacy.epsilon)
            if epsilon == 1.0 and seed == 0:
                example = model
        label = "none" if epsilon is None else f"{epsilon:g}"
        print(f"{label:>8} {np.mean(accuracy):>9.4f} ± {np.std(accuracy):.4f} "
              f"{max(spent):>10.4g} {compile_s:>10.3f} {np.median(run_s):>8.4f}")
    print(f"\n(total {time.perf_counter() - start:.1f}s; 'eps spent' inf = not private; "
          "compile is paid once per shape, run is the median warm fit)\n")
    if example is not None:
        print(example.summary())


def save(args: argparse.Namespace, X: pd.DataFrame, y: np.ndarray, epsilons: list,
         bounds: Any, classes: tuple | None, missing: str) -> None:
    """``--save``: one model on every row, fresh entropy (``key=None``), written as JSON."""
    if len(epsilons) != 1 or epsilons[0] is None:
        raise ValueError("--save fits one private model: give one budget with --epsilons "
                         "(not 'none')")
    model = dpjax.fit(X, y, method=args.method, epsilon=epsilons[0], bounds=bounds,
                      missing=missing, classes=classes)
    if not model.privacy.private:
        raise ValueError("the fitted model is not private (see its ledger): nothing written")
    model.to_json(args.save)
    print(f"dpjax {dpjax.__version__}: {title(args.method)} fitted on every row of "
          f"{Path(args.data).name}, written to {args.save}\n")
    print(model.privacy)      # not the summary: a fit's run time is not released


if __name__ == "__main__":
    main()
