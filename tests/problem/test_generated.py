"""Tables generated from a seed are kept beside the hidden cases (grader/problem/generated.py):
the next load reads them instead of importing numpy.random, and gets the very same bytes;
a kept table that is not exactly what generating gives is never used."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from grader.problem import generated
from grader.problem.cases import load_problem
from tests.conftest import ROOT, ROPE


@pytest.fixture
def rope(tmp_path: Path) -> Path:
    """A copy of the rope exercise, whose cases write their `x` as a seed and a shape."""
    dest = tmp_path / "rope"
    shutil.copytree(ROPE, dest, ignore=shutil.ignore_patterns("__pycache__", ".generated"))
    return dest


def kept(root: Path) -> Path:
    return root / "hidden_tests" / generated.FOLDER


def tables(root: Path) -> list[Path]:
    return sorted(kept(root).glob("*" + generated.SUFFIX))


def generated_x(root: Path) -> dict[str, np.ndarray]:
    """Each hidden case's `x` as numpy's RandomState makes it, by the case's name."""
    found = {}
    for path in sorted((root / "hidden_tests").glob("*.yaml")):
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec = case["input"]["x"]
        if isinstance(spec, dict):
            state = np.random.RandomState(spec["seed"])
            low, high = spec.get("low", -1.0), spec.get("high", 1.0)
            found[case["name"]] = state.uniform(low, high, tuple(spec["shape"]))
    assert found, "the rope exercise generates its tables"
    return found


def loaded_x(root: Path) -> dict[str, np.ndarray]:
    return {case.name: case.inputs["x"] for case in load_problem(root).hidden}


def assert_same_tables(root: Path) -> None:
    got, want = loaded_x(root), generated_x(root)
    for name, table in want.items():
        assert got[name].dtype == np.float64 and got[name].shape == table.shape
        assert got[name].tobytes() == table.tobytes(), name


def test_the_second_load_reads_the_kept_tables_without_numpy_random(rope: Path) -> None:
    """The first load writes each generated table; a new process then loads the same
    suite without importing numpy.random, and every table is the very bytes numpy gives."""
    assert_same_tables(rope)
    assert tables(rope), "the first load keeps what it generated"
    assert (kept(rope) / ".gitignore").read_text().splitlines()[-1] == "*"
    assert all(os.stat(p).st_mode & 0o077 == 0 for p in [kept(rope), *tables(rope)])
    script = (
        "import sys; from pathlib import Path\n"
        "from grader.problem.cases import load_problem\n"
        f"load_problem(Path({str(rope)!r}))\n"
        "print('numpy.random' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
    assert_same_tables(rope)


def _shorter(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-8])


def _other_numbers(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-8:] = np.float64(0.5).tobytes()
    path.write_bytes(bytes(data))


def _other_header(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data.replace(b"seed=", b"seed=1", 1)[: len(data)])


def _writable_by_others(path: Path) -> None:
    _other_numbers(path)
    path.chmod(0o666)


def _a_second_name(path: Path) -> None:
    _other_numbers(path)
    os.link(path, path.parent.parent / f"another_name_of_{path.stem}")


def _a_link(path: Path) -> None:
    target = path.parent.parent / f"elsewhere_{path.name}"
    shutil.copy(path, target)
    _other_numbers(target)
    path.unlink()
    path.symlink_to(target)


def _someone_elses(path: Path) -> None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    _other_numbers(path)
    os.chown(path, 65534, 65534)


@pytest.mark.parametrize(
    "spoil",
    [
        _shorter,
        _other_header,
        _writable_by_others,
        _a_second_name,
        _a_link,
        _someone_elses,
    ],
)
def test_a_kept_table_not_as_written_is_generated_again(rope: Path, spoil) -> None:  # type: ignore[no-untyped-def]
    """Cut short, another seed's header, writable by others, with a second name, a link,
    another user's: each is left unread, and the table is generated (and written) again."""
    load_problem(rope)
    for path in tables(rope):
        spoil(path)
    assert_same_tables(rope)


def test_the_numbers_are_not_checked_only_the_header_and_length(rope: Path) -> None:
    """What the cache trusts, said plainly: a kept table of the right header and length,
    the grader's own and nobody else's to write, is read as it is. Its folder is the hidden
    cases' own: whoever can change it can change the cases."""
    load_problem(rope)
    for path in tables(rope):
        _other_numbers(path)
    got, want = loaded_x(rope), generated_x(rope)
    assert any(got[name].tobytes() != table.tobytes() for name, table in want.items())


