"""Shards: a stable split of the class, --shard auto, and merges equal to one unsharded batch."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from grader.batch.classreport import build
from grader.batch.manifest import Shard, holds, share_of
from grader.batch.shard import shard_from_env
from grader.cli import main
from grader.errors import GraderError
from grader.records import Outcome
from tests.conftest import ATTACKS, CORPUS, ROOT, SAMPLES, SLOW_ON_ONE, Cli, comparable

# Every test here grades or merges whole classes: the full suite, not the fast lane.
pytestmark = pytest.mark.slow

# Attacks that need no loopback port nor the repository's path, and fail fast.
QUICK_ATTACKS = ("monkeypatch_numpy", "lying_array", "fake_output", "exit_at_import", "big_file")
TIMEOUT = "1"
PURE_PYTHON = ("lists", "integer_division")


# Samples that fill the address space: where it runs out (the import, a case, numpy itself)
# depends on how it filled, so two gradings may word the same verdict differently.
FILLS_MEMORY = frozenset({"fail_memory_at_import", "fail_memory_kept_by_call"})


def make_class(root: Path) -> Path:
    """Write a class with every outcome kind and both ways of not being graded.

    The test compares separate gradings of it, so it holds no pure-Python loop: on a busy
    machine one of those may meet the time limit in one grading and not in the other.
    """
    root.mkdir(parents=True)
    for i in range(4):
        for path in sorted((CORPUS / "correct").glob("*.py")):
            if path.stem not in PURE_PYTHON:
                shutil.copy(path, root / f"c{i}_{path.stem}.py")
    for i in range(2):
        for path in sorted((CORPUS / "wrong").glob("*.py")):
            if path.stem not in PURE_PYTHON:
                shutil.copy(path, root / f"w{i}_{path.stem}.py")
    for path in sorted(SAMPLES.glob("*.py")):
        if path.stem in FILLS_MEMORY:
            continue
        # fail_infinite_loop hangs on every case: the budget below ends it, as not_run.
        shutil.copy(path, root / f"s_{path.stem}.py")
    for name in QUICK_ATTACKS:
        shutil.copy(ATTACKS / f"{name}.py", root / f"a_{name}.py")
    (root / "slow_on_one.py").write_text(SLOW_ON_ONE)
    (root / "n_empty").mkdir()
    (root / "n_two").mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", root / "n_two" / "a.py")
    shutil.copy(CORPUS / "correct" / "vectorised.py", root / "n_two" / "b.py")
    return root


# A hanging learner spends it in a few cases; everyone else is far inside it.
BUDGET = "3"


def grade(klass: Path, out: Path, *extra: str) -> None:
    """Run `grader batch` on the class into ``out``; fail the test if it does not exit 0."""
    code = main(
        ["batch", str(klass), "--out", str(out), "--timeout", TIMEOUT, "--budget", BUDGET, *extra]
    )
    assert code == 0


def rows(out: Path) -> list[dict[str, str]]:
    """Return summary.csv's rows without the one column that depends on timing."""
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(handle)]


def documents(out: Path) -> dict[str, Any]:
    """Return every results file's verdicts, keyed by file name."""
    return {
        p.name: comparable(json.loads(p.read_text())) for p in sorted((out / "results").iterdir())
    }


