"""Hidden cases speak a closed vocabulary, and no submission can take the grader down.

Every attack in tests/attacks/secrecy.yaml runs through the real CLI under each backend; the
report it gets must hold nothing but the lines the vocabulary lists (grader/verdict/vocabulary.py),
whatever the submission wrote, raised, returned or timed.
"""

from __future__ import annotations

import csv
import functools
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.compare import Array
from grader.pipeline import slots
from grader.problem.casefile import Case
from grader.problem.cases import Checked, check_expected, load_problem
from grader.problem.exercise import load_exercise
from grader.problem.rules import load_rules
from grader.records import Outcome
from grader.sandbox.answers import EndState, Raw, RawKind, Stage
from grader.sandbox.limits import Limits
from grader.submission.source import Source, Static
from grader.verdict.judge import NAMED_MODULES, Judge
from grader.verdict.vocabulary import EXCEPTIONS, Block, Key, Vocabulary, bits
from tests.conftest import (
    ATTACK_VERDICTS,
    ATTACKS,
    ROOT,
    ROPE,
    SECRECY,
    SECRECY_LIMITS,
    Cli,
    assert_closed,
    assert_feedback_closed,
    assert_no_hidden_numbers,
    attack_file,
    backends,
    grader_process,
    load_vocabulary,
    vocabulary,
)

FUNCTION_NAME = load_exercise(ROOT).function

# Run on every supported Python, its slow tests included.
pytestmark = pytest.mark.security
FLAGS = ("--timeout", "1", "--budget", "4")


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("attack", sorted(SECRECY))
def test_attack_gets_only_the_vocabulary(attack: str, backend: str, cli: Cli) -> None:
    """The attack's report holds vocabulary alone, the grader survives, answers are kept."""
    expect = SECRECY[attack]
    path = ATTACKS / f"{attack}.py"
    timing = ("--timeout", "5") if attack == "crash_nested_folders" else FLAGS
    code, out, err = cli("submit", path, "--sandbox", backend, *timing, "--format", "json")
    assert code in (0, 1), err
    doc = json.loads(out)
    limits = SECRECY_LIMITS if timing == FLAGS else Limits(case_seconds=5.0)
    assert_closed(doc, path.name, limits)
    outcomes = {t["extra_data"]["outcome"] for t in doc["tests"]}
    assert outcomes <= set(expect["outcomes"]), outcomes
    if "score" in expect:
        assert doc["score"] == expect["score"]
    assert doc["extra_data"]["sandbox"].startswith(backend)
    assert "LEAK" not in out and "Leak" not in out
    assert_no_hidden_numbers(out)


# The secrecy attacks on the second exercise, whose inputs hold a table of floats sent as raw
# bytes: each attack's own behaviour (sleeps, crashes, forged frames, chosen exceptions) runs
# in a call of apply_rope. Those that try to carry data out, and the crash that breaks the
# channel, under each backend.
ROPE_ATTACKS = sorted(a for a in SECRECY if a.startswith(("leak_", "chooser_")))
ROPE_CALL = """

def apply_rope(x, positions):
    return sinusoidal_positions(positions, len(x[0]))
"""


@pytest.mark.slow  # the security suites run whole on every Python: the fast lane stays short
@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("attack", [*ROPE_ATTACKS, "crash_event_list"])
def test_attack_on_rope_gets_only_its_vocabulary(
    attack: str, backend: str, cli: Cli, tmp_path: Path
) -> None:
    """Through the second exercise, the attack's report holds rope's vocabulary alone, and
    the grader survives."""
    path = tmp_path / f"{attack}.py"
    path.write_text((ATTACKS / f"{attack}.py").read_text() + ROPE_CALL)
    args = ("--problem", str(ROPE), "--sandbox", backend, *FLAGS, "--format", "json")
    code, out, err = cli("submit", path, *args)
    assert code in (0, 1), err
    doc = json.loads(out)
    assert_closed(doc, path.name, SECRECY_LIMITS, root=ROPE)
    assert doc["extra_data"]["sandbox"].startswith(backend)
    assert "LEAK" not in out and "Leak" not in out


def may_hang(attack: str) -> bool:
    """Return whether an attack's cases may end by its time limits."""
    outcomes = SECRECY[attack]["outcomes"] if attack in SECRECY else ATTACK_VERDICTS[attack]
    return bool({"timeout", "not_run"} & set(outcomes))


