"""A kit's words are its own: what it tells a learner names the kit's command and package,
never the repository's (`grader run`, `pip install -e`, grader/problem/...)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grader.errors import GraderError


def test_kit_words_name_the_kits_command() -> None:
    """`grader run` and `grader serve` in a kit's public text become the kit's command."""
    from grader.ship.kit.vendor import name_command

    text = b"then run `grader run THIS_FILE`; `grader serve`; `grader batch`; grader run"
    assert name_command(text, "rope-kit") == (
        b"then run `rope-kit run THIS_FILE`; `rope-kit serve`; `grader batch`; grader run"
    )


def test_a_kits_plot_hint_is_pip_install_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without matplotlib, a kit says `pip install matplotlib`, not the repository's line."""
    from grader import plot

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(GraderError, match=r"pip install -e"):
        plot.require_matplotlib()
    monkeypatch.setattr(plot, "PACKAGE", Path("site-packages") / "rope_kit")
    with pytest.raises(GraderError) as raised:
        plot.require_matplotlib()
    assert str(raised.value) == "--plot needs matplotlib: pip install matplotlib"


def test_a_kits_schema_error_names_its_own_package(
    problem_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exercise's INPUTS of the wrong kind is said with the kinds module of the package
    that reads it (a kit's own, in a kit: it has no grader/)."""
    from grader.problem import rules

    exercise = problem_copy / "problem" / "exercise.py"
    exercise.write_text(exercise.read_text() + "\nINPUTS = None\n")
    monkeypatch.setattr(rules, "PACKAGE", Path("site-packages") / "rope_kit")
    with pytest.raises(GraderError, match=r"\(rope_kit/problem/kinds\.py\)"):
        rules.load_rules.__wrapped__(problem_copy)


def test_one_passed_over_entry_is_one_entry() -> None:
    """ "passed over: 1 entry", not "1 entries"."""
    from grader.batch.discover import Layouts

    assert Layouts(passed=[".DS_Store"]).passed_line().startswith("passed over: 1 entry no ")
    assert Layouts(passed=["a", "b"]).passed_line().startswith("passed over: 2 entries no ")


def test_an_unwalled_run_claims_only_the_limits_that_held() -> None:
    """Without walls the report's limits are the time limit and the output kept: no CPU,
    memory or file limit is claimed; behind walls every limit is."""
    from grader.pipeline import held
    from grader.report import limits_line
    from grader.sandbox.answers import Capture, Run
    from grader.sandbox.limits import Limits
    from grader.states import Backend

    def run(**confinement: object) -> Run:
        capture = Capture(100)
        return Run(
            {}, capture, capture, Backend.NONE, confinement={"backend": "none", **confinement}
        )

    unwalled = limits_line(held(Limits(), run(unwalled=True)))
    assert "MB memory" not in unwalled and "s CPU" not in unwalled and "MB files" not in unwalled
    assert "3 s per case" in unwalled and "no CPU, memory or file limit (no walls)" in unwalled
    walled = limits_line(held(Limits(), run()))
    assert "1024 MB memory" in walled and "no walls" not in walled


def test_sandbox_doc_promises_no_survivor_only_behind_walls() -> None:
    """docs/sandbox.md does not promise that no process survives an unwalled run."""
    from tests.conftest import ROOT

    text = " ".join((ROOT / "docs" / "sandbox.md").read_text().split())
    assert "Whatever the submission does, no process of it survives" not in text
    assert "can outlive the run" in text