def figures(out: Path) -> Any:
    """Return what the class report shows, except the grading's durations."""
    r = build(out)
    return (r.counts(), r.cases, r.mistakes, r.bars, r.examples_only, r.passed_all, r.not_graded)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The class, its unsharded batch, and its shards for N = 2 and 3, graded once."""
    tmp = tmp_path_factory.mktemp("shards")
    klass = make_class(tmp / "class")
    found = {"class": klass, "whole": tmp / "whole"}
    grade(klass, found["whole"])
    for n in (2, 3):
        for k in range(1, n + 1):
            found[f"{k}/{n}"] = tmp / f"shard-{k}-of-{n}"
            grade(klass, found[f"{k}/{n}"], "--shard", f"{k}/{n}")
    return found


def test_class_has_every_outcome(graded: dict[str, Path]) -> None:
    """The test class meets every outcome kind, and has learners not graded at all."""
    table = rows(graded["whole"])
    assert len(table) >= 60
    seen = {v for r in table for k, v in r.items() if k not in ("submission", "score", "status")}
    assert {o.value for o in Outcome} <= seen
    assert sum(r["status"] == "not_graded" for r in table) == 2


@pytest.mark.parametrize("n", [1, 2, 3])
def test_merge_equals_one_batch(graded: dict[str, Path], tmp_path: Path, cli: Cli, n: int) -> None:
    """Merging the N shard outputs gives the rows, results and report of one unsharded batch."""
    # With N = 1 the single share is the whole class: the unsharded output is that shard.
    shards = [graded["whole"]] if n == 1 else [graded[f"{k}/{n}"] for k in range(1, n + 1)]
    for shard in shards[1:]:
        assert 0 < len(rows(shard)) < len(rows(graded["whole"]))
    merged = tmp_path / "all"
    code, out, err = cli("merge", *reversed(shards), "--out", merged)
    assert code == 0, err
    assert f"merged {n} shards into {merged}" in out
    assert rows(merged) == rows(graded["whole"])
    assert documents(merged) == documents(graded["whole"])
    assert figures(merged) == figures(graded["whole"])
    feedback = {p.name: p.read_bytes() for p in (graded["whole"] / "feedback").iterdir()}
    assert {p.name: p.read_bytes() for p in (merged / "feedback").iterdir()} == feedback
    assert (merged / "report.html").is_file() and (merged / "report.md").is_file()
    manifest = json.loads((merged / "batch.json").read_text())
    assert manifest["shard"] == "1/1" and len(manifest["runs"]) == n
    assert manifest["limits"]["case_seconds"] == float(TIMEOUT)


def test_shards_split_by_hash(graded: dict[str, Path]) -> None:
    """Each shard grades exactly the ids that hash to it, and says so in batch.json."""
    everyone = {r["submission"] for r in rows(graded["whole"])}
    for n in (2, 3):
        for k in range(1, n + 1):
            out = graded[f"{k}/{n}"]
            ids = {r["submission"] for r in rows(out)}
            assert ids == {i for i in everyone if share_of(i, n) == k}
            assert {p.stem for p in (out / "results").glob("*.json")} == ids
            manifest = json.loads((out / "batch.json").read_text())
            assert manifest["shard"] == f"{k}/{n}" and set(manifest["ids"]) == ids
            assert manifest["class"]["size"] == len(everyone)


def test_share_is_stable() -> None:
    """The share depends on the id alone, in every version: machines must agree on it."""
    assert [share_of(name, 4) for name in ("ada", "bob", "cyd", "dan")] == [3, 3, 2, 2]
    ids = [f"learner{i:03d}" for i in range(300)]
    for n in (1, 2, 5):
        for i in ids:
            assert sum(holds(Shard(k, n), i) for k in range(1, n + 1)) == 1
    assert all(40 <= sum(share_of(i, 5) == k for i in ids) <= 80 for k in range(1, 6))


def _copy(src: Path, dest: Path, **changes: Any) -> Path:
    """Copy an output folder, changing fields of its batch.json."""
    shutil.copytree(src, dest)
    path = dest / "batch.json"
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))
    return dest


def _refused(cli: Cli, *args: Any) -> str:
    code, out, err = cli("merge", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("grader: error: "), err
    return err


def test_merge_refuses_missing_or_repeated_shares(
    graded: dict[str, Path], tmp_path: Path, cli: Cli
) -> None:
    """A share left out, given twice, or from another split: one clear line, exit 2."""
    one, two = graded["1/3"], graded["2/3"]
    assert "shard 3/3 missing" in _refused(cli, one, two, "--out", tmp_path / "a")
    err = _refused(cli, one, two, graded["3/3"], one, "--out", tmp_path / "a")
    assert "shard 1/3 given twice" in err
    err = _refused(cli, graded["1/2"], two, graded["3/3"], "--out", tmp_path / "a")
    assert "different splits" in err and "1/2" in err and "2/3" in err
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"suite": "0" * 64}, "another suite of hidden cases"),
        ({"tolerance": "|got - want| <= 1e-05 + 1e-06 * |want|"}, "another tolerance"),
        ({"class": {"size": 70, "digest": "0" * 64}}, "another class"),
        ({"layout": "canvas"}, "read the class as canvas"),
    ],
)
def test_merge_refuses_other_gradings(
    graded: dict[str, Path], tmp_path: Path, cli: Cli, change: dict[str, Any], words: str
) -> None:
    """Shards graded on another suite, with another tolerance, or of another class: refused."""
    odd = _copy(graded["2/2"], tmp_path / "odd", **change)
    assert words in _refused(cli, graded["1/2"], odd, "--out", tmp_path / "all")


def test_merge_refuses_other_limits(graded: dict[str, Path], tmp_path: Path, cli: Cli) -> None:
    """A shard graded with another time limit is refused, naming the limit."""
    limits = json.loads((graded["2/2"] / "batch.json").read_text())["limits"]
    odd = _copy(graded["2/2"], tmp_path / "odd", limits={**limits, "case_seconds": 3.0})
    err = _refused(cli, graded["1/2"], odd, "--out", tmp_path / "all")
    assert "other limits" in err and "case_seconds 3.0 vs 1.0" in err


def test_merge_refuses_incomplete_outputs(
    graded: dict[str, Path], tmp_path: Path, cli: Cli
) -> None:
    """A shard without its manifest, or missing a results file, is refused."""
    bare = tmp_path / "bare"
    shutil.copytree(graded["2/2"], bare)
    (bare / "batch.json").unlink()
    assert "no batch.json" in _refused(cli, graded["1/2"], bare, "--out", tmp_path / "x")
    holed = tmp_path / "holed"
    shutil.copytree(graded["2/2"], holed)
    victim = sorted((holed / "results").iterdir())[0]
    victim.unlink()
    err = _refused(cli, graded["1/2"], holed, "--out", tmp_path / "x")
    assert f"results/{victim.name} is missing" in err


def test_merge_keeps_other_folders_whole(graded: dict[str, Path], cli: Cli) -> None:
    """Merging into a shard, or into a folder holding other files, is refused."""
    err = _refused(cli, graded["1/2"], graded["2/2"], "--out", graded["2/2"])
    assert "is one of the shards" in err
    err = _refused(cli, graded["1/2"], graded["2/2"], "--out", graded["class"])
    assert "holds other files" in err


def test_merge_again_replaces_results(graded: dict[str, Path], tmp_path: Path, cli: Cli) -> None:
    """Merging twice into one folder leaves exactly the second merge's results."""
    merged = tmp_path / "all"
    shutil.copytree(graded["whole"], merged)
    (merged / "results" / "stale.json").write_text("{}")
    code, _, err = cli("merge", graded["1/2"], graded["2/2"], "--out", merged)
    assert code == 0, err
    assert not (merged / "results" / "stale.json").exists()
    assert documents(merged) == documents(graded["whole"])