# The fast lane's share of the test below: one attack of each way a run can end that may
# make the grader's process speak (a timeout, a broken frame, an output flood, warnings
# raised where the grader would print them, a full disk); the full suite and the security
# lane on every Python run all of them.
STDERR_FAST = {
    "ignore_signals",
    "crash_deep_json",
    "output_flood",
    "leak_grader_warnings",
    "w_fill_disk",
}


def test_the_fast_lanes_attacks_exist() -> None:
    """A renamed attack does not leave the fast lane's stderr check with fewer of them."""
    assert {p.stem for p in ATTACKS.glob("*.py")} >= STDERR_FAST


@pytest.mark.parametrize(
    "attack",
    [
        a if a in STDERR_FAST else pytest.param(a, marks=pytest.mark.slow)
        for a in sorted(p.stem for p in ATTACKS.glob("*.py"))
    ],
)
def test_submit_writes_nothing_on_stderr(attack: str, tmp_path: Path) -> None:
    """Whatever a submission does, the grader's own process says nothing on stderr, which
    Gradescope may show: a warning there would be words outside the vocabulary."""
    path = attack_file(tmp_path, attack, 0)
    # Short limits for the attacks that may hang: they need not hang long to show what stderr
    # gets. The others keep the default limits, which spare the reference's runs under
    # lowered ones.
    short = ("--timeout", "0.5", "--budget", "1") if may_hang(attack) else ()
    done = grader_process("submit", path, "--format", "json", *short)
    assert done.returncode in (0, 1), done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout)["tests"]


# Values a float64 table can hold at its edges: the largest, subnormals, infinities, NaN, and
# what a float16, float32 or integer answer turns into.
EDGES = (
    1e308,
    -1e308,
    float(np.finfo(np.float64).max),
    5e-324,
    -5e-324,
    float(np.finfo(np.float64).tiny),
    float("inf"),
    float("-inf"),
    float("nan"),
    0.0,
    -0.0,
    1.0,
    float(np.finfo(np.float16).max),
    float(np.finfo(np.float32).max),
    float(np.finfo(np.float32).smallest_subnormal),
    float(2**63),
)
VALUES = st.one_of(st.sampled_from(EDGES), st.floats(width=64))


@functools.cache
def _checked() -> Checked:
    return check_expected(load_problem(ROOT))


@st.composite
def extreme_answers(draw: st.DrawFn) -> tuple[Case, Array]:
    """Return a case and an answer the parent would take: a shape of up to four axes, filled
    with edge values, or the right table (or a multiple of it) spoiled with them."""
    checked = _checked()
    case = draw(st.sampled_from(checked.problem.hidden + checked.problem.examples))
    want = checked.expected[case.name]
    n, d = want.shape
    odd = [(d, n), (n * d,), (n - 1, d), (n, d, 1), (1, n, d, 1), (0, d), (n, 0), (1, 1), ()]
    shape = draw(st.sampled_from([(n, d)] * 3 + odd))
    values = np.array(draw(st.lists(VALUES, min_size=1, max_size=6)))
    with np.errstate(all="ignore"):  # the test's own arithmetic, not the grader's
        if shape != (n, d) or draw(st.booleans()):
            table = np.resize(values, shape)
        else:
            table = want * draw(st.sampled_from([1.0, -1.0, *values.tolist()]))
            start, step = draw(st.integers(0, n * d - 1)), draw(st.integers(1, 2 * d))
            table.flat[start::step] = np.resize(values, table.flat[start::step].size)
    table.setflags(write=False)  # as the parent reads an answer: a read-only view
    return case, table


@settings(max_examples=150, deadline=None)
@given(extreme_answers(), st.sampled_from(["float64", "float32", "float16", "int64", "bool"]))
def test_extreme_tables_are_judged_in_silence(answer: tuple[Case, Array], dtype: str) -> None:
    """Judging a table of 1e308, subnormals, infinities and NaN, in any shape, raises no
    warning (numpy's overflow included) and no exception, and a hidden case still speaks
    the vocabulary."""
    case, table = answer
    src = Source(name="sub.py", text="")
    said = slots(SECRECY_LIMITS, src.name, load_exercise(ROOT))
    judge = Judge(ROOT, load_rules(ROOT), said)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = judge(
            case,
            Raw(RawKind.OK, 0.0, table, dtype),
            _checked().expected[case.name],
            src,
            static=Static(None),
        )
    assert result.outcome in (Outcome.PASSED, Outcome.WRONG_ANSWER, Outcome.WRONG_SHAPE)
    if not case.visible:
        hint = result.diagnosis.code if result.diagnosis else None
        assert Block(result.outcome, result.message, hint) in vocabulary(src.name)


