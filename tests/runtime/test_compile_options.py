"""Quickly compiled CPU fits (``dpjax._preparation.compiler_options``): chosen from public facts
only (never from a private row count) or by the learner alone (``cpu_compile``), and releasing
the same private model as XLA's default options."""

from __future__ import annotations

import collections
import dataclasses
from typing import ClassVar

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import _api, _planning, _preparation
from dpjax._buckets import row_bucket
from dpjax._preparation import (
    CPU_COMPILE,
    LEAN_COMPILE,
    QUICK_COMPILE,
    QUICK_ENV,
    QUICK_WORK_BYTES,
    compiler_options,
)
from dpjax.learner import CPU_CHOICES, Learner, register
from dpjax.learners import get_learner

ON_CPU = jax.default_backend() == "cpu"


def test_public_work_up_to_the_limit_compiles_quickly_on_cpu(monkeypatch):
    monkeypatch.delenv(QUICK_ENV, raising=False)
    args = (jnp.zeros((10, 3), jnp.uint8),)
    quick = QUICK_COMPILE if ON_CPU else {}
    assert compiler_options(0, args) == quick
    assert compiler_options(QUICK_WORK_BYTES, args) == quick
    assert compiler_options(QUICK_WORK_BYTES + 1, args) == {}
    assert compiler_options(None, args) == {}       # a private row count: XLA's defaults
    # a fit whose work is private or large takes its learner's constant choice
    for choice in ("lean", "quick"):
        chosen = CPU_COMPILE[choice] if ON_CPU else {}
        assert compiler_options(None, args, choice) == chosen
        assert compiler_options(QUICK_WORK_BYTES + 1, args, choice) == chosen
        assert compiler_options(QUICK_WORK_BYTES, args, choice) == quick


def test_every_learner_chooses_a_known_option_set():
    """The measured choices (``benchmarks/bench_compile_options.py``), pinned; another value is
    refused at registration and, set later, by name at the fit."""
    assert tuple(CPU_COMPILE) == CPU_CHOICES
    assert CPU_COMPILE["lean"] == LEAN_COMPILE and CPU_COMPILE["quick"] == QUICK_COMPILE
    assert {name: get_learner(name).cpu_compile for name in dpjax.LEARNERS} == {
        "boosted": "lean", "malpha": "default", "random_trees": "quick",
        "rf_exponential": "quick", "rf_laplace": "quick", "rule_list": "quick",
        "smooth_boost": "lean"}
    with pytest.raises(ValueError, match="cpu_compile must be one of"):
        compiler_options(None, (jnp.zeros(3),), "fast")

    @dataclasses.dataclass(frozen=True)
    class Odd(Learner):
        name: ClassVar[str] = "odd_compile"
        cpu_compile: ClassVar[str] = "fast"

    with pytest.raises(ValueError, match="cpu_compile must be one of"):
        register(params=(), estimator="OddCompile")(Odd)


def test_the_environment_sets_a_constant_choice(monkeypatch):
    args = (jnp.zeros((10, 3), jnp.uint8),)
    monkeypatch.setenv(QUICK_ENV, "on")
    assert compiler_options(None, args) == (QUICK_COMPILE if ON_CPU else {})
    assert compiler_options(float("inf"), args) == (QUICK_COMPILE if ON_CPU else {})
    assert compiler_options(None, args, "lean") == (QUICK_COMPILE if ON_CPU else {})
    monkeypatch.setenv(QUICK_ENV, "off")
    assert compiler_options(0, args) == {}
    assert compiler_options(None, args, "lean") == {}
    monkeypatch.setenv(QUICK_ENV, "fast")
    with pytest.raises(ValueError, match=QUICK_ENV):
        compiler_options(0, args)


def test_a_fit_counts_its_work_from_public_facts_only(monkeypatch):
    """The row count enters only where it is public: a declared size, replace-one, or a
    non-private fit; a private add/remove fit takes its learner's constant choice (set to
    lean here); a sweep keeps XLA's defaults."""
    seen, chosen = [], []
    original_options, original_compile = _api.compiler_options, _preparation.compile_cached

    def spy_options(work, args, choice="default"):
        seen.append((work, choice))
        return original_options(work, args, choice)

    def spy_compile(fn, cache_key, *args, options=None):
        chosen.append(options)
        return original_compile(fn, cache_key, *args, options=options)

    monkeypatch.setattr(_api, "compiler_options", spy_options)
    monkeypatch.setattr(_api, "compile_cached", spy_compile)
    monkeypatch.setattr(_planning, "compile_cached", spy_compile)
    monkeypatch.setattr(type(get_learner("rf_laplace")), "cpu_compile", "lean")
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
    # the non-private fit counts its rows padded to their bucket (one bucket, one option set)
    assert seen == [(None, "lean"), (50 * 3, "lean"), (40 * 3, "lean"),
                    (row_bucket(40) * 3, "lean")]
    quick = QUICK_COMPILE if ON_CPU else {}
    # the sweep's programs (its models' keys, its one plan) with XLA's defaults
    assert chosen == [LEAN_COMPILE if ON_CPU else {}, quick, quick, quick, None, None]


@pytest.mark.parametrize("method", ["boosted", "rule_list", "smooth_boost"])
def test_quick_and_default_options_release_the_same_private_model(method, monkeypatch):
    """The private releases are exact integers under every option set (quick, lean, XLA's
    defaults), and the floats read from them were the same bits here (the fingerprints check
    every learner's private configurations)."""
    X, y = dpjax.load_dataset("banknote")
    fit = dict(method=method, epsilon=1.0, key=3, bounds=dpjax.data.public_bounds("banknote"))
    models = []
    for setting in ("on", "auto", "off"):       # quick, the learner's own, XLA's defaults
        monkeypatch.setenv(QUICK_ENV, setting)
        models.append(dpjax.fit(X, y, **fit))
    assert models[-1].timings.compile_s > 0.0      # compiled again, with XLA's defaults
    for model in models[1:]:
        chex.assert_trees_all_equal(models[0].params, model.params)
        assert models[0].privacy == model.privacy


def test_an_xla_without_the_options_compiles_with_its_defaults(monkeypatch):
    """An option this jaxlib's XLA does not know (an older or newer installation) falls back
    to XLA's defaults: the same program, never a failed fit."""
    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    args = (jnp.arange(5, dtype=jnp.float32),)
    compiled, _ = _preparation.compile_cached(lambda x: x * 2.0 + 1.0, "unknown-option", *args,
                                              options={"xla_cpu_no_such_option_zz": False})
    np.testing.assert_array_equal(compiled(*args), np.arange(5) * 2.0 + 1.0)
    with pytest.raises(Exception, match="No such compile option"):
        jax.jit(lambda x: x).lower(*args).compile(
            compiler_options={"xla_cpu_no_such_option_zz": False})


def test_a_non_private_fit_counts_every_process_rows():
    """``Prepared.public_work`` of a non-private fit counts the rows its program reads
    (``rows``: every process's in a multi-process fit, each padded to one bucket), not this
    process's share."""
    X = np.random.default_rng(0).integers(0, 2, (40, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    fit = dict(method="rf_laplace", bounds=(0.0, 1.0), n_bins=2, classes=(0, 1),
               missing="error", on_out_of_bounds="clip", neighbouring="add_remove", params={})
    assert _preparation.prepare(X, y, epsilon=None, **fit).public_work(False) == 40 * 3
    assert _preparation.prepare(X, y, epsilon=None, process_rows=(40, 40),
                                **fit).public_work(False) == 2 * 1024 * 3
