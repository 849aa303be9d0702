"""Multi-process fits (``jax.distributed``): two local CPU processes, each holding half of the
rows, fit with ``devices="all"`` the model one process fits on all the rows, bit for bit
(:mod:`dpjax._sharding`; ``docs/multihost.md``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest

import dpjax
from tests.conftest import small

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
M, N = 1200, 6

WORKER = textwrap.dedent("""
    import json, sys, warnings
    pid, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"localhost:{{port}}", num_processes=2,
                               process_id=pid)
    import numpy as np
    import dpjax
    sys.path.insert(0, {root!r})
    from tests.runtime.test_multihost import data, COMMON
    from tests.conftest import small
    warnings.simplefilter("ignore")
    X, y = data()
    half = slice(pid * len(y) // 2, (pid + 1) * len(y) // 2)
    result = {{"devices": len(jax.devices()), "local": len(jax.local_devices())}}
    for method in sorted(dpjax.LEARNERS):
        model = dpjax.fit(X[half], y[half], method=method, key=7, devices="all", **COMMON,
                          **small(method))
        result[method] = {{"leaves": [np.asarray(a).tolist()
                                      for a in jax.tree.leaves(model.params)],
                          "ledger": str(model.privacy)}}
    fresh = dpjax.fit(X[half], y[half], method="boosted", devices="all", **COMMON)
    result["fresh_key"] = [np.asarray(a).tolist() for a in jax.tree.leaves(fresh.params)]
    # unequal rows (process 1 holds 2 fewer): padded to one size, never refused
    unequal = dpjax.fit(X[half][:-2 if pid else None], y[half][:-2 if pid else None],
                        method="boosted", key=7, devices="all", **COMMON)
    result["unequal"] = [np.asarray(a).tolist() for a in jax.tree.leaves(unequal.params)]
    json.dump(result, open(out, "w"))
""")


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(M, N)).astype(np.float32)
    return X, (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=M) > 0).astype(int)


COMMON = dict(bounds=([-4.0] * N, [4.0] * N), classes=(0, 1), n_bins=8, epsilon=1.0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory) -> list[dict]:
    folder = tmp_path_factory.mktemp("multihost")
    script = folder / "worker.py"
    script.write_text(WORKER.format(root=str(ROOT)))
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="")
    port = str(free_port())
    outputs = [folder / f"process{pid}.json" for pid in range(2)]
    workers = [subprocess.Popen([sys.executable, str(script), str(pid), port, str(out)],
                                env=env, cwd=str(ROOT), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
               for pid, out in enumerate(outputs)]
    logs = [worker.communicate(timeout=900)[0] for worker in workers]
    for worker, log in zip(workers, logs, strict=True):
        assert worker.returncode == 0, log[-3000:]
    return [json.loads(out.read_text()) for out in outputs]


def test_the_processes_see_every_device(two_processes):
    assert all(r["devices"] == 2 and r["local"] == 1 for r in two_processes)


@pytest.mark.parametrize("method", sorted(dpjax.LEARNERS))
def test_two_process_fit_is_the_one_process_fit(two_processes, method):
    X, y = data()
    one = dpjax.fit(X, y, method=method, key=7, **COMMON, **small(method))
    leaves = [np.asarray(a).tolist() for a in jax.tree.leaves(one.params)]
    for result in two_processes:
        assert result[method]["leaves"] == leaves, f"{method}: differs from one process"
        assert result[method]["ledger"] == str(one.privacy)


def test_a_fresh_key_is_shared_and_unequal_rows_fit_as_one_process(two_processes):
    assert two_processes[0]["fresh_key"] == two_processes[1]["fresh_key"]
    X, y = data()
    one = dpjax.fit(X[:-2], y[:-2], method="boosted", key=7, **COMMON)
    leaves = [np.asarray(a).tolist() for a in jax.tree.leaves(one.params)]
    for result in two_processes:
        assert result["unequal"] == leaves