def test_vocabulary_is_small_and_stated() -> None:
    """A hidden case carries at most 8 bits, and SECURITY.md states the budget it computes."""
    count = len(vocabulary("submission.py", Limits()))
    assert bits(count) <= 8.0
    security = (ROOT / "SECURITY.md").read_text()
    assert f"{count} blocks" in security and f"{bits(count):.2f} bits" in security
    # A file that does not load says one sentence on every case instead: counted apart.
    words = Vocabulary(load_rules(ROOT), slots(Limits(), "submission.py", load_exercise(ROOT)))
    modules = [f"missing_{k}" for k in range(NAMED_MODULES)]
    loads = len(set(words.load_blocks(modules)))
    assert loads == len(list(words.load_blocks(modules))) and loads > len(EXCEPTIONS)
    assert f"| {loads} sentences | {bits(loads):.2f} bits |" in security


def test_a_sentence_is_named_by_its_key_and_worded_by_the_key_s_word() -> None:
    """The vocabulary's sentences are named (Key); an exercise's SENTENCES words one by the
    key's word, as docs/new-exercise.md writes it."""
    root = ROOT / "tests" / "exercises" / "running_total"
    rules = load_rules(root)
    words = Vocabulary(rules, slots(Limits(), "submission.py", rules.exercise))
    assert all(isinstance(key, Key) for key in words.sentences)
    worded = rules.sentences["shape_length"]
    assert words.sentence(Key.SHAPE_LENGTH) == worded == words.sentence("shape_length")
    assert Key.SHAPE_FLAT not in words.sentences  # a list's answer has no table's shapes


@pytest.mark.parametrize("root", [ROOT, ROPE], ids=["sinusoidal", "rope"])
def test_each_exercise_states_its_budget(root: Path) -> None:
    """Each exercise's vocabulary (its wording, its hints) is counted, and SECURITY.md's
    table of exercises states it: blocks, bits per case, bits per submission of ten."""
    rules = load_rules(root)
    words = Vocabulary(rules, slots(Limits(), "submission.py", rules.exercise))
    count = len(set(words.hidden_blocks()))
    per_case = bits(count)
    assert per_case <= 8.0
    row = (
        f"| `{rules.exercise.function}` | {count} | {per_case:.2f} | "
        f"at most {10 * per_case + bits(22) + 1:.1f} bits |"
    )
    assert row in (ROOT / "SECURITY.md").read_text(), row


def test_vocabulary_slots_hold_no_numbers_of_the_submission() -> None:
    """Sentences change with the parent's limits and the file's name, and with nothing else."""
    one = vocabulary("a.py", Limits())
    two = vocabulary("a.py", Limits(case_seconds=7.0))
    assert len(one) == len(two) and one != two
    for block in one:
        numbers = set(re.findall(r"\d+", block.sentence))
        assert numbers <= {"2", "10", "3", "60", "1024", "16"}, block.sentence


def test_text_report_speaks_the_vocabulary(cli: Cli) -> None:
    """The terminal rendering of a hostile run holds no number, name or time of its own."""
    code, out, _ = cli("submit", ATTACKS / "chooser_a.py", *FLAGS)
    assert code == 1
    assert " ms)" not in out and "line" not in out and "Leak" not in out
    assert_no_hidden_numbers(out)


def test_a_missing_module_is_named_on_submit_from_the_file_s_own_text(
    cli: Cli, tmp_path: Path
) -> None:
    """A module the file imports that the child cannot find is named on submit, among the
    first few such of its text (one in a helper, one tried first, then the one missing at
    import): the parent picked them before any run. The line is left to `grader run`."""
    path = tmp_path / "uses_torch.py"
    path.write_text(
        "import numpy\nimport yaml\n\ndef plot():\n    import matplotlib_not_here\n\n"
        "try:\n    import scipy_not_here\nexcept ImportError:\n    pass\n"
        "import torch_not_here\n\ndef sinusoidal_positions(p, d):\n    return None\n"
    )
    code, out, _ = cli("submit", path)
    assert code == 1
    said = "importing uses_torch.py raised ModuleNotFoundError: no module named 'torch_not_here'"
    assert said in out and "line" not in out.split("\n\n", 1)[1]
    code, out, _ = cli("run", path)
    assert "at line 11 of uses_torch.py" in out


