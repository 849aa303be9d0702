"""Main job: ``python -m dpjax`` (or ``dpjax``) trains dpjax's flagship learner, private Newton
boosting (or another ``--method``), on a dataset shipped with the package at several privacy
budgets and prints test accuracy beside the majority-class rate, privacy spent, fit time
(compile and run separately) and a short summary of one model (learner, settings, feature
importances and its privacy ledger).

``dpjax --data file.csv --label column --bounds ...`` does the same on your own CSV (gzipped or
not), with the bounds and classes you declare; ``--save model.json`` then fits one model on every
row with fresh entropy at the one budget of ``--epsilons`` and writes it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpjax
from dpjax._model import outputs_text
from dpjax.data.splits import stratified_split

SUMMARY_LINES = 20     # the most lines of the model summary the main job prints


def plain(text: str) -> str:
    """``text`` without reST markup: ``literal``, :role:`target` (``~`` and ``title <target>``
    forms), `interpreted` and *emphasis* become their words."""
    text = re.sub(r":[\w:.-]+:`~?([^`<]*?)\s*(?:<[^`>]*>)?`", r"\1", text)   # :func:`~a.b`
    text = re.sub(r"``(.+?)``", r"\1", text, flags=re.S)
    text = re.sub(r"`([^`]+)`", r"\1", text)
    return re.sub(r"(?<![\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])", r"\1", text)


def title(method: str) -> str:
    """What ``method`` is, in words, without reST markup: the first sentence of its config's
    docstring, its parenthetical remarks left out when that sentence is long."""
    doc = plain(" ".join((dpjax.LEARNERS[method].__doc__ or method).split()))
    first = doc.split(": ")[0].split(". ")[0].rstrip(".")
    if len(first) > 60:
        while re.search(r"\s*\([^()]*\)", first):
            first = re.sub(r"\s*\([^()]*\)", "", first)
    return first


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["budget"]:
        budget_main(argv[1:])
        return
    parser = argparse.ArgumentParser(prog="dpjax", description=plain(__doc__ or ""),
                                     epilog="dpjax budget show PATH_OR_URL: a stored privacy "
                                     "budget's spends (dpjax budget --help)")
    parser.add_argument("--dataset", default="banknote",
                        help=f"registered dataset (shipped: {', '.join(dpjax.data.EMBEDDED)})")
    parser.add_argument("--data-dir", default=None, help="directory of <name>.csv.gz files")
    parser.add_argument("--method", default="boosted", choices=sorted(dpjax.LEARNERS),
                        help="learner (default boosted: private Newton boosting)")
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


def budget_main(argv: list[str]) -> None:
    """``dpjax budget show PATH_OR_URL``: a stored budget's terms, every spend (time, label,
    method, tag, ``ε``, ``δ``; ``--ledgers``: each spend's ledger), its open reservations and
    what is left (:class:`dpjax.BudgetAccountant`)."""
    parser = argparse.ArgumentParser(prog="dpjax budget",
                                     description="Inspect a stored privacy budget.")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="list a stored budget's spends")
    show.add_argument("store", help="an SQLite file or a postgresql:// URL")
    show.add_argument("--name", default=None,
                      help="the budget's name in the store (default: every budget)")
    show.add_argument("--ledgers", action="store_true", help="print every spend's ledger")
    args = parser.parse_args(argv)
    try:
        names = ([args.name] if args.name is not None
                 else dpjax.BudgetAccountant.budgets(args.store))
        for index, name in enumerate(names):
            accountant = dpjax.BudgetAccountant(store=args.store, name=name, read_only=True)
            print(("\n" if index else "") + "\n".join(budget_lines(accountant, args.ledgers)))
    except ValueError as error:        # a store error: one line, no traceback
        parser.exit(2, f"dpjax budget: error: {error}\n")


def budget_lines(accountant: dpjax.BudgetAccountant, ledgers: bool) -> list[str]:
    """A stored budget as the CLI prints it."""
    spent, left = accountant.total(), accountant.remaining()
    lines = [f"budget {accountant.name!r} in {accountant.store}: (epsilon, delta) = "
             f"({accountant.epsilon:g}, {accountant.delta:g}), {accountant.composition} "
             f"composition, {accountant.neighbouring or 'any'} neighbouring",
             f"spent ({spent[0]:.6g}, {spent[1]:.3g}); remaining ({left[0]:.6g}, "
             f"{left[1]:.3g})"]
    spends, reserved = accountant.spends, accountant.reserved
    rows = [(s.time, s.label, s.method, s.tag, f"{s.ledger.epsilon:.6g}",
             f"{s.ledger.delta:.3g}") for s in spends]
    rows += [(r.time, f"{r.label} (reserved: in progress, or its process died)", r.method,
              r.tag, f"{r.epsilon:.6g}", f"{r.delta:.3g}") for r in reserved]
    header = ("time (UTC)", "label", "method", "tag", "epsilon", "delta")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in [header, *rows]]
    if not rows:
        lines.append("(no spends)")
    if ledgers:
        for spend in spends:
            lines += ["", f"{spend.time}  {spend.label}", textwrap.indent(str(spend.ledger),
                                                                         "  ")]
    return lines


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
    numeric columns ``pd.to_numeric``, categorical ones as the declared strings; the labels as
    strings against ``--classes``.

    A cell that is not a number in a column declared numeric is that row's missing value, and
    a warning names the column and both fixes (a text column declared by its categories in a
    JSON bounds file; in a numeric column, an empty cell), never the cell, nor how many. It is
    a warning, not an error: whether a column holds a number at all is a fact of its records,
    which one record can change. ``dpjax.fit`` on a DataFrame refuses a numeric column that
    pandas typed as text; here the declaration types the cells, so a stray cell is missing
    and the other rows keep their values."""
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
    stray = []
    for column in frame.columns:
        if isinstance(bounds, dict) and isinstance(bounds[column], list):
            frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
            continue
        numbers = pd.to_numeric(frame[column], errors="coerce")
        if (frame[column].notna() & numbers.isna()).any():
            stray.append(column)
        frame[column] = numbers
    if stray:
        declared = ("--bounds lo,hi declares every column numeric" if not isinstance(bounds, dict)
                    else "--bounds declares them numeric ([lo, hi])")
        print(f"dpjax: warning: column(s) {stray[:5]}{' ...' if len(stray) > 5 else ''} hold "
              f"cells that are not numbers, and {declared}: those cells are read as missing "
              "values. A text column must be declared in a JSON bounds file as "
              '{"column": {"categories": [...]}} (each numeric column as [lo, hi]); in a '
              "numeric column, leave such cells empty", file=sys.stderr)
    return frame, y, tuple(name.strip() for name in classes.split(","))


