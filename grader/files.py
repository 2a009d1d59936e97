"""Files the grader writes for others to read: each appears whole or not at all."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a file beside it, then rename it into place.

    A reader (Gradescope, a spreadsheet, a merge) or a stop in the middle never meets half a
    file, and a file from an earlier run stays whole until the new one replaces it. The
    temporary name is unique to this process and thread, so two writers never share one.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        # A write that fails (a full disk) names no file: name the one it was for.
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