def test_a_name_missing_from_a_module_is_no_missing_module(cli: Cli, tmp_path: Path) -> None:
    """`from yaml import nothing` raises ImportError of a module that is there: not said to be
    missing, on submit or on the examples."""
    path = tmp_path / "from_yaml.py"
    path.write_text("from numpy import no_such_name\n\ndef sinusoidal_positions(p, d):\n")
    path.write_text(path.read_text() + "    return None\n")
    for command in ("submit", "run"):
        code, out, _ = cli(command, path)
        assert code == 1 and "raised ImportError" in out and "no module named" not in out, out


# A file whose import fails where its run chooses: at a line, with an exception class of its
# own, or on a module other than the first it imports that the grader lacks. Each choice
# could say what the import read (a neighbour's trace in the machine's caches).
CHOOSING_LOADS = {
    "line": "import os\n" + "".join(f"if os.getpid() % 97 == {k}: 1 / 0\n" for k in range(97)),
    "own_class": "class Chosen0(Exception): pass\nclass Chosen1(Exception): pass\nraise Chosen1\n",
    "module": "".join(
        f"try:\n    import gone_{k}\nexcept ImportError:\n    pass\n" for k in range(5)
    )
    + "import gone_5\n",
    "memory": "x = bytearray(4 << 30)\n",
}