def test_a_folder_that_cannot_be_used_keeps_nothing(rope: Path, tmp_path: Path) -> None:
    """A link in the folder's place, or a file there: nothing is read or written through
    it, and the tables are generated as before."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    kept(rope).symlink_to(elsewhere)
    assert_same_tables(rope)
    assert list(elsewhere.iterdir()) == []
    kept(rope).unlink()
    kept(rope).write_text("not a folder")
    assert_same_tables(rope)
    assert kept(rope).read_text() == "not a folder"


def test_a_kit_without_hidden_cases_keeps_nothing(rope: Path) -> None:
    """No hidden folder (a learner's kit): the examples' tables are generated, no folder made."""
    shutil.rmtree(rope / "hidden_tests")
    with generated.kept_in(rope / "hidden_tests" / generated.FOLDER):
        table = generated.uniform(5, 6, 8, -1.0, 1.0)
    assert table.tobytes() == np.random.RandomState(5).uniform(-1.0, 1.0, (6, 8)).tobytes()
    assert not (rope / "hidden_tests").exists()


def test_tables_no_case_names_are_removed(rope: Path) -> None:
    """A seed the author changed leaves its old table behind for one load only; files of
    other names in the folder (another writer's temporary file) are left alone."""
    load_problem(rope)
    before = set(tables(rope))
    other = kept(rope) / ".someone.123.456.tmp"
    other.write_bytes(b"")
    cases = sorted((rope / "hidden_tests").glob("*.yaml"))
    case = next(p for p in cases if "seed" in p.read_text())
    text = case.read_text(encoding="utf-8")
    seed = yaml.safe_load(text)["input"]["x"]["seed"]
    case.write_text(text.replace(f"seed: {seed}", f"seed: {seed + 1000}"), encoding="utf-8")
    load_problem(rope)
    after = set(tables(rope))
    assert len(after) == len(before) and len(after - before) == 1
    assert other.exists()
    assert_same_tables(rope)


def test_a_suite_that_does_not_load_removes_nothing(rope: Path) -> None:
    """A load that fails before its end (an exception inside the block) prunes nothing."""
    load_problem(rope)
    before = set(tables(rope))
    with pytest.raises(RuntimeError), generated.kept_in(kept(rope)):
        generated.uniform(99, 2, 2, -1.0, 1.0)
        raise RuntimeError("stop")
    assert before < set(tables(rope))


def test_a_link_put_in_the_folders_place_during_a_load_leads_nowhere(
    rope: Path, tmp_path: Path
) -> None:
    """Once the folder is opened, every write and removal goes through its descriptor: a
    link put in its place meanwhile (by someone who may write hidden_tests/) is neither
    written through nor pruned through."""
    load_problem(rope)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "thesis.table").write_text("someone's file")
    with generated.kept_in(kept(rope)):
        generated.uniform(5, 6, 8, -1.0, 1.0)  # read: the folder is open from here on
        kept(rope).rename(rope / "hidden_tests" / "moved")
        kept(rope).symlink_to(victim)
        generated.uniform(123, 4, 4, -1.0, 1.0)  # a new table: written
    assert sorted(p.name for p in victim.iterdir()) == ["thesis.table"]
    moved = rope / "hidden_tests" / "moved"
    assert len(list(moved.glob("*" + generated.SUFFIX))) == 2  # the two used, the rest pruned


def test_temporary_files_left_long_ago_are_removed(rope: Path) -> None:
    """A writer killed mid-write leaves its temporary file: removed an hour later."""
    load_problem(rope)
    old, new = kept(rope) / ".x.table.1a2b.tmp", kept(rope) / ".y.table.3c4d.tmp"
    for path in (old, new):
        path.write_bytes(b"half")
    os.utime(old, (1, 1))
    load_problem(rope)
    assert not old.exists() and new.exists()


@pytest.mark.slow
def test_check_generates_every_kept_table_again(rope: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A kept table changed in place, header and length kept (by anything that ran as the
    grader's user: a submission graded without walls), is read as it is; `grader check`
    starts from the seeds and keeps them anew."""
    load_problem(rope)
    for path in tables(rope):
        _other_numbers(path)
    # A folder named like a table, which cannot be unlinked, is no reason to keep the rest.
    (kept(rope) / ("0" * 32 + generated.SUFFIX)).mkdir()
    code, out, err = cli("check", "--problem", rope)
    assert code == 0, out + err
    assert_same_tables(rope)
