"""The examples run end to end (their pictures and model go to a temporary directory)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_model_tour_fits_prints_plots_exports_and_stops_at_its_budget(monkeypatch, tmp_path,
                                                                      capsys):
    monkeypatch.setenv("DPJAX_EXAMPLE_OUT", str(tmp_path))
    runpy.run_path(str(EXAMPLES / "model_tour.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert {p.name for p in tmp_path.iterdir()} == {
        "importances.png", "ledger.png", "tree.png", "sweep_accuracy.png",
        "boosted_banknote.json"}
    assert "Privacy ledger" in out and "loaded back" in out
    assert "the grid search stopped at its budget" in out
    spent = float(out.rsplit("spent: (", 1)[1].split(",")[0])
    assert spent <= 5.0
