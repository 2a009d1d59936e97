"""Every result names the stack and the walls it was graded under; merge refuses a mix."""

from __future__ import annotations

import json
import platform
import shutil
from pathlib import Path

import numpy
import pytest
import yaml

from tests.conftest import CORPUS, Cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def shares(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A class of four, graded in two shares."""
    from grader.cli import main

    tmp = tmp_path_factory.mktemp("stack")
    klass = tmp / "class"
    klass.mkdir()
    for name in ("ada", "bob", "cy", "dee"):
        shutil.copy(CORPUS / "correct" / "lists.py", klass / f"{name}.py")
    outs = [tmp / "shard-1", tmp / "shard-2"]
    for k, out in enumerate(outs, 1):
        argv = ["batch", str(klass), "--out", str(out), "--shard", f"{k}/2", "--no-progress"]
        assert main(argv) == 0
    return outs


def _copy_with(share: Path, dest: Path, **settings: str) -> Path:
    """Copy ``share`` with its last run's settings changed as if graded elsewhere."""
    shutil.copytree(share, dest)
    manifest = json.loads((dest / "batch.json").read_text())
    manifest["runs"][-1]["settings"].update(settings)
    (dest / "batch.json").write_text(json.dumps(manifest))
    return dest


def test_every_result_and_the_settings_name_the_stack(shares: list[Path]) -> None:
    """The versions actually imported, in each result and in the batch's settings."""
    stack = {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "pyyaml": yaml.__version__,
    }
    for share in shares:
        settings = json.loads((share / "batch.json").read_text())["runs"][-1]["settings"]
        assert {k: settings[k] for k in stack} == stack
        for path in (share / "results").glob("*.json"):
            assert json.loads(path.read_text())["extra_data"]["stack"] == stack


def test_merge_refuses_shares_graded_under_another_numpy(
    shares: list[Path], cli: Cli, tmp_path: Path
) -> None:
    """A share graded under another numpy is refused, both versions named."""
    other = _copy_with(shares[1], tmp_path / "shard-2", numpy="1.26.4")
    code, out, err = cli("merge", shares[0], other, "--out", tmp_path / "all")
    assert code == 2 and out == ""
    assert f"numpy 1.26.4 vs {numpy.__version__}" in err
    assert not (tmp_path / "all" / "summary.csv").exists()


def test_merge_refuses_shares_graded_under_other_walls(
    shares: list[Path], cli: Cli, tmp_path: Path
) -> None:
    """A share whose pods graded under other walls is refused, both named."""
    ours = json.loads((shares[0] / "batch.json").read_text())["runs"][-1]["settings"]["sandbox"]
    other = _copy_with(shares[1], tmp_path / "shard-2", sandbox="bwrap (no /proc) + landlock")
    code, _, err = cli("merge", shares[0], other, "--out", tmp_path / "all")
    assert code == 2
    assert f"sandbox bwrap (no /proc) + landlock vs {ours}" in err


def test_merge_of_shares_graded_alike_names_the_stack(
    shares: list[Path], cli: Cli, tmp_path: Path
) -> None:
    """Shares graded alike merge, and the merged results keep their stack."""
    code, _, err = cli("merge", *shares, "--out", tmp_path / "all")
    assert code == 0, err
    for path in (tmp_path / "all" / "results").glob("*.json"):
        assert json.loads(path.read_text())["extra_data"]["stack"]["numpy"] == numpy.__version__
