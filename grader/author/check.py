"""`grader check`: every issue of a problem folder at once, then the suite graded."""

from __future__ import annotations

from pathlib import Path

from grader.author.add_case import statement_issue, suite_issues
from grader.author.audit import load_corpus
from grader.errors import WHOLE_FILE
from grader.problem import generated
from grader.problem.cases import Issue, ProblemInvalid, case_files, check_problem
from grader.problem.layout import CORPUS_FILE, HIDDEN_DIR, STATEMENT_FILE, protected_paths
from grader.sandbox.guard import exposed_files
from grader.sandbox.limits import Limits
from grader.sandbox.walls import Choice


def check(root: Path, *, limits: Limits, choice: Choice) -> str:
    """Check the problem folder; return the line that says it is sound, or raise
    ProblemInvalid listing every issue found, the guard's and the statement's with the
    files' own."""
    # A suite past its bounds is refused unread (check_problem says so); the guard would
    # walk every entry of it first, a million of them too.
    hidden = root / HIDDEN_DIR
    # Every seeded table generated again from its seed, and kept anew.
    generated.discard(hidden / generated.FOLDER)
    files, past_bounds = case_files(hidden) if hidden.is_dir() else ([], [])
    crowded = bool(past_bounds)
    # Whatever backend later grades: a layout the guard would refuse is an issue now.
    found = [] if crowded else exposed_files(protected_paths(root))
    exposed = [Issue(_relative(e.path, root), WHOLE_FILE, e.why) for e in found]
    # The statement is listed with the rest: its count is of the case files, valid or not.
    wrong = "" if crowded else statement_issue(root, len(files))
    statement = [Issue(str(STATEMENT_FILE), "(text)", wrong)] if wrong else []
    try:
        checked = check_problem(root)
    except ProblemInvalid as invalid:
        # A link the guard names is one issue, not two: the loader refuses to read it too.
        named = {issue.file for issue in exposed}
        rest = [i for i in invalid.issues if not (i.file in named and i.field == WHOLE_FILE)]
        raise ProblemInvalid(exposed + rest + statement) from None
    if exposed or statement:
        raise ProblemInvalid(exposed + statement)
    problem = checked.problem
    # Last, and in the sandbox: what only grading the reference and the correct variants
    # as submissions shows (a case they fail, which the reference's own run cannot see).
    unfit = suite_issues(root, limits=limits, choice=choice)
    if unfit:
        raise ProblemInvalid(unfit)
    corpus = load_corpus(root) if (root / CORPUS_FILE).exists() else ()
    return (
        f"problem OK: {len(problem.examples)} examples and {len(problem.hidden)} hidden cases "
        f"agree with the reference; tolerance {problem.tolerance.describe()}"
        + (f"; corpus of {len(corpus)} variants listed" if corpus else "")
    )


def _relative(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
