"""Reproduce Table 1 of Bojarski et al., "Differentially- and non-differentially-private random
decision trees" (spec ``shared/specs/dp-random-decision-trees.md`` §5).

Three modules: ``table1_protocol`` (datasets, the paper's numbers, the grid of forests composed
from the stages of ``dpjax.ensembles.random_trees``, selection and pooling), ``table1_run``
(runs the protocol, writes the tidy CSVs and the run's facts) and ``table1_report`` (markdown +
PNG from those files, no refitting).

    python experiments/table1_random_trees.py            # run, then report (~10 min, 2 cores)
    python experiments/table1_random_trees.py --quick    # smoke test (~2 min)
    python experiments/table1_random_trees.py run        # only the run (tidy CSVs + JSON)
    python experiments/table1_random_trees.py report     # only the report, from the CSVs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import table1_report  # noqa: E402
import table1_run  # noqa: E402
from table1_protocol import DATASETS, STEM  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="all", choices=("all", "run", "report"))
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 2 runs, h in {4,8,12}, k in {1,5,11}, banknote and "
                             "transfusion")
    parser.add_argument("--data-dir", default=None, help="dataset directory (else $DPJAX_DATA, "
                        "else <repo>/../shared/datasets)")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--out", type=Path, default=harness.RESULTS_DIR)
    parser.add_argument("--no-replicate", dest="replicate", action="store_false",
                        help="skip the second, disjoint set of runs (stability check)")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = args.runs or 2
        args.hs, args.ks = (4, 8, 12), (1, 5, 11)
        args.datasets = ["banknote", "transfusion"]
        args.replicate = False
    else:
        args.runs = args.runs or 10
        args.hs, args.ks = tuple(range(1, 16)), tuple(range(1, 22, 2))
        args.datasets = [name for name, _, _ in DATASETS]
    args.stem = f"{STEM}_quick" if args.quick else STEM
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    written = []
    if args.command in ("all", "run"):
        written += table1_run.run(args)
    if args.command in ("all", "report"):
        written += table1_report.write(args.stem, args.out)
    print(f"wrote {', '.join(str(p) for p in written)}")


if __name__ == "__main__":
    main()