def run(args: argparse.Namespace) -> None:
    """The main job for parsed arguments."""
    epsilons = _budgets(args.epsilons)
    if args.seeds < 1:
        raise ValueError(f"--seeds must be at least 1; got {args.seeds}")
    classes = None
    if args.data is not None:
        if args.save is not None:
            _one_private_budget(epsilons)      # usage first, before the file is read
        bounds = _declared_bounds(args.bounds)
        X, y, classes = read_csv(args.data, args.label, bounds, args.classes)
        missing = "code"       # any column may be missing: which ones are is not read off
        name, source = Path(args.data).name, "declared by --bounds"
        shape = f"{X.shape[1]} features"     # your file's row count is private: not printed
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
        shape = f"{X.shape[0]} x {X.shape[1]}"
    print(f"dpjax {dpjax.__version__}: {title(args.method)} on "
          f"{name} ({shape}), 70/30 stratified splits, "
          f"{args.seeds} seeds, public bounds = {source}\n")
    if args.data is not None:
        print("These test accuracies (and the majority-class rate) are computed on your data "
              "and are not private: they are for choosing settings. Release a model with "
              "--save.\n")
    header = (f"{'epsilon':>8} {'test accuracy':>16} {'eps spent':>10} {'compile s':>10} "
              f"{'run s':>8}")
    print(header)
    print("-" * len(header))
    example, example_epsilon = None, _summary_budget(epsilons)
    splits = [stratified_split(y, 0.3, seed) for seed in range(args.seeds)]
    start = time.perf_counter()
    for epsilon in epsilons:
        accuracy, compile_s, run_s, spent = [], 0.0, [], []
        for seed, (train, test) in enumerate(splits):
            with warnings.catch_warnings():     # seeded on purpose: an experiment's table
                warnings.simplefilter("ignore", dpjax.FixedKeyWarning)
                model = dpjax.fit(X.iloc[train], y[train], method=args.method,
                                  epsilon=epsilon, key=seed, bounds=bounds, missing=missing,
                                  classes=classes)
            accuracy.append(model.score(X.iloc[test], y[test]))
            compile_s += model.timings.compile_s
            run_s.append(model.timings.run_s)
            spent.append(model.privacy.epsilon)
            if epsilon == example_epsilon and seed == 0 and example is None:
                example = model
        label = "none" if epsilon is None else f"{epsilon:g}"
        print(f"{label:>8} {np.mean(accuracy):>9.4f} ± {np.std(accuracy):.4f} "
              f"{max(spent):>10.4g} {compile_s:>10.3f} {np.median(run_s):>8.4f}")
    majority = np.mean([majority_rate(y[test]) for _, test in splits])
    print(f"\nmajority class rate: {majority:.4f} (always predicting the most frequent class; "
          f"mean over the {args.seeds} test splits)")
    print(f"(total {time.perf_counter() - start:.1f}s; 'eps spent' inf = not private; "
          "compile is paid once per shape, run is the median warm fit)\n")
    if example is not None:
        print("\n".join(compact_summary(example, example_epsilon, seed=0)))


