"""The command line on your own CSV (``--data``), ``--version``, and ``Model.score``'s labels."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.__main__ import main


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    """600 rows: two numeric columns in [0, 10], a text column, string labels."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 10, size=(600, 2))
    colour = rng.choice(["red", "blue"], size=600)
    label = np.where(x[:, 0] > 5, "yes", "no")
    frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "colour": colour, "outcome": label})
    path = tmp_path_factory.mktemp("cli") / "own.csv"
    frame.to_csv(path, index=False)
    bounds = tmp_path_factory.mktemp("cli") / "bounds.json"
    bounds.write_text(json.dumps({"a": [0, 10], "b": [0, 10],
                                  "colour": {"categories": ["red", "blue"]}}))
    return path, bounds


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"dpjax {dpjax.__version__}"


def test_own_csv_prints_the_table_and_says_it_is_not_private(capsys, csv_file):
    path, bounds = csv_file
    main(["--data", str(path), "--label", "outcome", "--bounds", str(bounds),
          "--classes", "no,yes", "--epsilons", "10", "--seeds", "1", "--method", "boosted"])
    out = capsys.readouterr().out
    assert "own.csv (3 features)" in out and "600" not in out and "declared by --bounds" in out
    assert "not private" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("10 "))
    assert float(row[1]) > 0.9


def test_save_fits_every_row_once_and_writes_a_loadable_model(tmp_path, capsys, csv_file):
    path, bounds = csv_file
    target = tmp_path / "model.json"
    main(["--data", str(path), "--label", "outcome", "--bounds", str(bounds),
          "--classes", "no,yes", "--epsilons", "1", "--method", "boosted", "--save",
          str(target)])
    model = dpjax.load(target)
    assert model.classes == ("no", "yes")
    assert model.privacy.epsilon <= 1.0
    frame = pd.read_csv(path)
    assert model.score(frame.drop(columns="outcome"), frame["outcome"]) > 0.6
    assert "written to" in capsys.readouterr().out


@pytest.mark.parametrize(("extra", "message"), [
    ([], "--data needs --bounds"),
    (["--bounds", "0,1", "--classes", "no,yes", "--label", "nope"],
     "--label 'nope' is not a column"),
    (["--bounds", "0,1"], "--data needs --classes"),
    (["--bounds", "zero,one"], "--bounds takes 'lo,hi' or a JSON file"),
    (["--bounds", "0,10", "--classes", "no,yes", "--save", "m.json"], "give one budget"),
    (["--bounds", "0,10", "--classes", "no,yes", "--epsilons", "none", "--save", "m.json"],
     "one private model"),
])
def test_own_csv_usage_errors_are_one_line(capsys, csv_file, extra, message):
    path, _ = csv_file
    argv = ["--data", str(path), "--label", "outcome", *extra]
    if "--label" in extra:
        argv = ["--data", str(path), *extra]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("dpjax: error: ") and message in err and "Traceback" not in err


def test_one_odd_record_does_not_retype_a_column(tmp_path, csv_file):
    """Cells are typed by the declarations, not by pandas' inference over the values: a text
    value in a numeric column (or "NA") is a missing value of that row alone, and the other
    rows encode as before; so does a label column."""
    path, bounds = csv_file
    clean = pd.read_csv(path)
    odd = clean.astype({"a": object, "b": object, "colour": object})
    odd.loc[0, "a"], odd.loc[1, "b"], odd.loc[2, "colour"] = "x", "NA", 7
    odd_path = tmp_path / "odd.csv"
    odd.to_csv(odd_path, index=False)
    from dpjax.__main__ import _declared_bounds, read_csv

    declared = _declared_bounds(str(bounds))
    X, y, classes = read_csv(str(path), "outcome", declared, "no,yes")
    X_odd, y_odd, _ = read_csv(str(odd_path), "outcome", declared, "no,yes")
    assert classes == ("no", "yes") and list(y_odd) == list(y)
    assert np.isnan(X_odd.loc[0, "a"]) and np.isnan(X_odd.loc[1, "b"])
    assert X_odd.loc[2, "colour"] == "7"
    np.testing.assert_array_equal(X_odd.iloc[3:].to_numpy(), X.iloc[3:].to_numpy())
    assert X_odd["a"].dtype == X["a"].dtype == np.float64