@pytest.mark.parametrize(
    ("env", "shard"),
    [
        ({"JOB_COMPLETION_INDEX": "0", "GRADER_SHARDS": "4"}, Shard(1, 4)),
        ({"JOB_COMPLETION_INDEX": "3", "GRADER_SHARDS": "4"}, Shard(4, 4)),
        (
            {
                "SLURM_ARRAY_TASK_ID": "1",
                "SLURM_ARRAY_TASK_MIN": "1",
                "SLURM_ARRAY_TASK_COUNT": "8",
            },
            Shard(1, 8),
        ),
        (
            {
                "SLURM_ARRAY_TASK_ID": "7",
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_COUNT": "8",
            },
            Shard(8, 8),
        ),
        (
            {
                "SLURM_ARRAY_TASK_ID": "5",
                "SLURM_ARRAY_TASK_MIN": "1",
                "SLURM_ARRAY_TASK_STEP": "2",
                "SLURM_ARRAY_TASK_COUNT": "3",
            },
            Shard(3, 3),
        ),
    ],
)
def test_shard_auto_reads_the_job_runner(env: dict[str, str], shard: Shard) -> None:
    """--shard auto takes the share from a Kubernetes Indexed Job's or a Slurm array's variables."""
    assert shard_from_env(env) == shard


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({}, "neither JOB_COMPLETION_INDEX"),
        ({"JOB_COMPLETION_INDEX": "0"}, "GRADER_SHARDS is not"),
        ({"JOB_COMPLETION_INDEX": "x", "GRADER_SHARDS": "2"}, "invalid JOB_COMPLETION_INDEX 'x'"),
        ({"JOB_COMPLETION_INDEX": "\u0661", "GRADER_SHARDS": "2"}, "invalid JOB_COMPLETION_INDEX"),
        ({"JOB_COMPLETION_INDEX": "1_0", "GRADER_SHARDS": "20"}, "invalid JOB_COMPLETION_INDEX"),
        ({"JOB_COMPLETION_INDEX": " 1", "GRADER_SHARDS": "2"}, "invalid JOB_COMPLETION_INDEX"),
        ({"JOB_COMPLETION_INDEX": "0", "GRADER_SHARDS": "9" * 30}, "invalid GRADER_SHARDS"),
        ({"JOB_COMPLETION_INDEX": "2", "GRADER_SHARDS": "2"}, "share 3 from JOB_COMPLETION_INDEX"),
        ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1"}, "SLURM_ARRAY_TASK_COUNT"),
        (
            {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "x"},
            "invalid SLURM_ARRAY_TASK_STEP 'x'",
        ),
        (
            {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "0"},
            "invalid SLURM_ARRAY_TASK_STEP 0",
        ),
    ],
)
def test_shard_auto_names_what_is_wrong(env: dict[str, str], words: str) -> None:
    """A missing or bad variable is named, with where it came from."""
    with pytest.raises(GraderError, match=words):
        shard_from_env(env)