def majority_rate(labels: np.ndarray) -> float:
    """The share of the most frequent label in ``labels``: the accuracy of always predicting
    it (the evaluation's baseline; read off the test labels, not private)."""
    return float(pd.Series(labels).value_counts(normalize=True, dropna=False).iloc[0])


def _summary_budget(epsilons: list[float | None]) -> float | None:
    """The budget whose seed-0 model the main job summarises: ε = 1 when it is among
    ``epsilons``, else the first private one, else the first."""
    private = [e for e in epsilons if e is not None]
    return 1.0 if 1.0 in private else (private or epsilons)[0]


def compact_summary(model: dpjax.Model, epsilon: float | None, seed: int) -> list[str]:
    """At most :data:`SUMMARY_LINES` lines on ``model`` (fitted at ``epsilon`` on split and key
    ``seed``): its learner and settings, features and classes, the features of largest
    importance (read off the released parameters) and its privacy ledger, last. The whole
    model: ``Model.summary()`` / ``describe()``."""
    budget = "epsilon = none" if epsilon is None else f"epsilon = {epsilon:g}"
    lines = [f"Summary of the {budget}, seed {seed} model (split {seed}, key {seed}; "
             "the whole model: Model.summary()):",
             f"  learner: {model.method} ({title(model.method)})"]
    settings = ", ".join(f"{k}={v}" for k, v in model.hyperparams.items())
    lines += textwrap.wrap(settings, width=96, initial_indent="  settings: ",
                           subsequent_indent="    ", max_lines=4, placeholder=" ...")
    lines.append(f"  {model.spec.n_features} features, {outputs_text(model.classes, model.target)}")
    try:
        importances = model.feature_importances()
    except NotImplementedError:
        importances = None
    if importances is not None:
        order = np.argsort(-np.asarray(importances), kind="stable")[:5]
        top = ", ".join(f"{model.spec.names[j]} {importances[j]:.2f}" for j in order)
        more = f" (of {model.spec.n_features})" if model.spec.n_features > len(order) else ""
        lines.append(f"  top features by importance{more}: {top}")
    if epsilon is not None:
        lines.append(f"  requested: epsilon = {epsilon:g}, delta = "
                     f"{model.privacy.requested_delta:g}; spent: the ledger below")
    return lines + ledger_lines(model.privacy, SUMMARY_LINES - len(lines))


TOTALS = ("spent:", "views:", "NOT DIFFERENTIALLY PRIVATE")
"""How the lines after a printed ledger's table begin."""


def ledger_lines(ledger: dpjax.PrivacyLedger, room: int) -> list[str]:
    """The printed ``ledger``, indented, in at most ``room`` lines when it is long: its
    heading and the first releases that fit (a release's wrapped lines kept together), a line
    counting the others, then its totals."""
    def table(entries: tuple) -> list[str]:
        printed = str(dataclasses.replace(ledger, entries=entries, plan="")).splitlines()
        return ["  " + line for line in printed if not line.lstrip().startswith(TOTALS)]

    printed = ["  " + line for line in str(ledger).splitlines()]
    if len(printed) <= room:
        return printed
    totals = ["  " + line for line in ledger.plan_lines()] + [
        line for line in printed if line.lstrip().startswith(TOTALS)]
    entries = ledger.entries
    keep = max((k for k in range(len(entries))
                if len(table(entries[:k])) + 1 + len(totals) <= room), default=0)
    return [*table(entries[:keep]),
            f"    ... {len(entries) - keep} more releases (Model.privacy)", *totals]


def _one_private_budget(epsilons: list[float | None]) -> None:
    """``--save`` fits one private model: one budget, not ``none``."""
    if len(epsilons) != 1 or epsilons[0] is None:
        raise ValueError("--save fits one private model: give one budget with --epsilons "
                         "(not 'none')")


def save(args: argparse.Namespace, X: pd.DataFrame, y: np.ndarray, epsilons: list,
         bounds: Any, classes: tuple | None, missing: str) -> None:
    """``--save``: one model on every row, fresh entropy (``key=None``), written as JSON
    (``run`` has checked the one private budget)."""
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
