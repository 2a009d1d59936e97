"""Which namespaces this process is in, to name truthfully how far taking new ones got.

Stdlib only, found beside run.py in the child, as confine.py is.
"""

from __future__ import annotations

import contextlib
import os

# As the walls line names them, in the order private_folder takes them.
NAMESPACES = {"user": "user", "ipc": "ipc", "net": "net", "mnt": "mount"}


def namespaces() -> dict[str, str]:
    """Return this process's namespaces by kind, as /proc names them; none without /proc."""
    found = {}
    for kind in NAMESPACES:
        with contextlib.suppress(OSError):
            found[kind] = os.readlink(f"/proc/self/ns/{kind}")
    return found


def taken(before: dict[str, str], why: str) -> str:
    """Return how the namespaces stand after taking them failed with ``why``."""
    now = namespaces()
    if not before or not now:
        return f"unknown ({why})"  # no /proc to tell by
    new = [name for kind, name in NAMESPACES.items() if before.get(kind) != now.get(kind)]
    if not new:
        return f"shared ({why})"
    return f"{'+'.join(new)}, no tmpfs ({why})"