def test_save_needs_own_data(capsys):
    with pytest.raises(SystemExit):
        main(["--save", "m.json"])
    assert "--save goes with --data" in capsys.readouterr().err


def test_score_refuses_labels_outside_the_classes():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 2))
    y = (X[:, 0] > 0.5).astype(int)
    model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=(0, 1), key=0)
    assert 0.0 <= model.score(X, y) <= 1.0
    with pytest.raises(ValueError, match="outside the declared classes"):
        model.score(X, y + 1)
    with pytest.raises(ValueError, match="one label per row"):
        model.score(X, y[:10])


# --------------------------------------------------------------------------------------------
# Issue 51: the main job shows the flagship; text and stray cells in numeric columns
# --------------------------------------------------------------------------------------------

def test_main_job_fits_boosted_and_prints_a_short_summary(capsys):
    """``python -m dpjax`` fits ``boosted`` by default: the ε = 0.1 row beats the majority
    rate printed beside the table, and the model summary (its ε and seed in its header) is at
    most 20 lines with no reST markup."""
    import dpjax.__main__ as cli

    main(["--seeds", "2"])
    out = capsys.readouterr().out
    assert "Private Newton boosting" in out.splitlines()[0]
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.strip().startswith(("0.1 ", "1 ", "10 ", "none "))}
    assert sorted(rows) == ["0.1", "1", "10", "none"]
    majority = float(out.split("majority class rate: ")[1].split()[0])
    assert majority == pytest.approx(0.5558, abs=1e-4)
    assert float(rows["0.1"][1]) >= 0.70 > majority
    summary = out[out.index("Summary of the epsilon = 1, seed 0 model"):].strip().splitlines()
    assert len(summary) <= cli.SUMMARY_LINES == 20
    assert "learner: boosted" in summary[1]
    assert any(line.strip().startswith("top features by importance:") for line in summary)
    assert "requested: epsilon = 1, delta = 0" in out and "requested epsilon = 1)" in out
    assert summary[-1].strip().startswith("spent: epsilon = ")
    assert "``" not in out and ":func:" not in out
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = capsys.readouterr().out
    assert "default boosted" in help_text and "``" not in help_text
    assert all("`" not in cli.title(method) for method in dpjax.LEARNERS)


def test_compact_summary_shortens_a_long_ledger(monkeypatch):
    """A ledger too long for the summary keeps its heading, its first releases and its
    totals, within the line limit."""
    import dpjax.__main__ as cli

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(400, 3))
    model = dpjax.fit(X, (X[:, 0] > 0.5).astype(int), method="boosted", epsilon=1.0,
                      bounds=(0, 1), key=0)
    full = cli.compact_summary(model, 1.0, seed=0)
    assert full[0].startswith("Summary of the epsilon = 1, seed 0 model")
    monkeypatch.setattr(cli, "SUMMARY_LINES", len(full) - 1)
    short = cli.compact_summary(model, 1.0, seed=0)
    assert len(short) <= len(full) - 1
    assert "more releases" in "\n".join(short) and short[-1] == full[-1]


def test_a_ledger_of_wrapped_releases_is_cut_by_release():
    """Releases whose text wraps over several lines are kept or cut whole: the heading, the
    releases that fit, the count of the others and the totals, within the room."""
    import dpjax.__main__ as cli
    from dpjax.privacy import LedgerEntry, PrivacyLedger

    ledger = PrivacyLedger(requested_epsilon=1.0)
    for i in range(12):
        ledger = ledger.record(LedgerEntry(f"release {i}: " + "a long description " * 6,
                                           "discrete Laplace (L1 sens. 1)", 1 / 12))
    printed = ["  " + line for line in str(ledger).splitlines()]
    for room in (6, 9, 14):
        cut = cli.ledger_lines(ledger, room)
        assert len(cut) <= room and cut[0] == printed[0] and cut[-1] == printed[-1]
        assert cut[1].split() == printed[1].split()          # the table's header
        kept = [line.split(":")[0].strip() for line in cut
                if line.lstrip().startswith("release ") and ":" in line]
        assert kept == [f"release {i}" for i in range(len(kept))]      # whole, in order
        assert f"... {12 - len(kept)} more releases" in "\n".join(cut)