@pytest.mark.parametrize("name", sorted(CHOOSING_LOADS))
def test_a_file_that_does_not_load_speaks_the_vocabulary(
    cli: Cli, tmp_path: Path, name: str
) -> None:
    """On hidden cases, a load failure is one sentence of the vocabulary's LOAD list on
    every case, in the report and in a batch's feedback file: no line, no name of the file's
    own, no module but the parent's pick."""
    text = f"def {FUNCTION_NAME}(p, d):\n    return None\n" + CHOOSING_LOADS[name]
    path = tmp_path / "chooser.py"
    path.write_text(text)
    code, out, _ = cli("submit", path, *FLAGS, "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert_closed(doc, path.name)
    loads = {b.sentence for b in load_vocabulary(path.name)}
    assert {t["output"] for t in doc["tests"]} <= loads
    assert "gone_" not in out and "Chosen" not in out


@pytest.mark.parametrize(
    ("text", "outcome", "words"),
    [
        ("def sinusoidal_positions(p, d:\n    pass\n", "syntax_error", "syntax error at line 1"),
        ("def sinusoidal_position(p, d):\n    pass\n", "missing_function", "a typo?"),
        ("def sinusoidal_positions(p):\n    pass\n", "bad_signature", "(yours is "),
        ("x = 1\n" + "x = a" + ".b" * 300000 + "\n", "syntax_error", "nested too deeply"),
        ("x = 1\0\n", "syntax_error", "null bytes"),
    ],
)
def test_parent_decides_what_needs_no_run(
    cli: Cli, tmp_path: Path, text: str, outcome: str, words: str
) -> None:
    """Syntax, the function's name and its signature are the parent's verdicts, with detail."""
    path = tmp_path / "sub.py"
    path.write_text(text)
    code, out, err = cli("submit", path, "--format", "json")
    assert code == 1, err
    doc = json.loads(out)
    assert {t["extra_data"]["outcome"] for t in doc["tests"]} == {outcome}
    assert words in doc["tests"][0]["output"]


def test_a_forged_function_check_cannot_pass_for_a_load_error(cli: Cli) -> None:
    """The child's own "missing function" frame after the inputs is a broken channel, no more."""
    code, out, _ = cli("submit", ATTACKS / "leak_forged_load_error.py", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and {t["extra_data"]["outcome"] for t in doc["tests"]} == {"crash"}


@pytest.mark.slow
def test_budget_stops_a_hanging_submission(cli: Cli, tmp_path: Path) -> None:
    """Past the whole-submission budget, the cases left are reported as not run, and why."""
    path = tmp_path / "hang.py"
    path.write_text(f"import time\ndef {FUNCTION_NAME}(p, d):\n    time.sleep(60)\n")
    code, out, _ = cli("submit", path, "--timeout", "1", "--budget", "2.5", "--format", "json")
    outcomes = [t["extra_data"]["outcome"] for t in json.loads(out)["tests"]]
    assert code == 1 and outcomes[:2] == ["timeout", "timeout"] and outcomes[-1] == "not_run"
    assert set(outcomes) == {"timeout", "not_run"} and outcomes.count("timeout") <= 4
    tests = json.loads(out)["tests"]
    assert "time budget of 2.5 s" in tests[-1]["output"]
    # A case the budget cuts short (if one was running when it ran out, rather than a new
    # child starting) says which limit ran out; the others, their own.
    timed_out = [t["output"] for t in tests if t["extra_data"]["outcome"] == "timeout"]
    own, cut = "took longer than the time limit of 1 s", BUDGET_CUT.format(budget="2.5 s")
    assert timed_out[0] == own and set(timed_out[:-1]) == {own} and timed_out[-1] in (own, cut)


BUDGET_CUT = "stopped when the whole submission's time budget of {budget} ran out"


def test_a_case_the_budget_cuts_short_says_so() -> None:
    """A case stopped by the whole submission's budget, its own limit not reached, names the
    budget; one past its own limit, its own limit."""
    src = Source(name="sub.py", text="")
    judge = Judge(ROOT, load_rules(ROOT), slots(SECRECY_LIMITS, src.name, load_exercise(ROOT)))
    case = load_problem(ROOT).hidden[0]
    want = _checked().expected[case.name]
    for ended, said in (
        (EndState.TIMEOUT, "took longer than the time limit of 1 s"),
        (EndState.BUDGET, BUDGET_CUT.format(budget="4 s")),
    ):
        raw = Raw(RawKind.TIMEOUT, ended=ended, stage=Stage.CALL)
        result = judge(case, raw, want, src, static=Static(None))
        assert (result.outcome, result.message) == (Outcome.TIMEOUT, said)


@pytest.mark.parametrize("backend", backends())
def test_batch_survives_the_attacks(backend: str, cli: Cli, tmp_path: Path) -> None:
    """In a batch, every attack is one row, and summary.csv lists them all."""
    folder = tmp_path / "class"
    folder.mkdir()
    for attack in SECRECY:
        (folder / f"{attack}.py").write_bytes((ATTACKS / f"{attack}.py").read_bytes())
    # Time enough for the folders of crash_nested_folders on a busy machine.
    limits = Limits(case_seconds=5.0, budget_seconds=6.0)
    code, _, err = cli(
        "batch",
        folder,
        "--out",
        tmp_path / "out",
        "--sandbox",
        backend,
        "--no-progress",
        *("--timeout", "5", "--budget", "6"),
    )
    assert code == 0, err
    with (tmp_path / "out" / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(SECRECY)
    for attack in rows:  # each learner's feedback files: the same vocabulary, nothing more
        assert_feedback_closed(tmp_path / "out", attack, f"{attack}.py", limits)
        for kind in ("md", "html"):
            assert_no_hidden_numbers(
                (tmp_path / "out" / "feedback" / f"{attack}.{kind}").read_text()
            )
    for attack, row in rows.items():
        assert row["status"] == "graded"
        doc = json.loads((tmp_path / "out" / "results" / f"{attack}.json").read_text())
        assert_closed(doc, f"{attack}.py", limits, batch=True)
        del doc["extra_data"]["batch"]  # digests: hex digits, not the submission's
        assert_no_hidden_numbers(json.dumps(doc))
        if "score" in SECRECY[attack]:
            assert float(row["score"]) == SECRECY[attack]["score"], attack


def test_a_grader_failure_on_one_submission_is_its_row(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected failure while grading one learner costs that learner's row, no more."""
    import grader.batch.grading

    real = grader.batch.grading.grade_in_with_examples

    def flaky(session: Any, **kwargs: Any) -> Any:
        if kwargs["src"].name == "b.py":
            raise RuntimeError("boom")
        return real(session, **kwargs)

    monkeypatch.setattr(grader.batch.grading, "grade_in_with_examples", flaky)
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("a.py", "b.py"):
        (folder / name).write_bytes((ROOT / "solutions" / "reference.py").read_bytes())
    code, _, err = cli("batch", folder, "--out", tmp_path / "out", "--no-progress")
    # The exit table: a row lost to a bug of the grader is 3, said with the count, once
    # everything else is written.
    assert code == 3, err
    assert "grader: 1 submissions not graded because of a bug of the grader" in err
    with (tmp_path / "out" / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert rows["a"]["status"] == "graded" and rows["a"]["score"] == "10"
    assert rows["b"]["status"] == "not_graded"
