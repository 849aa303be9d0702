"""The prepared device check (``python -m benchmarks.device_check``) runs end to end in its
CPU dry run: every section measured, every learner fitted at both sizes, the report written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import dpjax

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_dry_run_measures_every_section_and_learner(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "benchmarks.device_check", "--dry-run",
                    "--out", str(tmp_path)], cwd=REPO, check=True, timeout=600,
                   stdout=subprocess.DEVNULL)
    (report,) = tmp_path.glob("device_*_dry-run.md")
    text = report.read_text()
    for heading in ("## histogram", "## histogram formulations", "## sweep", "## boosted on",
                    "## learners"):
        assert heading in text
    records = pd.read_csv(report.with_suffix(".csv"))
    learners = records[records["section"] == "learners"]
    assert set(learners["method"]) == set(dpjax.LEARNERS)
    assert (learners["status"] == "ok").all(), learners[["method", "rows", "status"]]
    assert sorted(set(learners["rows"])) == [1000, 10000]
    assert (learners["run_s"] > 0).all() and (learners["compile_s"] > 0).all()
    sweep = records[records["section"] == "sweep"]
    assert list(sweep["status"]) == ["ok"] * 8          # 3 layouts and the loop, 2 shapes
    histogram = records[records["section"] == "histogram"]
    assert histogram["agrees"].dropna().astype(bool).all()
    assert (histogram["ms"] > 0).all()
    rows = records[records["section"] == "rows"]
    assert len(rows) == 2 and rows["same_model"].astype(bool).all()
    assert rows["hard_values_agree"].astype(bool).all()