@pytest.fixture()
def patients(tmp_path):
    """A numeric column ``age``, a text column ``region`` and string labels."""
    rng = np.random.default_rng(5)
    age = rng.uniform(20, 90, size=200).round(1)
    frame = pd.DataFrame({"age": age, "region": rng.choice(["north", "south"], size=200),
                          "outcome": np.where(age > 55, "yes", "no")})
    path = tmp_path / "patients.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_bounds_for_every_column_says_a_text_column_is_read_as_missing(tmp_path, capsys,
                                                                       patients):
    """``--bounds lo,hi`` declares every column numeric: a text column's cells are read as
    missing, and a warning names the column and the fix (its categories in a JSON file) before
    the table, not silently; a warning, not an error, since whether a column holds a number at
    all is a fact one record can change. No cell of it is printed. Declared as categories in
    a JSON file, it is read."""
    path, frame = patients
    from dpjax.__main__ import _declared_bounds, read_csv

    numeric_json = tmp_path / "numeric.json"
    numeric_json.write_text(json.dumps({"age": [0, 100], "region": [0, 100]}))
    for bounds in ("0,100", str(numeric_json)):
        X, _, _ = read_csv(str(path), "outcome", _declared_bounds(bounds), "no,yes")
        err = capsys.readouterr().err
        assert X["region"].isna().all() and X["age"].notna().all()
        assert err.startswith("dpjax: warning: column(s) ['region'] hold cells that are not "
                              "numbers") and '{"column": {"categories": [...]}}' in err
        assert "north" not in err and "south" not in err and "200" not in err
    with pytest.raises(ValueError, match="column 'region'"):      # the Python API agrees
        dpjax.fit(frame.drop(columns="outcome"), frame["outcome"], method="random_trees",
                  epsilon=1.0, bounds=(0, 100), classes=("no", "yes"), key=0)
    declared = tmp_path / "declared.json"
    declared.write_text(json.dumps({"age": [0, 100],
                                    "region": {"categories": ["north", "south"]}}))
    X, _, _ = read_csv(str(path), "outcome", _declared_bounds(str(declared)), "no,yes")
    assert set(X["region"]) == {"north", "south"} and X["age"].notna().all()
    assert capsys.readouterr().err == ""


def test_a_stray_cell_in_a_numeric_column(tmp_path, capsys, patients):
    """``dpjax.fit`` on a DataFrame whose numeric column pandas typed as text over stray cells
    names the fixes (convert them to missing, or declare categories), never the cells nor how
    many; the fix it names fits. The CLI types cells by the declaration: the stray cells are
    those rows' missing values (its documented reading) and a warning names the column."""
    _, frame = patients
    odd = frame.astype({"age": object})
    odd.loc[[3, 10, 11, 40, 41, 42, 77], "age"] = "oops?"     # 7 stray cells
    X, y = odd.drop(columns="outcome"), odd["outcome"]
    bounds = {"age": (0, 100), "region": ["north", "south"]}
    with pytest.raises(ValueError) as error:
        dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=bounds, classes=("no", "yes"),
                  key=0)
    message = str(error.value)
    assert "column 'age' is declared numeric (bounds (0, 100)) but is typed as text" in message
    assert "pd.to_numeric" in message and "missing=['age']" in message
    assert "declare its categories" in message and "is categorical:" not in message
    assert "oops" not in message and "?" not in message and "7" not in message
    fixed = X.assign(age=pd.to_numeric(X["age"], errors="coerce"))
    model = dpjax.fit(fixed, y, method="random_trees", epsilon=1.0, bounds=bounds,
                      classes=("no", "yes"), missing=["age"], key=0)
    assert model.privacy.private

    from dpjax.__main__ import _declared_bounds, read_csv

    path = tmp_path / "odd.csv"
    odd.to_csv(path, index=False)
    spec = tmp_path / "bounds.json"
    spec.write_text(json.dumps({"age": [0, 100], "region": {"categories": ["north", "south"]}}))
    read, _, _ = read_csv(str(path), "outcome", _declared_bounds(str(spec)), "no,yes")
    err = capsys.readouterr().err
    assert read["age"].isna().sum() == 7 and read["age"].dtype == np.float64
    np.testing.assert_array_equal(read["age"].dropna(), fixed["age"].dropna())
    assert err.startswith("dpjax: warning: column(s) ['age'] hold cells that are not numbers")
    assert "oops" not in err and "7" not in err