def test_shard_auto_in_batch(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`batch --shard auto` in a Kubernetes pod grades its share, and resumes; bad K/N: exit 2."""
    klass = tmp_path / "class"
    klass.mkdir()
    names = ["ada", "bob", "cyd", "dan"]
    for name in names:
        shutil.copy(CORPUS / "correct" / "vectorised.py", klass / f"{name}.py")
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "1")
    monkeypatch.setenv("GRADER_SHARDS", "4")
    code, out, _ = cli("batch", klass, "--out", tmp_path / "out", "--shard", "auto")
    assert code == 0 and out.splitlines()[1].startswith("shard 2/4: 2 submissions")
    assert {r["submission"] for r in rows(tmp_path / "out")} == {"cyd", "dan"}
    code, out, _ = cli("batch", klass, "--out", tmp_path / "out", "--shard", "auto")
    assert code == 0 and "0 graded, 2 unchanged since the last run" in out
    for bad in ("0/2", "3/2", "2", "a/b"):
        with pytest.raises(SystemExit) as exc:
            main(["batch", str(klass), "--out", str(tmp_path / "x"), "--shard", bad])
        assert exc.value.code == 2


DOCS = ROOT / "docs" / "shards"


def test_kubernetes_job_covers_every_share() -> None:
    """The Indexed Job's pods, with the variables it gives them, take each share once."""
    documents = yaml.safe_load_all((DOCS / "kubernetes-job.yaml").read_text())
    job = next(d for d in documents if d["kind"] == "Job")  # beside its volumes' claims
    spec = job["spec"]
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert spec["completionMode"] == "Indexed" and "--shard auto" in container["command"][-1]
    # The shell hands over to the grader, so that the pod's SIGTERM reaches the grader.
    assert container["command"][-1].startswith("exec grader ")
    shards = {
        shard_from_env({**env, "JOB_COMPLETION_INDEX": str(i)}) for i in range(spec["completions"])
    }
    assert shards == {Shard(k, spec["completions"]) for k in range(1, spec["completions"] + 1)}


def test_slurm_array_covers_every_share() -> None:
    """The Slurm array's tasks, with the variables Slurm sets, take each share once."""
    text = (DOCS / "slurm-array.sh").read_text()
    found = re.search(r"#SBATCH --array=(\d+)-(\d+)\n", text)
    assert found is not None
    low, high = int(found[1]), int(found[2])
    assert "--shard auto" in text
    count = str(high - low + 1)
    shards = {
        shard_from_env(
            {
                "SLURM_ARRAY_TASK_ID": str(task),
                "SLURM_ARRAY_TASK_MIN": str(low),
                "SLURM_ARRAY_TASK_COUNT": count,
            }
        )
        for task in range(low, high + 1)
    }
    assert shards == {Shard(k, int(count)) for k in range(1, int(count) + 1)}


def test_merge_refuses_an_id_outside_results(
    graded: dict[str, Path], tmp_path: Path, cli: Cli
) -> None:
    """An edited manifest whose id would name a file outside results/ is refused."""
    doc = json.loads((graded["2/2"] / "batch.json").read_text())
    odd = _copy(graded["2/2"], tmp_path / "odd", ids=[*doc["ids"], "../../secret"])
    assert "cannot name a results file" in _refused(
        cli, graded["1/2"], odd, "--out", tmp_path / "a"
    )


def test_a_bad_job_runner_variable_is_one_line(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`batch --shard auto` under a Slurm array with a malformed step: exit 2, one line."""
    shutil.copy(CORPUS / "reference.py", tmp_path / "ada.py")
    for name, value in (("ID", "1"), ("MIN", "1"), ("COUNT", "2"), ("STEP", "x")):
        monkeypatch.setenv(f"SLURM_ARRAY_TASK_{name}", value)
    code, out, err = cli("batch", tmp_path / "ada.py", "--out", tmp_path / "o", "--shard", "auto")
    assert (code, out) == (2, "")
    assert (
        err
        == "grader: error: --shard auto: invalid SLURM_ARRAY_TASK_STEP 'x', not a whole number\n"
    )
