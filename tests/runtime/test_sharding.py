"""Row sharding (:mod:`dpjax._sharding`): the fit over 8 devices equals the 1-device fit.

The multi-device fits run in a subprocess with ``XLA_FLAGS=--xla_force_host_platform_device_count
=8`` (the flag must be set before JAX starts): 8 CPU devices, the rows split across them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest

import dpjax
from dpjax._sharding import resolve_devices, row_sharding

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent("""
    import json, re, sys, warnings
    import jax, numpy as np
    import dpjax
    sys.path.insert(0, {root!r})
    from tests.conftest import small
    warnings.simplefilter("ignore")
    assert len(jax.devices()) == 8, jax.devices()
    rng = np.random.default_rng(0)
    m, n = 1200, 6
    X = rng.normal(size=(m, n)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=m) > 0).astype(int)
    common = dict(bounds=([-4.0] * n, [4.0] * n), classes=(0, 1), n_bins=8, epsilon=1.0)
    out = {{}}
    for method in sorted(dpjax.LEARNERS):
        one = dpjax.fit(X, y, method=method, key=7, **common, **small(method))
        eight = dpjax.fit(X, y, method=method, key=7, devices=8, **common, **small(method))
        leaves = zip(jax.tree.leaves(one.params), jax.tree.leaves(eight.params))
        out[method] = {{
            "params_equal": all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in leaves),
            "proba_equal": bool(np.array_equal(one.predict_proba(X), eight.predict_proba(X))),
            "ledger_equal": str(one.privacy) == str(eight.privacy),
            "n_leaves": len(jax.tree.leaves(one.params)),
        }}
    # rows given as a row-sharded jax.Array: binned where they are (the codes stay sharded)
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    from dpjax import _preparation
    rows = NamedSharding(Mesh(np.asarray(jax.devices()), ("rows",)), PartitionSpec("rows"))
    X_sharded, y_sharded = jax.device_put(X, rows), jax.device_put(y.astype(np.int32), rows)
    prepared = _preparation.prepare(
        X_sharded, y_sharded, method="boosted", epsilon=1.0, bounds=common["bounds"],
        classes=(0, 1), n_bins=8, missing="error", on_out_of_bounds="clip",
        neighbouring="add_remove", params={{}}, pad=True)
    sharded_codes = len(prepared.codes.sharding.device_set) == 8
    same_sharded = {{}}
    for method in ("boosted", "random_trees"):
        one = dpjax.fit(X, y, method=method, key=7, **common, **small(method))
        eight = dpjax.fit(X_sharded, y_sharded, method=method, key=7, devices=8, **common,
                          **small(method))
        same_sharded[method] = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(
            jax.tree.leaves(one.params), jax.tree.leaves(eight.params)))
    out["sharded_input"] = {{"codes_sharded": sharded_codes, "same": same_sharded}}
    # 9 rows over 2 devices: padded to a multiple of 2, never refused (the row count is
    # private under add/remove), and the model is the 1-device one
    nine = {{}}
    for method in sorted(dpjax.LEARNERS):
        one = dpjax.fit(X[:9], y[:9], method=method, key=3, **common, **small(method))
        two = dpjax.fit(X[:9], y[:9], method=method, key=3, devices=2, **common,
                        **small(method))
        leaves = zip(jax.tree.leaves(one.params), jax.tree.leaves(two.params))
        nine[method] = (all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in leaves)
                        and str(one.privacy) == str(two.privacy))
    out["nine_rows"] = nine
    # regression cannot pad: refused over devices under add/remove whatever the row count,
    # fitted under replace-one where the (public) row count splits evenly
    target = X[:, 1].astype(float)
    reg = dict(bounds=common["bounds"], n_bins=8, epsilon=1.0, task="regression",
               y_bounds=(-4.0, 4.0), key=3)
    refusals = []
    for rows in (8, 9):
        try:
            dpjax.fit(X[:rows], target[:rows], method="boosted", devices=2, **reg)
            refusals.append("fitted")
        except ValueError as error:
            refusals.append(str(error))
    out["regression_refusals"] = refusals
    one = dpjax.fit(X[:8], target[:8], method="boosted", neighbouring="replace_one", **reg)
    two = dpjax.fit(X[:8], target[:8], method="boosted", neighbouring="replace_one",
                    devices=2, **reg)
    out["regression_replace_one"] = all(
        np.array_equal(np.asarray(a), np.asarray(b))
        for a, b in zip(jax.tree.leaves(one.params), jax.tree.leaves(two.params)))
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def eight_device_fits() -> dict:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    script = SCRIPT.format(root=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("method", sorted(dpjax.LEARNERS))
def test_eight_device_fit_is_bit_identical(eight_device_fits, method):
    result = eight_device_fits[method]
    assert result["n_leaves"] > 0
    assert result["params_equal"], f"{method}: sharded params differ from the 1-device fit"
    assert result["proba_equal"]
    assert result["ledger_equal"]


def test_resolve_devices():
    assert resolve_devices(None) is None
    assert resolve_devices(1) is None          # one device: default placement
    assert resolve_devices("all") is None      # this process has one CPU device
    with pytest.raises(ValueError, match="devices"):
        resolve_devices("gpu")
    with pytest.raises(ValueError, match="devices=5"):
        resolve_devices(5)
    with pytest.raises(ValueError, match="devices"):
        resolve_devices([])


@pytest.mark.parametrize("method", sorted(dpjax.LEARNERS))
def test_nine_rows_fit_on_two_devices(eight_device_fits, method):
    """Issue 50: 9 rows over 2 devices are padded, not refused (a refusal that depended on
    the row count would release it), and give the 1-device model and ledger."""
    assert eight_device_fits["nine_rows"][method]


def test_a_learner_that_cannot_pad_is_refused_over_devices_whatever_its_row_count(
        eight_device_fits):
    eight, nine = eight_device_fits["regression_refusals"]
    assert eight == nine        # the same refusal for 8 rows as for 9: no row-count channel
    assert "cannot be padded" in eight and "8" not in eight and "9" not in eight
    assert eight_device_fits["regression_replace_one"]


def test_the_sharding_refuses_rows_that_do_not_split_without_printing_their_count():
    devices = jax.local_devices() * 3        # the same device thrice: a 3-way mesh of rows
    with pytest.raises(ValueError, match="do not split evenly") as error:
        row_sharding(devices, 1000)
    assert "1000" not in str(error.value)


def test_rows_given_sharded_are_binned_where_they_are(eight_device_fits):
    """A row-sharded ``jax.Array`` is binned on its devices (issue 50, item 3): its codes stay
    sharded over the 8 devices, and its fits are the 1-device fits from numpy rows."""
    result = eight_device_fits["sharded_input"]
    assert result["codes_sharded"]
    assert all(result["same"].values()), result["same"]


def test_padded_rows_are_the_bucket_rounded_to_the_device_count():
    from dpjax._buckets import padded_rows, row_bucket
    assert padded_rows(9, 2) == row_bucket(9) == 1024
    assert padded_rows(2**20 + 1, 3) == 2**20 + 2      # past the buckets: the next multiple
    assert padded_rows(1500, 7) % 7 == 0 and padded_rows(1500, 7) >= row_bucket(1500)


def test_one_device_is_the_default_fit():
    rng = np.random.default_rng(1)
    X = np.clip(rng.normal(size=(300, 3)), -3, 3)
    y = (X[:, 0] > 0).astype(int)
    kw = dict(method="random_trees", bounds=([-3.0] * 3, [3.0] * 3), epsilon=1.0, key=3,
              n_trees=2, depth=2)
    a = dpjax.fit(X, y, **kw)
    b = dpjax.fit(X, y, devices=1, **kw)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
