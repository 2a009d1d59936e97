"""The template asks for huge pages where its forks' tables will lie (zygote.advise_huge_pages)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grader.sandbox.walls import CHILD_DIR, child_env

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")

# Loads the template's module as the template does (without serving), then says which
# heap mappings carry the huge page advice ("hg" in smaps' VmFlags).
ADVISED = f"""
import sys
sys.path.insert(0, {str(CHILD_DIR)!r})
import zygote
advised, heap = 0, False
for line in open("/proc/self/smaps"):
    if line[:1] in "0123456789abcdef" and "-" in line.split()[0]:
        heap = line.rstrip().endswith("[heap]")
    elif heap and line.startswith("VmFlags:") and " hg" in line:
        advised += 1
print(advised)
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not THP.exists() or "[never]" in THP.read_text(),
    reason="no transparent huge pages here",
)
def test_template_advises_huge_pages_in_the_free_top_of_its_heap(tmp_path: Path) -> None:
    env = {**child_env(str(tmp_path)), "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", ADVISED], env=env, capture_output=True, text=True, check=True
    )
    assert int(done.stdout) == 1, done.stderr
