"""JAX's persistent compilation cache for dpjax's fits: a fit's program compiled once on this
machine is read back from disk by later processes instead of being compiled again (the first
``dpjax.fit`` of a shape in a new process then costs a load, not a compile).

Nothing happens when dpjax is imported. dpjax's first compile (its first fit, sweep or audit)
calls :func:`enable_default`, which turns the cache on in ``$DPJAX_COMPILATION_CACHE`` if set to
a path, else ``$XDG_CACHE_HOME/dpjax/jax`` (``~/.cache/dpjax/jax``);
``DPJAX_COMPILATION_CACHE=off`` (or ``0``, ``false``, ``no``) leaves it off. A cache directory
the user configured for JAX itself (``jax_compilation_cache_dir``) is left alone, and so is a
cache the user turned off with :func:`disable` before the first fit. JAX's cache is
process-wide: once it is on, the user's other jitted programs are cached in the same directory
(a few hundred kB each); :func:`disable` turns it off for the process.

Entries are keyed by the program, the JAX/XLA versions and the device, never by the data: the
data are arguments of every compiled fit (nothing private is written to disk).
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

ENV = "DPJAX_COMPILATION_CACHE"
OFF = ("off", "0", "false", "no")
_decided = False
"""Whether dpjax has made its one default choice (:func:`enable_default`), or the user has
made theirs (:func:`enable`, :func:`disable`)."""


def default_dir() -> Path | None:
    """The cache directory the environment asks for, or ``None`` when it is turned off."""
    setting = os.environ.get(ENV, "").strip()
    if setting.lower() in OFF:
        return None
    if setting:
        return Path(setting).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dpjax" / "jax"


def enable(path: str | os.PathLike[str] | None = None) -> Path | None:
    """Turn on JAX's persistent compilation cache in ``path`` (default :func:`default_dir`)
    for every program, however fast it compiles; returns the directory in use, or ``None``
    when turned off or when the directory cannot be created. A directory already configured
    in JAX is kept."""
    global _decided
    _decided = True
    configured = directory()
    if configured is not None:
        return configured
    chosen = Path(path) if path is not None else default_dir()
    if chosen is None:
        return None
    try:
        chosen.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(chosen))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return chosen


def enable_default() -> Path | None:
    """dpjax's default, applied once, at its first compile: :func:`enable` unless the user has
    already enabled or disabled the cache in this process (then nothing changes)."""
    if _decided:
        return directory()
    return enable()


def disable() -> None:
    """Turn the persistent cache off for the rest of the process (dpjax's first compile will
    not turn it back on)."""
    global _decided
    _decided = True
    jax.config.update("jax_compilation_cache_dir", None)


def directory() -> Path | None:
    """The persistent cache directory in use, or ``None``."""
    configured = jax.config.jax_compilation_cache_dir
    return Path(configured) if configured else None
