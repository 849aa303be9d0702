"""Data layer: encoding missing values, infinities, out-of-bounds values and unknown
categories."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpjax.data import OutOfBoundsWarning, binning, encode, make_feature_spec
from tests.helpers.data import spec_and_codes

# --------------------------------------------------------------------------------------------
# Missing values, inf, out of bounds, unknown categories
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["code", ["num", "cat"]])
def test_missing_values_get_their_own_last_code(missing):
    X = pd.DataFrame({
        "num": [0.0, np.nan, 10.0, 5.0],
        "cat": pd.Categorical(["b", "a", None, "c"], categories=["a", "b", "c"]),
    })
    spec, codes = spec_and_codes(X, {"num": (0, 10), "cat": ["a", "b", "c"]}, missing=missing)
    assert spec.missing == (True, True)
    np.testing.assert_array_equal(spec.n_values, [10, 4])  # categories + "other"
    np.testing.assert_array_equal(spec.n_codes, [11, 5])
    np.testing.assert_array_equal(codes[:, 0], [0, 10, 9, 5])
    np.testing.assert_array_equal(codes[:, 1], [1, 0, 4, 2])  # missing: the last code


def test_missing_declared_for_some_columns_only():
    X = pd.DataFrame({"a": [0.0, np.nan], "b": [1.0, 2.0]})
    spec, codes = spec_and_codes(X, {"a": (0, 1), "b": (0, 2)}, missing=["a"])
    assert spec.missing == (True, False)
    np.testing.assert_array_equal(spec.n_codes, [11, 10])
    np.testing.assert_array_equal(codes[:, 0], [0, 10])
    with pytest.raises(ValueError, match="unknown columns"):
        make_feature_spec(X, {"a": (0, 1), "b": (0, 2)}, missing=["zz"])
    with pytest.raises(ValueError, match="missing"):
        make_feature_spec(X, {"a": (0, 1), "b": (0, 2)}, missing="drop")


@pytest.mark.parametrize("column", ["num", "cat"])
def test_undeclared_nan_is_an_error_naming_the_column(column):
    X = pd.DataFrame({
        "num": [0.0, 1.0, 2.0],
        "cat": pd.Categorical(["a", "b", "a"], categories=["a", "b"]),
    })
    X.loc[1, column] = np.nan
    spec = make_feature_spec(X, {"num": (0, 2), "cat": ["a", "b"]})
    with pytest.raises(ValueError, match=f"'{column}'.*missing") as error:
        encode(spec, X)
    assert not any(ch.isdigit() for ch in str(error.value).split(".")[0])  # no count


def test_inf_is_an_error():
    for value in (np.inf, -np.inf):
        X = pd.DataFrame({"x": [0.0, value]})
        spec = make_feature_spec(X, {"x": (0, 1)}, missing="code")
        with pytest.raises(ValueError, match="'x'.*infinite"):
            encode(spec, X)
        with pytest.raises(ValueError, match="infinite"):
            encode(spec, X, on_out_of_bounds="clip")


def test_out_of_bounds_error_and_clip():
    """Clipping (with a warning) is the default; ``"error"`` raises. Neither message prints a
    value or a count (they are the private data)."""
    X = pd.DataFrame({"x": [-1.0, 0.5, 3.0]})
    spec = make_feature_spec(X, {"x": (0.0, 1.0)})
    with pytest.raises(ValueError, match="'x'.*outside its declared bounds") as error:
        encode(spec, X, on_out_of_bounds="error")
    with pytest.warns(OutOfBoundsWarning, match="'x'.*outside its declared bounds") as warned:
        codes = encode(spec, X)
    np.testing.assert_array_equal(codes[:, 0], [0, 5, 9])
    with pytest.warns(OutOfBoundsWarning, match="'x'"):
        np.testing.assert_array_equal(encode(spec, X, on_out_of_bounds="clip"), codes)
    for message in (str(error.value), str(warned[0].message)):
        assert "column 'x' has values outside its declared bounds [0, 1]" in message
        for leaked in ("-1", "3", "2 value"):
            assert leaked not in message, message
    with pytest.raises(ValueError, match="on_out_of_bounds"):
        encode(spec, X, on_out_of_bounds="ignore")


def test_unknown_category_handling():
    """An unknown category gets the feature's "other" code (after the declared ones) with a
    warning by default, or raises with ``"error"``; neither message prints the value."""
    X = pd.DataFrame({"s": ["x", "y", "q"]})
    spec = make_feature_spec(X, {"s": ["x", "y"]})
    np.testing.assert_array_equal(spec.n_codes, [3])
    with pytest.raises(ValueError, match="'s'.*outside its declared categories") as error:
        encode(spec, X, on_out_of_bounds="error")
    assert "'q'" not in str(error.value)
    with pytest.warns(OutOfBoundsWarning, match="'s'.*outside its declared categories") as warned:
        codes = encode(spec, X)
    assert "'q'" not in str(warned[0].message)
    np.testing.assert_array_equal(codes[:, 0], [0, 1, 2])
    # with a missing code too: "other" is code 2, missing (NaN) the last code 3
    spec = make_feature_spec(X, {"s": ["x", "y"]}, missing=["s"])
    np.testing.assert_array_equal(spec.n_codes, [4])
    with pytest.warns(OutOfBoundsWarning, match="'s'"):
        codes = encode(spec, pd.DataFrame({"s": ["x", "y", "q", None]}),
                       on_out_of_bounds="clip")
    np.testing.assert_array_equal(codes[:, 0], [0, 1, 2, 3])


def test_encode_checks_columns():
    X = pd.DataFrame({"a": [0.0], "b": [1.0]})
    spec = make_feature_spec(X, {"a": (0, 1), "b": (0, 1)})
    with pytest.raises(ValueError, match="lacks the columns"):
        encode(spec, pd.DataFrame({"a": [0.0]}))
    with pytest.raises(ValueError, match="features"):
        encode(spec, np.zeros((2, 3)))
    # numpy input is matched by position
    np.testing.assert_array_equal(encode(spec, np.array([[1.0, 0.0]])), [[9, 0]])


# --------------------------------------------------------------------------------------------
# The vectorised encoder against the declared edges
# --------------------------------------------------------------------------------------------

EDGE_BOUNDS = [(0.0, 1.0), (-7.0421, 6.8248), (-3.0, -1e-3), (1e9, 1e9 + 1.0),   # ordinary
               (1e16, 1e16 + 64.0),            # edges coarser than an ulp of lo: per column
               (0.1, float(np.nextafter(0.1, 1))), (0.0, 3e-321),   # one ulp, subnormal
               (2.5, 2.5), (-1e308, 1e308)]    # constant; hi - lo overflows


def _declared_codes(spec, j, values):
    """``searchsorted(spec.bin_edges(j), clip(x, lo, hi), side="right")``: the codes that
    ``FeatureSpec.bin_edges`` declares for numeric feature ``j``."""
    values = np.clip(np.asarray(values, np.float64), spec.lower[j], spec.upper[j])
    return np.searchsorted(spec.bin_edges(j), values, side="right")


@pytest.mark.parametrize("chunk", [37, binning.CHUNK])
@pytest.mark.parametrize("n_bins", [1, 2, 3, 7, 10, 255])
def test_codes_match_the_declared_edges_at_and_around_every_edge(n_bins, chunk, monkeypatch):
    """Every edge, its float64 neighbours, the bounds and values beyond them get exactly the
    bin that ``searchsorted`` on ``spec.bin_edges`` gives, in float64 and float32, row- and
    column-major, in one block or many (``chunk``)."""
    monkeypatch.setattr(binning, "CHUNK", chunk)
    columns = []
    with np.errstate(over="ignore", invalid="ignore"):
        for lo, hi in EDGE_BOUNDS:
            edges = np.linspace(lo, hi, n_bins + 1)
            near = np.concatenate([edges, np.nextafter(edges, -np.inf),
                                   np.nextafter(edges, np.inf)])
            columns.append(near[np.isfinite(near)])
    X = np.full((max(map(len, columns)), len(columns)), np.nan)
    for j, column in enumerate(columns):
        X[:len(column), j] = column
        X[len(column):, j] = column[0]
    spec = make_feature_spec(X, ([lo for lo, _ in EDGE_BOUNDS], [hi for _, hi in EDGE_BOUNDS]),
                             n_bins=n_bins)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfBoundsWarning)
        warnings.simplefilter("ignore", RuntimeWarning)     # np.linspace on (-1e308, 1e308)
        f32 = np.finfo(np.float32).max
        for values in (X, np.clip(X, -f32, f32).astype(np.float32)):
            expected = np.stack([_declared_codes(spec, j, values[:, j])
                                 for j in range(spec.n_features)], 1)
            for layout in (np.ascontiguousarray(values), np.asfortranarray(values)):
                codes = encode(spec, layout)
                assert codes.dtype == np.uint8
                np.testing.assert_array_equal(codes, expected)


def test_mixed_frame_codes_flags_and_their_order():
    """A frame of numeric and categorical columns (NaN with missing codes, unknown categories,
    values out of bounds, nullable and integer columns) is coded as column-by-column binning
    codes it; warnings come in column order and an error names the first offending column."""
    rng = np.random.default_rng(0)
    n = 500
    X = pd.DataFrame({
        "f": np.where(rng.random(n) < 0.1, np.nan, rng.normal(0, 2, n)),
        "colour": pd.Series(rng.choice(["red", "blue", "teal", None], n), dtype=object),
        "i": rng.integers(-3, 14, n),
        "g": np.round(rng.uniform(-1, 11, n)).astype(np.float32),
        "k": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(0, 5, n)), dtype="Int64"),
        "flag": rng.random(n) < 0.5,
    })
    bounds = {"f": (-3.0, 3.0), "colour": ["red", "blue"], "i": (0, 10), "g": (0.0, 10.0),
              "k": (0, 4), "flag": [False, True]}
    spec = make_feature_spec(X, bounds, n_bins=7, missing=["f", "colour", "k"])
    with pytest.warns(OutOfBoundsWarning) as warned:
        codes = encode(spec, X)
    assert [str(w.message).split("'")[1] for w in warned] == ["f", "colour", "i", "g"]
    for j in (0, 2, 3, 4):
        values = X.iloc[:, j].to_numpy(float, na_value=np.nan)
        expected = _declared_codes(spec, j, values)
        expected[np.isnan(values)] = spec.n_values[j]               # missing: the last code
        np.testing.assert_array_equal(codes[:, j], expected, err_msg=spec.names[j])
    colour = [{"red": 0, "blue": 1}.get(v, 2 if v else 3) for v in X["colour"]]  # other, missing
    np.testing.assert_array_equal(codes[:, 1], colour)
    np.testing.assert_array_equal(codes[:, 5], X["flag"].to_numpy())
    # errors: the first offending column in column order, after the earlier columns' warnings
    X.loc[3, "g"], X.loc[4, "i"] = np.inf, 99
    with pytest.warns(OutOfBoundsWarning) as warned, pytest.raises(ValueError, match="'g'.*inf"):
        encode(spec, X)
    assert [str(w.message).split("'")[1] for w in warned] == ["f", "colour", "i"]
    with pytest.raises(ValueError, match="'f'.*outside"):
        encode(spec, X, on_out_of_bounds="error")


def test_codes_follow_declared_edges_that_the_formula_misses(monkeypatch):
    """Where ``bin_edges`` are not ``k * step + lo`` (here one ulp up, as another
    ``np.linspace`` might round), values at the formula's edges still get the declared bins."""
    def ulp_up(lo, hi, n_bins):
        return np.nextafter(np.linspace(lo, hi, n_bins + 1)[1:-1], np.inf)

    monkeypatch.setattr(binning, "_inner_edges", ulp_up)
    lo, hi, n_bins = -7.0421, 6.8248, 10
    at_formula_edges = np.arange(n_bins + 1) * ((hi - lo) / n_bins) + lo
    X = np.stack([at_formula_edges, at_formula_edges], 1)
    spec = make_feature_spec(X, ([lo, lo], [hi, 2 * hi]), n_bins=n_bins)
    codes = encode(spec, X)
    np.testing.assert_array_equal(codes[:, 0], _declared_codes(spec, 0, X[:, 0]))
    np.testing.assert_array_equal(codes[1:-1, 0], np.arange(n_bins - 1))  # each below its edge
    np.testing.assert_array_equal(codes[:, 1], _declared_codes(spec, 1, X[:, 1]))
