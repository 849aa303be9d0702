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
    assert "own.csv (600 x 3)" in out and "declared by --bounds" in out
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
    model = dpjax.fit(X, y, epsilon=1.0, bounds=(0, 1), key=0)
    assert 0.0 <= model.score(X, y) <= 1.0
    with pytest.raises(ValueError, match="outside the declared classes"):
        model.score(X, y + 1)
    with pytest.raises(ValueError, match="one label per row"):
        model.score(X, y[:10])
