"""``import dpjax`` has no side effects: it loads neither JAX nor scipy, changes no JAX setting,
and its public names load on first use; the persistent compilation cache is turned on at
dpjax's first compile (unless the environment or the user turned it off)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import dpjax


def run(script: str, **env: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_loads_nothing_and_changes_no_setting():
    out = run("""
        import json, sys
        import dpjax
        loaded = {m: m in sys.modules for m in ("jax", "scipy", "pandas", "sklearn")}
        import jax
        cache = jax.config.jax_compilation_cache_dir
        fit = dpjax.fit
        print(json.dumps({"loaded": loaded, "cache": cache, "scipy_after_fit_name": "scipy"
                          in sys.modules}))
    """)
    assert out["loaded"] == {"jax": False, "scipy": False, "pandas": False, "sklearn": False}
    assert out["cache"] is None and not out["scipy_after_fit_name"]


def test_the_first_compile_turns_the_persistent_cache_on(tmp_path):
    script = """
        import json, sys
        import numpy as np
        import dpjax, jax
        before = jax.config.jax_compilation_cache_dir
        X = np.random.default_rng(0).uniform(0, 1, (50, 2)); y = (X[:, 0] > 0.5).astype(int)
        dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=(0, 1), key=0, n_trees=2,
                  depth=2)
        print(json.dumps({"before": before, "after": jax.config.jax_compilation_cache_dir,
                          "scipy": "scipy" in sys.modules}))
    """
    on = run(script, DPJAX_COMPILATION_CACHE=str(tmp_path / "cache"))
    assert on["before"] is None and on["after"] == str(tmp_path / "cache")
    assert not on["scipy"]                  # fitting needs no scipy (only the auditor does)
    off = run(script, DPJAX_COMPILATION_CACHE="off")
    assert off["before"] is None and off["after"] is None


def test_public_names_resolve_and_are_listed():
    for name in dpjax.__all__:
        assert getattr(dpjax, name) is not None, name
    assert set(dpjax.__all__) <= set(dir(dpjax))
    assert callable(dpjax.fit) and dpjax.Model.__name__ == "Model"
