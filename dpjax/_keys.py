"""PRNG keys: from user seeds or OS entropy, and the independent keys of a sweep's models."""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


class FixedKeyWarning(UserWarning):
    """A private fit drew its noise from a key its caller chose (an int seed or a key; not
    ``key=None``): reproducible, so fit for
    experiments, not for a model that is released (anyone who knows the key can recompute and
    subtract the noise; ``key=None`` draws fresh entropy)."""


def as_key(key: int | jax.Array | None) -> jax.Array:
    """A typed PRNG key from an int seed, a typed key, or a raw ``uint32[2]`` key.

    ``None`` draws 64 bits from the operating system's entropy (``secrets``), the whole key of
    JAX's threefry generator: the right choice for a release, since anyone who knows the key
    can recompute and subtract the noise. An int seed in ``[0, 2**64)`` is for reproducible
    experiments; all 64 bits are kept (``jax.random.key`` keeps only the low 32 bits of an int
    when 64-bit mode is off, so two seeds could silently give the same key).
    """
    if key is None or (isinstance(key, (int, np.integer)) and not isinstance(key, bool)):
        return jax.random.wrap_key_data(jax.device_put(seed_words(key)))
    if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    array = np.asarray(key)
    if array.dtype == np.uint32 and array.shape == (2,):
        # a copy: on CPU device_put may share the caller's memory, whose later writes would
        # change the key
        return jax.random.wrap_key_data(jax.device_put(array.copy()))
    raise ValueError(f"key must be an int seed, a jax.random key or None, got {key!r}")


def seed_words(seed: int | np.integer | None) -> np.ndarray:
    """The threefry key data ``uint32[2]`` of an int seed in ``[0, 2**64)`` (all 64 bits), or
    of 64 bits of OS entropy for ``None`` (:func:`as_key`)."""
    if seed is None:
        seed = secrets.randbits(64)
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise ValueError(f"key must be an int seed in [0, 2**64), a jax.random key or None; "
                         f"got {seed!r}")
    return np.asarray([seed >> 32, seed & 0xFFFFFFFF], np.uint32)


def seed_keys(seeds: Sequence[int | None]) -> jax.Array:
    """The keys ``[len(seeds)]`` of :func:`as_key` for every seed, built on the host and
    wrapped in one call (stacking one key per seed would compile a program per seed count)."""
    return jax.random.wrap_key_data(jax.device_put(np.stack([seed_words(s) for s in seeds])))


def grid_keys(key: jax.Array, n_points: int) -> tuple[jax.Array, jax.Array]:
    """``(structure_key, point_keys)`` of a sweep seed: ``key`` is split once into a structure
    key and a points key, and point ``i`` fits with ``fold_in(points_key, i)``. The split keeps
    the two families apart: with JAX's partitionable threefry ``split(k)[i] == fold_in(k, i)``,
    so children of one parent used for two purposes could coincide (a tree's structure key
    with another model's noise key)."""
    structure_key, points_key = jax.random.split(key)
    return structure_key, jax.vmap(lambda i: jax.random.fold_in(points_key, i))(
        jnp.arange(n_points))


def seed_list(seeds: int | Sequence[int] | None) -> tuple[int | None, ...]:
    """``(None,)`` (one fresh entropy seed), ``0..seeds-1`` for a count, or the given ints."""
    if seeds is None:
        return (None,)
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds must be >= 1 (a count), a sequence of ints or None; "
                             f"got {seeds!r}")
        return tuple(range(int(seeds)))
    try:
        listed = tuple(seeds)
    except TypeError:
        raise ValueError(f"seeds must be a count, a sequence of ints or None; got {seeds!r}"
                         ) from None
    if not listed or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                for s in listed):
        raise ValueError(f"seeds must be a non-empty sequence of ints; got {seeds!r}")
    return tuple(int(s) for s in listed)
