"""Quickly compiled CPU fits (``dpjax._preparation.compiler_options``): chosen from public
shapes only, and releasing the same private model as XLA's default options."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import _api, _preparation
from dpjax._preparation import QUICK_COMPILE, QUICK_WORK_BYTES, compiler_options


def test_small_cpu_programs_compile_quickly_and_large_ones_with_xla_defaults():
    args = (jnp.zeros((10, 3), jnp.uint8),)
    assert compiler_options(0, args) == QUICK_COMPILE
    assert compiler_options(QUICK_WORK_BYTES, args) == QUICK_COMPILE
    assert compiler_options(QUICK_WORK_BYTES + 1, args) == {}
    assert compiler_options(float("inf"), args) == {}
    assert compiler_options(0, ()) == (QUICK_COMPILE if jax.default_backend() == "cpu" else {})


def test_a_fit_passes_its_codes_bytes_and_a_sweep_keeps_xla_defaults(monkeypatch):
    """``dpjax.fit`` passes the bytes of its codes; ``dpjax.sweep`` none (XLA's defaults:
    every sweep plan gives the same bits, ``tests/runtime/test_sweep_parallel.py``)."""
    seen = []
    original = _preparation.compile_cached

    def spy(fn, cache_key, *args, work=float("inf")):
        seen.append(work)
        return original(fn, cache_key, *args, work=work)

    monkeypatch.setattr(_api, "compile_cached", spy)
    X = np.random.default_rng(0).integers(0, 2, (40, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    fit = dict(method="rf_laplace", bounds=(0.0, 1.0), n_bins=2, classes=(0, 1),
               n_trees=2, depth=1)
    dpjax.fit(X, y, epsilon=1.0, key=0, **fit)
    dpjax.sweep(X, y, epsilon=[0.5, 1.0], seeds=3, **fit)
    assert seen == [40 * 3, float("inf")]


@pytest.mark.parametrize("method", ["boosted", "rule_list"])
def test_quick_and_default_options_release_the_same_private_model(method, monkeypatch):
    """The private releases are exact integers under either option set, and the floats read
    from them are the same bits (``QUICK_COMPILE``'s docstring; the fingerprints check every
    learner)."""
    X, y = dpjax.load_dataset("banknote")
    fit = dict(method=method, epsilon=1.0, key=3, bounds=dpjax.data.public_bounds("banknote"))
    quick = dpjax.fit(X, y, **fit)
    monkeypatch.setattr(_preparation, "QUICK_WORK_BYTES", -1)
    default = dpjax.fit(X, y, **fit)
    assert default.timings.compile_s > 0.0      # compiled again, with XLA's defaults
    chex.assert_trees_all_equal(quick.params, default.params)
    assert quick.privacy == default.privacy
