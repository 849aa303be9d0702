"""The persistent compilation cache (:mod:`dpjax.compilation_cache`): where it lives, how to
turn it off, and that a second process reads a fit's program back instead of compiling it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dpjax import compilation_cache


def test_default_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(compilation_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compilation_cache.default_dir() == tmp_path / "dpjax" / "jax"
    monkeypatch.setenv(compilation_cache.ENV, str(tmp_path / "mine"))
    assert compilation_cache.default_dir() == tmp_path / "mine"
    for off in ("off", "0", "FALSE", "no"):
        monkeypatch.setenv(compilation_cache.ENV, off)
        assert compilation_cache.default_dir() is None


FIT = textwrap.dedent("""
    import json, time, warnings
    import numpy as np
    start = time.perf_counter()
    import dpjax
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)); y = (X[:, 0] > 0).astype(int)
    model = dpjax.fit(X, y, method="rf_laplace", epsilon=1.0, key=0, bounds=([-4] * 4, [4] * 4),
                      n_trees=3, depth=3)
    directory = dpjax.compilation_cache.directory()
    print(json.dumps({"dir": None if directory is None else str(directory),
                      "compile_s": model.timings.compile_s,
                      "proba": model.predict_proba(X[:5]).tolist()}))
""")


def run_fit(env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", FIT], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["path", "off"])
def test_a_second_process_loads_the_program(tmp_path, setting):
    cache = tmp_path / "cache"
    env = dict(os.environ, **{compilation_cache.ENV: str(cache) if setting == "path" else "off"})
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    first = run_fit(env)
    entries = sorted(cache.iterdir()) if cache.exists() else []
    second = run_fit(env)
    assert first["proba"] == second["proba"]          # same key, same model
    if setting == "off":
        assert first["dir"] is None and not cache.exists()
        return
    assert Path(first["dir"]) == cache
    assert entries, "nothing was written to the cache"
    # every program of the second process was read back: it wrote no new entry
    assert sorted(cache.iterdir()) == entries
