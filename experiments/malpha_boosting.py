"""Reproduce the experiments of Nock & Henecka, "Boosted and Differentially Private Ensembles of
Decision Trees" (spec ``shared/specs/boosted-dp-trees-malpha.md`` §6): Table 1 (which α
strategy is best per ε) and Table 4 (Mα-boost vs the RF-L / RF-E forests), plus one plot of test
error vs ε per domain.

Three modules: ``malpha_protocol`` (domains, grid, folds, the paper's numbers and the vmapped
grid program composed from ``dpjax.ensembles.malpha.fit``), ``malpha_run`` (fits every domain's
grid and writes one tidy table per domain, cached) and ``malpha_report`` (Tables 1 and 4, the
plot and the markdown from those tables, no refitting).

    python experiments/malpha_boosting.py                    # all domains, then the report
    python experiments/malpha_boosting.py run --domains qsar # one domain (cached per domain)
    python experiments/malpha_boosting.py report             # tables + plot from the caches
    python experiments/malpha_boosting.py --quick            # smoke test (2 domains, 2 folds)

Per-domain results are cached as ``<out>/malpha_grid/<domain>.csv.gz`` (``--out`` defaults to
``experiments/results``; ``--quick`` uses ``malpha_grid_quick/`` and ``malpha_boosting_quick``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import malpha_report  # noqa: E402
import malpha_run  # noqa: E402
from malpha_protocol import DEPTHS, DOMAINS, GRID_NAME, N_FOLDS, QUICK, STEM  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="all", choices=("all", "run", "report"))
    parser.add_argument("--domains", default=",".join(n for n, _ in DOMAINS))
    parser.add_argument("--force", action="store_true", help="recompute cached domains")
    parser.add_argument("--forests-only", action="store_true",
                        help="recompute only the forest (and majority) rows of cached domains")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: the first 2 domains, 2 folds, d in {1, 2}, always "
                             "recomputed, under malpha_grid_quick/ and malpha_boosting_quick")
    parser.add_argument("--data-dir", default=None, help="dataset directory (else $DPJAX_DATA, "
                        "else <repo>/../shared/datasets)")
    parser.add_argument("--out", type=Path, default=harness.RESULTS_DIR,
                        help="results directory (the per-domain tables go to its malpha_grid/)")
    args = parser.parse_args(argv)
    args.domains = [n.strip() for n in args.domains.split(",") if n.strip()]
    if args.quick:
        args.domains = args.domains[:QUICK["domains"]]
        args.folds, args.depths = QUICK["folds"], QUICK["depths"]
        args.force = True
    else:
        args.folds, args.depths = N_FOLDS, DEPTHS
    suffix = "_quick" if args.quick else ""
    args.stem = STEM + suffix
    args.grid_dir = args.out / (GRID_NAME + suffix)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    written = []
    if args.command in ("all", "run"):
        written += malpha_run.run(args)
    if args.command in ("all", "report"):
        written += malpha_report.write(args.stem, args.out, args.grid_dir)
    print(f"wrote {', '.join(str(p) for p in written)}")


if __name__ == "__main__":
    main()
