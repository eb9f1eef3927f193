"""The toolkit's cache folder (`INTERP_CACHE`, default ~/.cache/interp), checked before any command runs.

Dequantised models, assembled GGUF files, cached answers and frozen-layer states are written under
`interp.core.models.cache_root()`. A value that cannot be that folder (a file, a path under a file, a folder
that cannot be written) would otherwise fail deep inside a command, after its run folder was made; here it is
one line naming the variable and the path, before anything is written.
"""

from __future__ import annotations

import os
from pathlib import Path

from interp.errors import InterpError

VARIABLE = "INTERP_CACHE"


def check_cache_root() -> Path:
    """The cache folder, if it is a writable directory or can be created (no file at it or at any parent, the
    nearest existing parent writable); else one `InterpError` line naming INTERP_CACHE and the path. Nothing
    is created."""
    from interp.core.models import cache_root

    given = os.environ.get(VARIABLE)
    if given is not None and not given.strip():
        raise InterpError(
            f"{VARIABLE} is set but empty; set it to a folder interp may write its cache into, or unset it"
        )
    root = cache_root()
    where = (
        f"{VARIABLE}={given}"
        if given is not None
        else f"the cache folder {root} (default; set {VARIABLE} to choose another)"
    )
    path = root.expanduser()
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            raise InterpError(f"{where}: {path} is not a directory; point {VARIABLE} at a folder (existing or new)")
        if not os.access(path, os.W_OK | os.X_OK):
            raise InterpError(f"{where}: {path} is not writable; point {VARIABLE} at a folder you can write to")
        return root
    parent = path.absolute().parent
    while not (parent.exists() or parent.is_symlink()):
        parent = parent.parent
    if not parent.is_dir():
        raise InterpError(
            f"{where}: {path} lies under {parent}, which is not a directory; point {VARIABLE} at a folder "
            "(existing or new)"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InterpError(
            f"{where}: {path} cannot be created ({parent} is not writable); point {VARIABLE} at a folder "
            "you can write to"
        )
    return root
