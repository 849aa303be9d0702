"""The dpjax benchmark suite in one command: speed (compile and warm run always apart) and
memory, on the machine it runs on, beside peer libraries fitted in the same run.

Sections (``--only`` picks some, comma-separated; each is a table of the report and rows of the
CSV):

1. ``learners`` (``suite_learners.py``): every dpjax learner with its defaults, and Mα-boost /
   private Newton boosting with 20 trees of depth 6, at ε = 1 on a9a: cold compile (a fresh
   interpreter with an empty persistent compilation cache), the first fit of a second fresh
   interpreter on that warm cache, warm fit wall and ``run_s`` (median of 5), test accuracy;
   peers diffprivlib RandomForestClassifier / LogisticRegression and InterpretML DP-EBM, with
   speed-ups against diffprivlib's forest and (20 x depth-6 boosters) DP-EBM.
2. ``sweep`` (``suite_sweep.py``): 10 ε x 10 seeds = 100 models of malpha, boosted and
   random_trees: one ``dpjax.sweep`` against a loop of 100 ``dpjax.fit``.
3. ``histogram`` (``suite_histogram.py``): one level's histogram at 1e6 x 20 uint8 codes, 1 / 8 /
   32 nodes, packed and unpacked, against numpy reading the codes once.
4. ``scale`` (``suite_scale.py``): fit time and peak memory vs rows 1e3..1e7 x features 20 / 100
   (random_trees, malpha 20 x depth 6) on synthetic data, one fresh interpreter per size; the
   log-log slopes, Mα-boost's memory floor at 1e6 x 20, and time vs depth at 1e5 x 20.
5. A PNG of section 4 (time and peak memory vs rows, log-log).
6. The environment (device, versions, load average at the start and the end).

Usage (from the repository root)::

    python -m benchmarks                       # everything: about 20-30 min on 2 CPU cores
    python -m benchmarks --quick --out /tmp/q  # smoke test: small sizes and repeats, < 3 min
    python -m benchmarks --only histogram,sweep
    python -m benchmarks --only learners --learners rule_list   # some learners, with the peers
    python -m benchmarks --max-rows 1000000    # leave out the 1e7-row fits

Writes ``<out>/suite_<device>[_quick][_<sections>][_<learners>].{md,csv,png,json}`` (``--out``,
default ``benchmarks/results``; device from ``harness.device_slug()``): the markdown report (also
printed to stdout), one tidy CSV of every table row (column ``section``), the figure and the
run's facts. Progress goes to stderr.

Compile times are compiles: unless ``--cache-dir`` says otherwise, the suite points dpjax's
persistent compilation cache (``DPJAX_COMPILATION_CACHE``) at a new empty directory, removed at
the end, so that nothing compiled by an earlier run is loaded from disk; the ``learners``
section gives each configuration its own empty cache to measure cold and warm-cache starts.

Data: ``--data-dir``, else ``$DPJAX_DATA``, else ``<repo>/../shared/datasets``
(``adult_a9a_{train,test}.csv.gz``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

SECTIONS = ("learners", "sweep", "histogram", "scale")
REPO = Path(__file__).resolve().parents[1]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: small sizes and repeats (< 3 min)")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run (default: all of {SECTIONS})")
    parser.add_argument("--learners", default=None,
                        help="comma-separated dpjax methods of the learners section (default: "
                             "every learner; the peers always run)")
    parser.add_argument("--max-rows", type=int, default=10_000_000,
                        help="largest synthetic size of the scale section (default 1e7)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results",
                        help="directory of the report files (default benchmarks/results)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="directory with adult_a9a_{train,test}.csv.gz (default: $DPJAX_DATA "
                             "or <repo>/../shared/datasets)")
    parser.add_argument("--cache-dir", default="fresh",
                        help="dpjax's persistent compilation cache for this process and the "
                             "scale children: 'fresh' (default: a new empty directory, removed "
                             "at the end), 'off', or a directory to use (compile times may "
                             "then be loads)")
    args = parser.parse_args(argv)
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(args.sections) - set(SECTIONS))
    if unknown or not args.sections:
        parser.error(f"--only: unknown section(s) {unknown}; choose from {SECTIONS}")
    args.sections = [s for s in SECTIONS if s in args.sections]  # report order
    return args


def configure_cache(setting: str) -> tuple[str, Path | None]:
    """Point ``DPJAX_COMPILATION_CACHE`` at the cache asked for, before dpjax is imported (it
    enables the cache at import); returns a description and the directory to remove."""
    if setting == "fresh":
        directory = Path(tempfile.mkdtemp(prefix="dpjax-suite-cache-"))
        os.environ["DPJAX_COMPILATION_CACHE"] = str(directory)
        os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)
        return f"fresh empty directory {directory} (removed at the end)", directory
    os.environ["DPJAX_COMPILATION_CACHE"] = setting
    return f"DPJAX_COMPILATION_CACHE={setting}", None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cache_text, cache_dir = configure_cache(args.cache_dir)
    # dpjax (through the harness) is imported only now, with the cache configured
    import pandas as pd

    from benchmarks import harness, suite_common
    from dpjax._progress import progress
    from experiments.harness import source_digest

    load_at_start = harness.load_average()
    start = time.perf_counter()
    data_dir = args.data_dir or harness.data_dir()
    settings = suite_common.Settings.make(args.quick, args.max_rows, data_dir)
    if args.learners:
        settings.learners = tuple(m.strip() for m in args.learners.split(",") if m.strip())
    runners: dict[str, Callable[[suite_common.Settings], suite_common.Section]] = {}
    for name in args.sections:
        runners[name] = importlib.import_module(f"benchmarks.suite_{name}").run
    harness.log(f"sections {args.sections}{' (quick)' if args.quick else ''}; "
                f"compilation cache: {cache_text}")
    sections: list[suite_common.Section] = []
    try:
        for name, run in progress(runners.items(), "benchmark sections", total=len(runners),
                                  unit="section"):
            harness.log(f"=== section {name}")
            section_start = time.perf_counter()
            try:
                section = run(settings)
            except Exception as error:  # a broken section is reported, the others still run
                traceback.print_exc(file=sys.stderr)
                status = f"failed: {type(error).__name__}: {error}"
                section = suite_common.Section(
                    name, f"## {name}\n\n{status}", [{"section": name, "status": status}])
            seconds = time.perf_counter() - section_start
            section.markdown += f"\n\n(section {name}: {seconds:.0f} s)"
            harness.log(f"=== section {name} done in {seconds:.0f} s")
            sections.append(section)
    finally:
        if cache_dir is not None:
            shutil.rmtree(cache_dir, ignore_errors=True)

    total = time.perf_counter() - start
    environment = harness.md_table(("environment", "value"), [
        *harness.environment_rows(load_at_start),
        ("interpret-core (DP-EBM)", harness.version_of("interpret-core")),
        ("dpjax sources (sha256)", source_digest()),
        ("run", f"{'--quick' if args.quick else 'full'}; sections {', '.join(args.sections)}; "
                f"--max-rows {args.max_rows:,}; {total / 60:.1f} min in all"),
        ("compilation cache", cache_text),
        ("data", str(data_dir)),
    ])
    title = "# dpjax benchmark suite" + (" (--quick: small sizes, not for citing)"
                                         if args.quick else "")
    report = "\n\n".join([title, environment, *[s.markdown for s in sections]]) + "\n"
    print(report)

    figure = None
    scale = next((s for s in sections if s.name == "scale"), None)
    if scale is not None and scale.extra.get("figure_records"):
        from benchmarks.suite_scale import figure as scale_figure

        figure = scale_figure(scale.extra["figure_records"])
    records = [record for section in sections for record in section.records]
    tidy = pd.DataFrame(records) if records else None
    stem = f"suite_{harness.device_slug()}"
    if args.quick:
        stem += "_quick"
    if args.sections != list(SECTIONS):
        stem += "_" + "-".join(args.sections)
    if args.learners:
        stem += "_" + "-".join(settings.learners)
    paths = harness.save_results(
        stem, tidy=tidy, markdown=report, figure=figure, directory=args.out,
        meta={"argv": list(sys.argv[1:] if argv is None else argv), "sections": args.sections,
              "quick": args.quick, "max_rows": args.max_rows, "seconds": total,
              "device": harness.device_slug(), "dpjax_sources": source_digest(),
              "load_average_start": load_at_start, "load_average_end": harness.load_average()})
    for path in paths:
        harness.log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
