"""The grading stack a result was graded under: the Python, numpy and PyYAML actually imported.

Another numpy can move an answer's last digits (docs/authors.md), so every result records the
versions in force, and `merge` refuses shares graded under others (their batch settings).
"""

from __future__ import annotations

import platform


def versions() -> dict[str, str]:
    """Return the versions of Python, numpy and PyYAML this process runs and has imported."""
    import numpy
    import yaml

    return {
        "python": platform.python_version(),
        "numpy": str(numpy.__version__),
        "pyyaml": str(yaml.__version__),
    }
