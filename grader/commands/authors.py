"""The author's commands: `check` the problem, `audit` the suite, `add-case`, and
`bundle` what ships to learners and to Gradescope."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from grader.commands.args import (
    Command,
    Need,
    format_args,
    grading_args,
    jobs_args,
    limits_of,
    problem_args,
)
from grader.errors import EXIT_FAILED, EXIT_PASSED, GraderError
from grader.ship.visibility import VISIBILITIES
from grader.states import Bundle, Format


def _bundle_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", type=Bundle, choices=list(Bundle))
    p.add_argument("out", type=Path, metavar="OUT", help="a folder, or a path ending in .zip")
    p.add_argument(
        "--visibility",
        choices=VISIBILITIES,
        default="visible",
        help="Gradescope: when learners see each test (default visible)",
    )
    p.add_argument(
        "--stdout-visibility",
        choices=VISIBILITIES,
        default="hidden",
        help="Gradescope: when learners see the autograder output (default hidden)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace OUT if it is a bundle already (a zip, or a folder this command wrote)",
    )


def _add_case_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input",
        action="append",
        default=[],
        dest="inputs",
        metavar="NAME=VALUE",
        help="one input of the case, by the name the exercise declares; VALUE an integer "
        "(8), a list of integers (3,1,4) or a range START:STOP[:STEP] as in Python, a "
        "generated table seed:S:ROWSxCOLUMNS, or YAML ([[1.0, 2.0]], {range: [0, 8]})",
    )
    p.add_argument(
        "--inputs-file",
        type=Path,
        metavar="FILE",
        help="a YAML file of the case's inputs (name: value, as a case file's input "
        "writes them); --input values override its",
    )
    p.add_argument(
        "--name",
        help="case name: lowercase letters, digits, _ or - (default: case_NN, NN its number)",
    )
    p.add_argument(
        "--why",
        required=True,
        metavar="SENTENCE",
        help="the mistake the case is meant to catch, kept in its file for the next author "
        "(required: a case nobody can explain is soon a case nobody dares remove)",
    )
    p.add_argument(
        "--no-audit", action="store_true", help="write the case without grading the corpus on it"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="keep the case even if correct solutions of the corpus fail it",
    )


def _audit(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.author.audit import audit, audit_json, render_audit

    result = audit(problem_root=root, limits=limits_of(args), choice=choice, jobs=args.jobs or 0)
    if args.format is Format.JSON:
        import json

        sys.stdout.write(json.dumps(audit_json(result), indent=2) + "\n")
    else:
        sys.stdout.write(render_audit(result))
    return EXIT_PASSED if result.clean else EXIT_FAILED


def _check(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.author.check import check
    from grader.ship.kitcheck import verify_public

    sound = check(root, limits=limits_of(args), choice=choice)
    # A public file that gives a hidden case away is the problem's issue before any kit.
    verify_public(root)
    print(sound)
    return EXIT_PASSED


def _bundle(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.author.add_case import suite_issues
    from grader.problem.cases import ProblemInvalid, check_problem
    from grader.ship.bundle import build_gradescope, build_learner
    from grader.ship.worktree import staff_bundle_warning

    checked = check_problem(root)  # every issue of the files first, before anything is graded
    # Nothing ships whose cases correct code fails, graded as learners' files would be.
    unfit = suite_issues(root, limits=limits_of(args), choice=choice)
    if unfit:
        raise ProblemInvalid(unfit)

    if args.kind is Bundle.LEARNER:
        names = build_learner(root, args.out, force=args.force)
        print(f"learner bundle written to {args.out}: {len(names)} files, checked to hold no")
        print("hidden case and not the reference's code:")
    else:
        names = build_gradescope(
            root,
            args.out,
            visibility=args.visibility,
            stdout_visibility=args.stdout_visibility,
            force=args.force,
        )
        print(f"Gradescope autograder written to {args.out}: {len(names)} files:")
    for name in names:
        print(f"  {name}")
    if args.kind is Bundle.GRADESCOPE:
        # Gradescope scales nothing: an assignment worth other points misreports every score.
        hidden = checked.problem.hidden
        total = sum(case.max_score for case in hidden)
        print(
            f"Set the assignment's total points on Gradescope to {total:g}, the suite's total "
            f"({len(hidden)} hidden cases)."
        )
        warning = staff_bundle_warning(args.out)
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    return EXIT_PASSED


def _add_case(args: argparse.Namespace, root: Path) -> int:
    from grader.author.add_case import (
        add_case,
        given_inputs,
        new_case_report,
        record_known_failing,
        update_statement,
    )
    from grader.problem.rules import load_rules

    inputs = given_inputs(load_rules(root).inputs, args.inputs, args.inputs_file)
    refused_before = _kits_refusing(root)
    path = add_case(root, inputs=inputs, name=args.name, why=args.why)
    # As `check` would, on every exercise beside the grader: a kit that shows the new case
    # (an example holding its rows) refuses it. What a kit refused before is not its doing.
    try:
        refused = {e: why for e, why in _kits_refusing(root).items() if e not in refused_before}
    except BaseException:
        path.unlink()  # Ctrl-C included: no case is left that was not checked
        raise
    if refused:
        path.unlink()
        raise GraderError(f"{next(iter(refused.values()))}; no case written")
    if not args.no_audit:
        from grader.sandbox.walls import Unwalled, resolve_backend

        try:
            # The corpus is the author's own: it runs without walls where none can start.
            choice = resolve_backend(
                args.sandbox, require=args.require_sandbox, unwalled=Unwalled.ALLOW
            )
            text, failing = new_case_report(root, path, limits=limits_of(args), choice=choice)
        except BaseException:
            path.unlink()  # nothing written unless the case was judged (or judging was skipped)
            raise
        names = [name for name, _ in failing]
        if failing and not args.force:
            path.unlink()
            print(text, end="")
            print(
                f"refused: correct variants fail it ({', '.join(names)}), so the case or its "
                "tolerance is wrong; nothing written (--force keeps it anyway)",
                file=sys.stderr,
            )
            return EXIT_FAILED
        print(f"wrote {path.relative_to(root)}")
        print(text, end="")
        if failing:
            record_known_failing(path, failing)
            print(
                f"WARNING: kept with --force; correct variants fail it: {', '.join(names)} "
                "(recorded in the case's known_failing)"
            )
    else:
        print(f"wrote {path.relative_to(root)}")
    update_statement(root)
    return EXIT_PASSED


def _kits_refusing(root: Path) -> dict[Path, str]:
    """Return what `check` refuses of each exercise's public files, for every exercise
    beside the grader, this one first (kitcheck.verify_public)."""
    from grader.problem.cases import ProblemInvalid
    from grader.ship.kitcheck import exercise_roots, verify_public

    refused = {}
    for exercise in exercise_roots(root):
        try:
            verify_public(exercise)
        except (GraderError, ProblemInvalid) as refusal:
            refused[exercise] = str(refusal)
    return refused


CHECK = Command(
    "check",
    "validate the problem files, and grade the reference and correct variants on them (authors)",
    (problem_args, grading_args),
    _check,
    own_files=True,
)
AUDIT = Command(
    "audit",
    "grade the solution corpus on the hidden cases: kill matrix and margins (authors)",
    (problem_args, format_args, grading_args, jobs_args("variants")),
    _audit,
    own_files=True,
)
BUNDLE = Command(
    "bundle",
    "build a learner bundle or a Gradescope autograder zip",
    (problem_args, _bundle_args, grading_args),
    _bundle,
    own_files=True,
)
ADD_CASE = Command(
    "add-case",
    "add a hidden case and audit it (authors)",
    (problem_args, grading_args, _add_case_args),
    _add_case,
    needs=(Need.ROOT,),
)
