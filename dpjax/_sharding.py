"""Row sharding: one fit's program over several devices (``docs/design.md``, "Speed rules").

The codes and labels are split by rows across the devices (``jax.sharding.NamedSharding`` on a
one-axis mesh ``"rows"``) and the fit's program is compiled for those inputs: XLA's SPMD
partitioner keeps every per-row computation (routing, statistics, weights) on the rows' device
and sums each histogram with an all-reduce (``psum``). Only integer (fixed-point) statistics
feed the releases, so the sums, the noise and the released model are bit-identical to the
one-device fit under the same key (``tests/test_sharding.py``).

The rows are padded up to a multiple of the device count with padding rows (codes 0, no class,
weight 0: :mod:`dpjax._buckets`), which every learner that may pad ignores
(:attr:`~dpjax.learner.Learner.pads_rows`), so any row count fits and no error depends on it
(the row count is private under add/remove). A learner or task that reads the row count off the
shape (regression, rule lists' ``calibration="paper"``) cannot pad: over several devices it
needs a public row count (``neighbouring="replace_one"``) that splits evenly.

**Several processes** (``jax.distributed.initialize`` on every host, ``docs/multihost.md``):
``devices="all"`` is then every device of every process, each process passes *its own* rows
(any number: the processes agree on one padded size, :func:`process_rows`), and the program
runs once over the global arrays (``jax.make_array_from_process_local_data``): histograms are
all-reduced across the hosts by XLA, the key is process 0's (broadcast, so that the noise is
drawn once), and every process gets the same replicated model, bit-identical to one process
fitting all the rows in process order (``tests/runtime/test_multihost.py``).
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "rows"


def resolve_devices(devices: int | str | Sequence[jax.Device] | None) -> list[jax.Device] | None:
    """The devices of a fit: ``None`` (default placement), ``"all"`` (every local device; with
    several processes, every device of every process), a count ``k`` (the first ``k`` local
    devices) or a sequence of devices; ``None`` when that is a single device."""
    if devices is None:
        return None
    local = jax.local_devices()
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"devices must be None, 'all', a count or a list of devices; "
                             f"got {devices!r}")
        chosen = jax.devices()
    elif isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        if not 1 <= devices <= len(local):
            raise ValueError(f"devices={devices} but {len(local)} local device(s) are "
                             "available")
        chosen = local[:int(devices)]
    else:
        chosen = list(devices)
        if not chosen or not all(isinstance(d, jax.Device) for d in chosen):
            raise ValueError("devices must be None, 'all', a count or a non-empty list of "
                             "jax devices")
    return chosen if len(chosen) > 1 else None


def row_sharding(devices: Sequence[jax.Device], n_rows: int) -> NamedSharding:
    """Rows split evenly across ``devices``; ``ValueError`` when they do not divide
    ``n_rows`` (the rows are padded to a multiple first: an internal error, which prints no
    row count)."""
    if n_rows % len(devices):
        raise ValueError("devices: the rows do not split evenly across the devices")
    return NamedSharding(Mesh(np.asarray(devices), (AXIS,)), PartitionSpec(AXIS))


def spans_processes(devices: Sequence[jax.Device] | None) -> bool:
    """Whether ``devices`` include another process's (a multi-process fit)."""
    mine = jax.process_index()
    return devices is not None and any(d.process_index != mine for d in devices)


def process_rows(devices: Sequence[jax.Device] | None, local_rows: int) -> tuple[int, ...]:
    """Every process's own row count, in process order (one gather across the processes of a
    multi-process fit), or ``(local_rows,)`` on one process. The processes pad their rows to
    one size (:func:`dpjax._buckets.padded_rows` of the largest), so any counts fit."""
    if not spans_processes(devices):
        return (local_rows,)
    counts = multihost_utils.process_allgather(np.int64(local_rows))
    return tuple(int(c) for c in np.asarray(counts).reshape(-1))


def local_device_count(devices: Sequence[jax.Device]) -> int:
    """The devices of ``devices`` that belong to this process (each process holds the rows of
    its own devices, as many rows in every process): ``ValueError`` where the processes hold
    different numbers of them (a public fact of the device list)."""
    per_process = collections.Counter(d.process_index for d in devices)
    if len(set(per_process.values())) > 1:
        raise ValueError("devices: every process must hold as many of the devices (each "
                         "process pads its rows to one size, split evenly over its devices)")
    return per_process[jax.process_index()]


def shared_key(devices: Sequence[jax.Device] | None, key: jax.Array) -> jax.Array:
    """The fit's key: with devices of several processes, process 0's (broadcast to all, so that
    every process draws the same noise once: a fresh-entropy key differs per process)."""
    if not spans_processes(devices):
        return key
    data = multihost_utils.broadcast_one_to_all(np.asarray(jax.random.key_data(key)))
    return jax.random.wrap_key_data(np.asarray(data, np.uint32))


def shard_rows(devices: Sequence[jax.Device] | None, *arrays: jax.Array,
               n_rows: int | None = None) -> tuple[jax.Array, ...]:
    """``arrays`` (leading axis: rows) placed row-sharded on ``devices`` (unchanged when
    ``None``); with devices of several processes each process's arrays are its rows of the
    global arrays, in process order (``n_rows``: their total, :func:`process_rows`, gathered
    here unless given: every process holds as many)."""
    if devices is None:
        return arrays
    if spans_processes(devices):
        if n_rows is None:
            n_rows = sum(process_rows(devices, arrays[0].shape[0]))
        sharding = row_sharding(devices, n_rows)
        return tuple(jax.make_array_from_process_local_data(sharding, np.asarray(a),
                                                           (n_rows, *a.shape[1:]))
                     for a in arrays)
    sharding = row_sharding(devices, arrays[0].shape[0])
    return tuple(jax.device_put(a, sharding) for a in arrays)


def to_local(tree: object) -> object:
    """A multi-process fit's outputs as this process's arrays: a replicated array's local copy,
    any other gathered from every process (unchanged on one process)."""
    def local(a: object) -> object:
        if not isinstance(a, jax.Array) or a.is_fully_addressable:
            return a
        if a.is_fully_replicated:
            return jax.device_put(a.addressable_data(0), jax.local_devices()[0])
        return jax.numpy.asarray(multihost_utils.process_allgather(a, tiled=True))
    return jax.tree.map(local, tree)
