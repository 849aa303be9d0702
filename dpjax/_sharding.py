"""Row sharding: one fit's program over several devices (``docs/design.md``, "Speed rules").

The codes and labels are split by rows across the devices (``jax.sharding.NamedSharding`` on a
one-axis mesh ``"rows"``) and the fit's program is compiled for those inputs: XLA's SPMD
partitioner keeps every per-row computation (routing, statistics, weights) on the rows' device
and sums each histogram with an all-reduce (``psum``). Only integer (fixed-point) statistics
feed the releases, so the sums, the noise and the released model are bit-identical to the
one-device fit under the same key (``tests/test_sharding.py``).

The row count must be a multiple of the device count: padding rows would need every learner to
mask them, and dropping rows would change the data, so neither is done silently.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "rows"


def resolve_devices(devices: int | str | Sequence[jax.Device] | None) -> list[jax.Device] | None:
    """The devices of a fit: ``None`` (default placement), ``"all"`` (every local device), a
    count ``k`` (the first ``k`` local devices) or a sequence of devices; ``None`` when that is
    a single device."""
    if devices is None:
        return None
    local = jax.local_devices()
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"devices must be None, 'all', a count or a list of devices; "
                             f"got {devices!r}")
        chosen = local
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
    ``n_rows``."""
    if n_rows % len(devices):
        raise ValueError(
            f"devices: {n_rows} rows do not split evenly across {len(devices)} devices; use a "
            f"device count that divides the row count (padding or dropping rows would change "
            "the data)")
    return NamedSharding(Mesh(np.asarray(devices), (AXIS,)), PartitionSpec(AXIS))


def shard_rows(devices: Sequence[jax.Device] | None,
               *arrays: jax.Array) -> tuple[jax.Array, ...]:
    """``arrays`` (leading axis: rows) placed row-sharded on ``devices`` (unchanged when
    ``None``)."""
    if devices is None:
        return arrays
    sharding = row_sharding(devices, arrays[0].shape[0])
    return tuple(jax.device_put(a, sharding) for a in arrays)
