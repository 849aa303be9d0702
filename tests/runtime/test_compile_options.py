"""Quickly compiled CPU fits (``dpjax._preparation.compiler_options``): chosen from public facts
only (never from a private row count), and releasing the same private model as XLA's default
options."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import _api, _preparation
from dpjax._preparation import QUICK_COMPILE, QUICK_ENV, QUICK_WORK_BYTES, compiler_options

ON_CPU = jax.default_backend() == "cpu"


def test_public_work_up_to_the_limit_compiles_quickly_on_cpu(monkeypatch):
    monkeypatch.delenv(QUICK_ENV, raising=False)
    args = (jnp.zeros((10, 3), jnp.uint8),)
    quick = QUICK_COMPILE if ON_CPU else {}
    assert compiler_options(0, args) == quick
    assert compiler_options(QUICK_WORK_BYTES, args) == quick
    assert compiler_options(QUICK_WORK_BYTES + 1, args) == {}
    assert compiler_options(None, args) == {}       # a private row count: XLA's defaults


def test_the_environment_sets_a_constant_choice(monkeypatch):
    args = (jnp.zeros((10, 3), jnp.uint8),)
    monkeypatch.setenv(QUICK_ENV, "on")
    assert compiler_options(None, args) == (QUICK_COMPILE if ON_CPU else {})
    assert compiler_options(float("inf"), args) == (QUICK_COMPILE if ON_CPU else {})
    monkeypatch.setenv(QUICK_ENV, "off")
    assert compiler_options(0, args) == {}
    monkeypatch.setenv(QUICK_ENV, "fast")
    with pytest.raises(ValueError, match=QUICK_ENV):
        compiler_options(0, args)


def test_a_fit_counts_its_work_from_public_facts_only(monkeypatch):
    """The row count enters only where it is public: a declared size, replace-one, or a
    non-private fit; a sweep keeps XLA's defaults."""
    seen, chosen = [], []
    original_options, original_compile = _api.compiler_options, _preparation.compile_cached

    def spy_options(work, args):
        seen.append(work)
        return original_options(work, args)

    def spy_compile(fn, cache_key, *args, options=None):
        chosen.append(options)
        return original_compile(fn, cache_key, *args, options=options)

    monkeypatch.setattr(_api, "compiler_options", spy_options)
    monkeypatch.setattr(_api, "compile_cached", spy_compile)
    monkeypatch.setenv(QUICK_ENV, "auto")
    X = np.random.default_rng(0).integers(0, 2, (40, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    fit = dict(method="rf_laplace", bounds=(0.0, 1.0), n_bins=2, classes=(0, 1),
               n_trees=2, depth=1)
    dpjax.fit(X, y, epsilon=1.0, key=0, **fit)
    dpjax.fit(X, y, epsilon=1.0, key=0, public_size=50, **fit)
    dpjax.fit(X, y, epsilon=1.0, key=0, neighbouring="replace_one", **fit)
    dpjax.fit(X, y, epsilon=None, key=0, **fit)
    dpjax.sweep(X, y, epsilon=[0.5, 1.0], seeds=3, **fit)
    assert seen == [None, 50 * 3, 40 * 3, 40 * 3]
    quick = QUICK_COMPILE if ON_CPU else {}
    assert chosen == [{}, quick, quick, quick, None]


@pytest.mark.parametrize("method", ["boosted", "rule_list"])
def test_quick_and_default_options_release_the_same_private_model(method, monkeypatch):
    """The private releases are exact integers under either option set, and the floats read
    from them were the same bits here (the fingerprints check every learner's private
    configurations)."""
    X, y = dpjax.load_dataset("banknote")
    fit = dict(method=method, epsilon=1.0, key=3, bounds=dpjax.data.public_bounds("banknote"))
    monkeypatch.setenv(QUICK_ENV, "on")
    quick = dpjax.fit(X, y, **fit)
    monkeypatch.setenv(QUICK_ENV, "off")
    default = dpjax.fit(X, y, **fit)
    assert default.timings.compile_s > 0.0      # compiled again, with XLA's defaults
    chex.assert_trees_all_equal(quick.params, default.params)
    assert quick.privacy == default.privacy
