"""Main job: ``python -m dpjax`` (or ``dpjax``) trains DP random-tree forests (or another
``--method``) on a dataset shipped with the package at several privacy budgets and prints test
accuracy, privacy spent and fit time (compile and run separately)."""

from __future__ import annotations

import argparse
import time

import numpy as np

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


def run(args: argparse.Namespace) -> None:
    """The main job for parsed arguments."""
    epsilons = _budgets(args.epsilons)
    if args.seeds < 1:
        raise ValueError(f"--seeds must be at least 1; got {args.seeds}")
    X, y = dpjax.load_dataset(args.dataset, args.data_dir)
    bounds = dpjax.data.public_bounds(args.dataset, args.data_dir)
    missing = dpjax.data.missing_columns(args.dataset, args.data_dir)
    print(f"dpjax {dpjax.__version__}: {title(args.method)} on "
          f"{args.dataset} ({X.shape[0]} x {X.shape[1]}), 70/30 stratified splits, "
          f"{args.seeds} seeds, public bounds = the benchmark file's ranges\n")
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
                              key=seed, bounds=bounds, missing=missing)
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


if __name__ == "__main__":
    main()
