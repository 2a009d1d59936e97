"""Diagnosis by measurement: what is read back is only a proposal, confirmed by the staff
module's regenerated table; numbers read stay on visible cases; hidden cases keep their
fixed sentences."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.pipeline import slots
from grader.problem.cases import Checked, check_problem
from grader.problem.rules import import_module, load_rules
from grader.problem.values import arguments
from grader.records import Outcome
from grader.sandbox.answers import Raw, RawKind
from grader.sandbox.limits import Limits
from grader.submission.source import Source, Static
from grader.verdict.judge import Judge
from grader.verdict.known import known_source
from tests.conftest import ROOT, ROPE, Cli, vocabulary

PORTS = ROOT / "tests" / "exercises" / "rope" / "ports"
# The only numbers a hint sentence may hold: the exercises' own constants and indices,
# written into the sentence, never read from a table or an input.
FIXED_NUMBERS = frozenset({"0", "1", "2", "3", "4", "5", "16", "32", "64", "100", "10000"})


@functools.cache
def _checked(root: Path) -> Checked:
    return check_problem(root, examples=True)


def _answers(port: str) -> list[tuple[Any, Any, Any]]:
    """Return (case, answer, expected) for a port of tests/exercises/rope/ports on every case."""
    checked = _checked(ROPE)
    namespace: dict[str, Any] = {}
    path = PORTS / f"{port}.py"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    out = []
    for case in checked.problem.examples + checked.problem.hidden:
        with np.errstate(all="ignore"):
            try:
                got = np.asarray(
                    namespace["apply_rope"](*arguments(checked.problem.rules.inputs, case.inputs))
                )
            except (IndexError, ZeroDivisionError):
                continue
        out.append((case, got.astype(np.float64), checked.expected[case.name]))
    return out


def _judge(root: Path) -> Judge:
    rules = load_rules(root)
    return Judge(root, rules, slots(Limits(), "sub.py", rules.exercise))


@pytest.mark.security
@pytest.mark.parametrize("root", [ROOT, ROPE], ids=["sinusoidal", "rope"])
def test_hint_sentences_hold_no_number_read(root: Path) -> None:
    """Every hint of the catalogue, combinations included, holds only fixed numbers."""
    for code, text in load_rules(root).hints.items():
        assert set(re.findall(r"\d+", text)) <= FIXED_NUMBERS, code


@pytest.mark.security
@pytest.mark.parametrize("port", ["llama3_theta", "qwen2_halves", "neox_partial_rotary"])
def test_numbers_read_stay_on_visible_cases(port: str) -> None:
    """A visible example's hint carries the numbers read back; a hidden case's carries its
    fixed sentence alone, a block of the vocabulary, with nothing measured."""
    judge = _judge(ROPE)
    src = Source(name="sub.py", text="")
    named = 0
    for case, got, want in _answers(port):
        result = judge(case, Raw(RawKind.OK, 0.0, got, "float64"), want, src, static=Static(None))
        if result.diagnosis is None:
            continue
        named += 1
        if case.visible:
            assert re.search(r"\d", result.diagnosis.measured), result.diagnosis
        else:
            assert result.diagnosis.measured == ""
            block = (result.outcome, result.message, result.diagnosis.code)
            assert block in {tuple(b) for b in vocabulary("sub.py", Limits(), ROPE)}
    assert named >= 5


def test_the_visible_example_names_llama3s_base() -> None:
    """The d = 4 example already shows pair 1 turning as base 500000 would."""
    judge = _judge(ROPE)
    case, got, want = next(a for a in _answers("llama3_theta") if a[0].name == "two_pairs_d4")
    result = judge(
        case, Raw(RawKind.OK, 0.0, got, "float64"), want, Source("sub.py", ""), static=Static(None)
    )
    assert result.outcome is Outcome.WRONG_ANSWER and result.diagnosis is not None
    assert result.diagnosis.code == "wrong_base"
    assert "base 500000" in result.diagnosis.measured


@st.composite
def crafted(draw: st.DrawFn) -> tuple[Any, Any, Any, Any]:
    """Return (x, positions, answer, right answer): rotations at drawn rates and layouts,
    columns left unchanged, extreme entries and spoiled values."""
    staff = import_module(ROPE, "staff")
    n = draw(st.integers(1, 12))
    d = 2 * draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, d)) * draw(st.sampled_from([1e-6, 1.0, 1000.0]))
    p = np.sort(rng.choice(draw(st.sampled_from([8, 3000, 10**6])), n)).astype(np.float64)
    right = staff.right(x, p)
    turned = 2 * draw(st.integers(1, d // 2))
    rates = draw(st.sampled_from(["right", "random", "equal", "zero"]))
    half = turned // 2
    chosen = {
        "right": np.power(10000.0, -2.0 * np.arange(half) / turned),
        "random": rng.uniform(-2, 2, half),
        "equal": np.full(half, draw(st.floats(-3, 3))),
        "zero": np.zeros(half),
    }[rates]
    layout = draw(st.sampled_from(["adjacent", "halves"]))
    proposal = staff.Proposal(("crafted",), layout, turned, chosen, "")
    got = staff.regenerate(x, p, proposal)
    if draw(st.booleans()):
        got.flat[rng.integers(0, got.size)] = draw(
            st.sampled_from([0.0, 1e308, -1e-300, 5e-324, 1.0])
        )
    return x, p, got, right


@settings(max_examples=120, deadline=None)
@given(crafted())
def test_crafted_tables_get_no_exception_and_no_hint_without_a_match(
    table: tuple[Any, Any, Any, Any],
) -> None:
    """Diagnosing a crafted table raises nothing, and every hint it gives by measurement
    comes with a regenerated table that matches the answer."""
    x, p, got, want = table
    rules = load_rules(ROPE)
    staff = import_module(ROPE, "staff")
    matching = import_module(ROPE, "matching")
    inputs = {"x": x, "positions": tuple(int(v) for v in p)}
    if np.array_equal(got, want):
        return
    with np.errstate(all="ignore"):
        assert rules.diagnose is not None
        found = rules.diagnose(inputs, got, want, staff)
    if not isinstance(found, tuple):
        return
    code = found[0]
    assert code in rules.hints
    measure = import_module(ROPE, "measure")
    reading = measure.read(x, p, got, want)
    length = np.sqrt(x[:, 0::2] ** 2 + x[:, 1::2] ** 2).max(axis=1)
    float32 = code.endswith("low_precision_float32")
    matches = [
        proposal
        for proposal in staff.propose(reading, x.shape[1])
        if "+".join(proposal.parts) == code.removesuffix("+low_precision_float32")
        and matching.fits_known(
            staff.regenerate(x, p, proposal, float32=float32), p, length, got, want, float32
        )
    ]
    assert matches, code


def test_the_kit_names_no_mistake_by_measurement() -> None:
    """Without the staff module (a learner kit), nothing is named by measurement."""
    rules = load_rules(ROPE)
    case, got, want = next(a for a in _answers("mistral_theta") if a[0].name == "two_pairs_d4")
    assert rules.diagnose is not None
    assert rules.diagnose(case.inputs, got, want, None) is None
    named = rules.diagnose(case.inputs, got, want, known_source(ROPE, case.inputs))
    assert isinstance(named, tuple) and named[0] == "wrong_base"


def test_a_log2_base_is_measured_and_confirmed() -> None:
    """exp(-log2(10000) * 2i / d) is off the catalogue: on a hidden case of d >= 6 it is
    named by the base two pairs agree on, regenerated; the numbers stay off hidden cases."""
    checked = _checked(ROOT)
    namespace: dict[str, Any] = {}
    path = ROOT / "tests" / "samples" / "named_log2_base.py"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    rules = checked.problem.rules
    staff = import_module(ROOT, "staff")
    judge = _judge(ROOT)
    measured = 0
    for case in checked.problem.hidden:
        if case.inputs["d_model"] < 6:
            continue
        got = np.asarray(namespace["sinusoidal_positions"](*arguments(rules.inputs, case.inputs)))
        want = checked.expected[case.name]
        assert rules.diagnose is not None
        found = rules.diagnose(case.inputs, got, want, staff)
        if isinstance(found, tuple):
            measured += 1
            assert found[0] == "wrong_base" and "as with base 5" in found[1]
        result = judge(
            case,
            Raw(RawKind.OK, 0.0, got, "float64"),
            want,
            Source("s.py", ""),
            static=Static(None),
        )
        if result.diagnosis is not None:  # a single far position fixes no rate: no hint
            assert result.diagnosis.code == "wrong_base"
            assert result.diagnosis.measured == ""
    assert measured >= 3


def test_an_index_error_hint_is_one_block() -> None:
    """table_precomputed goes with "raised IndexError" alone: one block of the vocabulary."""
    blocks = [b for b in vocabulary("sub.py", Limits(), ROPE) if b.hint == "table_precomputed"]
    assert len(blocks) == 1
    assert blocks[0].outcome is Outcome.EXCEPTION and "raised IndexError" in blocks[0].sentence


@pytest.mark.security
def test_an_index_error_names_the_table_on_a_visible_case_only() -> None:
    """The table's length, from the visible message, is said on a visible case; a hidden
    case with the same answer gets the fixed sentence; small positions get no hint."""
    judge = _judge(ROPE)
    checked = _checked(ROPE)
    message = "index 4095 is out of bounds for axis 0 with size 2048"
    raw = Raw(RawKind.EXCEPTION, 0.0, None, "", info={"exc_type": "IndexError", "message": message})
    probe = checked.problem.probes[0]
    shown = judge(probe, raw, checked.expected[probe.name], Source("s.py", ""), static=Static(None))
    assert shown.diagnosis is not None and "holds 2048 positions" in shown.diagnosis.measured
    large = next(c for c in checked.problem.hidden if c.name == "large_positions")
    hidden = judge(
        large, raw, checked.expected[large.name], Source("s.py", ""), static=Static(None)
    )
    assert hidden.diagnosis is not None and hidden.diagnosis.code == "table_precomputed"
    assert hidden.diagnosis.measured == "" and "2048" not in hidden.message
    small = next(c for c in checked.problem.hidden if c.name == "single_pair")
    none = judge(small, raw, checked.expected[small.name], Source("s.py", ""), static=Static(None))
    assert none.diagnosis is None


def test_columns_the_right_answer_keeps_tell_nothing() -> None:
    """x's last pair all zeros comes back unchanged by any rotation: a wrong base over every
    pair is a wrong base, never a partial rotary."""
    staff = import_module(ROPE, "staff")
    rules = load_rules(ROPE)
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (6, 8))
    x[:, 6:] = 0.0
    p = np.array([0, 1, 2, 5, 9, 30], dtype=np.float64)
    mistral = staff.Proposal(("wrong_base",), "adjacent", 8, 1e6 ** (-np.arange(4) / 4), "")
    got, want = staff.regenerate(x, p, mistral), staff.right(x, p)
    inputs = {"x": x, "positions": tuple(int(v) for v in p)}
    assert rules.diagnose is not None
    found = rules.diagnose(inputs, got, want, staff)
    assert isinstance(found, tuple) and found[0] == "wrong_base"


@pytest.mark.security
def test_the_numbers_read_through_the_command_line(cli: Cli) -> None:
    """`grader run` says what it read from Llama 3's base on the d = 4 example; `grader
    submit` names the same mistake on hidden cases in its fixed sentence, with no number
    read."""
    port = PORTS / "llama3_theta.py"
    code, out, _ = cli("run", port, "--problem", ROPE)
    assert code == 1
    assert "read back: pair 1 turns at 0.00141421 per position, as with base 500000" in out
    code, out, _ = cli("submit", port, "--problem", ROPE)
    assert code == 1 and "hint: the frequencies use the wrong base" in out
    assert "read back" not in out and "500000" not in out and "0.0014" not in out


def test_an_answer_seen_before_on_a_case_is_named_as_then() -> None:
    """The same table on the same case is diagnosed once: a second judge names it from what
    the first found, and a different table is diagnosed afresh."""
    from grader.verdict import seen

    calls: list[int] = []

    def name() -> str:
        calls.append(1)
        return "wrong_base"

    table = np.arange(12.0).reshape(3, 4)
    key = ("test", 1)
    assert seen.named(key, table, name) == "wrong_base"
    assert seen.named(key, table.copy(), name) == "wrong_base"
    assert len(calls) == 1
    assert seen.named(key, table.astype(np.float32), name) == "wrong_base"
    assert seen.named(key, table.T, name) == "wrong_base"
    assert len(calls) == 3


def test_a_table_for_2048_positions_is_named_on_runs_probe(cli: Cli) -> None:
    """GPT-J's table passes the examples; `grader run` names it on the public probe, with
    the table's length; `grader submit` names it beside "raised IndexError"."""
    port = PORTS / "gptj_table_2048.py"
    code, out, _ = cli("run", port, "--problem", ROPE)
    assert code == 0
    assert "passes the examples, but: on the public probe probe_past_2048: is a sin/cos" in out
    assert "the table holds 2048 positions" in out
    code, out, _ = cli("submit", port, "--problem", ROPE)
    assert code == 1 and "raised IndexError\n     hint: is a sin/cos table precomputed" in out
    assert "2048 positions" not in out


@st.composite
def crafted_sinusoid(draw: st.DrawFn) -> tuple[tuple[int, ...], int, Any, Any]:
    """Return (positions, d_model, answer, right answer): sines and cosines of drawn rates
    in a drawn layout, some values spoiled."""
    staff = import_module(ROOT, "staff")
    d = 2 * draw(st.integers(1, 10))
    positions = tuple(sorted(draw(st.lists(st.integers(0, 10**6), min_size=1, max_size=10))))
    q = np.asarray(positions, dtype=np.float64)
    kind = draw(st.sampled_from(["base", "random", "scaled"]))
    i = np.arange(d // 2, dtype=np.float64)
    rates = {
        "base": draw(st.floats(1.5, 1e7)) ** (-2 * i / d),
        "random": np.asarray(draw(st.lists(st.floats(-3, 3), min_size=d // 2, max_size=d // 2))),
        "scaled": draw(st.sampled_from([0.5, 0.3, 2.0])) * 10000.0 ** (-2 * i / d),
    }[kind]
    angle = np.multiply.outer(q, rates)
    sines, cosines = np.sin(angle), np.cos(angle)
    if draw(st.booleans()):
        got = np.empty((q.size, d))
        got[:, 0::2], got[:, 1::2] = sines, cosines
    else:
        got = np.concatenate([sines, cosines], axis=1)
    if draw(st.booleans()):
        got.flat[draw(st.integers(0, got.size - 1))] = draw(st.sampled_from([0.0, 1e308, 2.0]))
    return positions, d, got, staff.right(q, d)


@settings(max_examples=120, deadline=None)
@given(crafted_sinusoid())
def test_crafted_sinusoid_tables_get_no_hint_without_a_match(
    table: tuple[tuple[int, ...], int, Any, Any],
) -> None:
    """The first exercise's measured hints: never an exception, and every hint named by
    measurement comes with a regenerated table within the matching rule of the answer."""
    positions, d, got, want = table
    rules = load_rules(ROOT)
    staff = import_module(ROOT, "staff")
    measure = import_module(ROOT, "measure")
    matching = import_module(ROOT, "matching")
    if np.abs(got - want).max() <= 1e-6:
        return
    inputs = {"positions": positions, "d_model": d}
    with np.errstate(all="ignore"):
        assert rules.diagnose is not None
        found = rules.diagnose(inputs, got, want, staff)
    if not isinstance(found, tuple):
        return
    q = np.asarray(positions, dtype=np.float64)
    slack = matching._float32_slack(q)
    tables = [
        make(q, d)
        for layout, rates in measure.read(q, got)
        for code, make, _ in staff.propose(layout, rates, d)
        if code == found[0]
    ]
    assert any(np.all(np.abs(got - t).max(axis=1) <= slack) for t in tables), found


@pytest.mark.parametrize(
    ("port", "said"),
    [
        ("clamped_table_2048", "every later row is turned as position 2047: a table of 2048"),
        ("zero_tail_2048", "from 2048 on the rows are zeros: a table of at most 2048"),
    ],
)
def test_a_wrong_tail_is_named_on_the_probe_only(cli: Cli, port: str, said: str) -> None:
    """A table of 2048 positions whose tail is zeros or clamped: `grader run` names it on the
    probe with what it read; on a hidden case a wrong answer never shows that hint."""
    code, out, _ = cli("run", PORTS / f"{port}.py", "--problem", ROPE)
    assert code == 0 and said in out
    code, out, _ = cli("submit", PORTS / f"{port}.py", "--problem", ROPE)
    assert code == 1 and "hint:" not in out


@pytest.mark.parametrize("share", [1e-3, 3e-4, 1e-4, 3e-5, 1e-6])
def test_noise_past_position_zero_is_no_float32_angles(share: float) -> None:
    """Noise of a share of each row's longest pair on every row past position 0 is no
    rotation in float32 angles (its error does not grow with the position, and it moves
    the pairs' lengths): no hint on any hidden case, large positions included."""
    checked = _checked(ROPE)
    rules = checked.problem.rules
    staff = import_module(ROPE, "staff")
    rng = np.random.default_rng(0)
    assert rules.diagnose is not None
    for case in checked.problem.hidden:
        x = np.asarray(case.inputs["x"], dtype=np.float64)
        p = np.asarray(case.inputs["positions"], dtype=np.float64)
        want = checked.expected[case.name]
        longest = np.sqrt(x[:, 0::2] ** 2 + x[:, 1::2] ** 2).max(axis=1, keepdims=True)
        got = want + rng.uniform(-1.0, 1.0, want.shape) * share * longest * (p[:, None] > 0)
        with np.errstate(all="ignore"):
            found = rules.diagnose(case.inputs, got, want, staff)
        assert found is None, (case.name, found)


def test_exponents_over_the_whole_width_win_or_tie() -> None:
    """A partial rotary whose exponents run over the whole width has the rates of another
    mistake over the turned columns: with fewer parts it is the one proposed (its
    frequencies are right); where both have as many parts, neither is."""
    staff = import_module(ROPE, "staff")
    measure = import_module(ROPE, "measure")

    def proposed(turned: int, d: int, base: float) -> list[tuple[str, ...]]:
        rates = base ** (-2.0 * np.arange(turned // 2) / d)
        reading = measure.Reading(measure.Layout.ADJACENT, turned, d, rates)
        return [p.parts for p in staff.propose(reading, d)]

    assert proposed(32, 64, 10000.0) == [("partial_rotary",)]  # not exponent_i_over_d
    assert proposed(16, 64, 10000.0) == [("partial_rotary",)]  # not base 10
    # Base 1000 over 6 columns is 10000 ** (-i / 4) over the 4 turned: a guess either way.
    assert proposed(4, 6, 1000.0) == []
