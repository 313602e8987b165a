"""Where CUDA and Ascend C builds are cached: `<root>/cuda`, `<root>/ascendc`.

One root per process, set where the process starts: the CLI from
`EVOKERNEL_CACHE`, a worker from its `--cache-dir` argument (its parent's
root, or its own directory when the sandbox keeps caches apart). The default is
`~/.cache/evokernel`. Nothing here reads the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

_root: Path | None = None  # None: the default


def default_build_cache() -> Path:
    return Path.home() / ".cache" / "evokernel"


def build_cache() -> Path:
    """The root this process builds under."""
    return _root or default_build_cache()


def use_build_cache(path: str | os.PathLike[str] | None) -> None:
    """Build under `path` from now on in this process (None: the default); the entry
    point's call, made once before any build."""
    global _root
    _root = Path(path).expanduser() if path else None
