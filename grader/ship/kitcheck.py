"""The learner kit's check: that it holds no hidden case, no reference code and no known
table of a hidden case, in any file, written out or as data."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from importlib.util import decode_source
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from grader.errors import GraderError
from grader.files import PACKAGE
from grader.problem.casefile import Case
from grader.problem.cases import Checked, check_problem
from grader.problem.exercise import EXERCISE_FILE, others
from grader.problem.kinds import InputKind, Secrecy
from grader.problem.layout import (
    EXAMPLES_FILE,
    HIDDEN_DIR,
    KIT_DATA_DIR,
    KNOWN_TABLES,
    REFERENCE_FILE,
    STAFF_FILE,
    STARTER_FILE,
    STATEMENT_FILE,
)
from grader.problem.rules import Rules, load_rules
from grader.ship.held import PublicRows
from grader.ship.kitdata import WRITTEN, PublicInput, public_data, read_data, written_inputs
from grader.ship.kitstage import kit_examples, write_known_tables
from grader.ship.kittext import (
    FileKind,
    authored,
    bare_seeds,
    code_views,
    kind_of,
    readable,
    refuse_unknown,
    views,
    written_seeds,
    written_tables,
)

if TYPE_CHECKING:
    from grader.compare import Array


class Kit(NamedTuple):
    """The kit's text files, read once for every exercise: white space folded, and lines."""

    bundle: Path
    words: dict[Path, str]
    lines: dict[Path, set[str]]


# What the kit carries of the grader's own home: how to install it, beside the package.
HOME_FILES = ("pyproject.toml",)


def public_files(root: Path) -> list[str]:
    """Return what the kit carries of the exercise: its examples and every file of its
    `problem/` folder but the staff module: all of it public."""
    folder = root / "problem"
    found = sorted(
        str(p.relative_to(root))
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    return [EXAMPLES_FILE, *(name for name in found if name != str(STAFF_FILE))]


def _reference_lines(root: Path, public: set[str]) -> set[str]:
    """Return the reference's lines of code long enough to say something (not `return out`).

    A line that also occurs in a public file (the signature the starter shows) proves
    nothing.
    """
    return {
        text
        # As Python reads it: a coding cookie (latin-1) is the reference's to choose.
        for line in decode_source((root / REFERENCE_FILE).read_bytes()).splitlines()
        if len(text := line.strip()) >= 20
        and not text.startswith(("#", '"""', "import ", "from "))
        and text not in public
    }


def _words(text: str) -> str:
    """Return ``text`` with every run of white space one space: as YAML folds a sentence."""
    return " ".join(text.split())


def _check_whys(hidden: Sequence[Case], kit: Kit) -> None:
    """Refuse a kit that says what a hidden case checks: its why, found in any text.

    The case's name alone is in every report and no secret; its inputs and tables are
    compared as data, never as the lines of YAML that write them (a key line, `x:`, or a
    row, is in any example too).
    """
    whys = {_words(case.why): case.source for case in hidden if len(_words(case.why)) >= 20}
    for path, words in kit.words.items():
        for why in sorted(w for w in whys if w in words):
            raise GraderError(
                f"learner bundle file {path.relative_to(kit.bundle)} says what "
                f"{whys[why]} checks: {why[:60]!r}"
            )


def exercise_roots(root: Path) -> list[Path]:
    """Return ``root`` and every other exercise beside the grader that has its reference
    (exercise.others). A kit of one must hold nothing of any other's secrets either."""
    return [root, *(other for other in others(root) if (other / REFERENCE_FILE).is_file())]


# A file holding this share of the reference's lines of code holds the reference. The
# grader's variants.py shares half of them: it computes the right table too, in the same
# idiomatic numpy, to name the mistakes against it.
REFERENCE_SHARE = 0.75


def verify_learner(root: Path, bundle: Path) -> list[str]:
    """Check that no file of ``bundle`` holds a hidden case, a reference or the formula,
    of this exercise or of any other beside the grader.

    A problem file of a kind the check cannot read is refused (kittext.py). Data (YAML,
    JSON, numpy) is parsed, and its inputs and tables, with the lists, rows and seeds every
    text writes (read token by token), are compared with the hidden cases' inputs and
    expected tables (held.py); a hidden case's why is looked for in every text, the
    formula and the reference's lines in every part that may be code. Return the bundle's
    files.
    """
    files = sorted(p for p in bundle.rglob("*") if p.is_file())
    names = [str(p.relative_to(bundle)) for p in files]
    forbidden = [n for n in names if n.split("/")[0] in (HIDDEN_DIR, "solutions", "tests")]
    forbidden += [n for n in names if n.endswith(str(STAFF_FILE))]
    if forbidden:
        raise GraderError(f"learner bundle would contain {', '.join(forbidden)}")
    # A closed list of kinds: what the check cannot read is not shipped.
    refuse_unknown(bundle, files)
    # Each file read once, as text (a notebook's strings decoded) and (its data files) as
    # data; every exercise's secrets are then looked for in them.
    texts = {
        path: views(path, path.read_text("utf-8", errors="replace"))
        for path in files
        if kind_of(path) is not FileKind.ARRAYS
    }
    data = read_data(bundle, [p for p in files if kind_of(p) in (FileKind.DATA, FileKind.ARRAYS)])
    exercises = [(e, check_problem(e, examples=False)) for e in exercise_roots(root)]
    found = [public_data(data, checked.problem.rules.inputs) for _, checked in exercises]
    # Every table of the kit, indexed once for all: any of them may hold any exercise's case.
    tables = {table.where: table for _, read in found for table in read}
    plain = {path: read.text for path, read in texts.items()}
    # The numbers as every text writes them: entities, dashes, complex numbers read.
    numeric = {
        path: readable(text, sheet=kind_of(path) is FileKind.SHEET) for path, text in plain.items()
    }
    authors = [(path, str(path.relative_to(bundle))) for path in authored(bundle, list(plain))]
    written = [
        table
        for path, where in authors
        for table in written_tables(where, numeric[path]) + written_seeds(where, numeric[path])
    ]
    seeds = [seed for path, where in authors for seed in bare_seeds(where, numeric[path])]
    seen = Seen(PublicRows([*tables.values(), *written], seeds), written_inputs(bundle, numeric))
    kit = Kit(
        bundle,
        {path: _words(text) for path, text in plain.items()},
        {path: {line.strip() for line in text.splitlines()} for path, text in plain.items()},
    )
    for (exercise, checked), (inputs, _) in zip(exercises, found, strict=True):
        _check_secrets_of(root, exercise, checked, kit, inputs, seen)
    formula = load_rules(root).formula
    for name, code in code_views(bundle, texts):
        if formula and re.search(formula, code):
            raise GraderError(
                f"learner bundle file {name} computes the formula "
                f"(it matches {formula!r}): the kit must carry no implementation of it"
            )
    return names


def verify_public(root: Path) -> None:
    """Check the exercise's public files, as a learner kit carries them (the probes'
    expected tables and the known mistakes' tables added), for every exercise's secrets:
    what `check` asks before any kit is built, so that it refuses what the bundle would."""
    with tempfile.TemporaryDirectory(prefix="grader-public-") as folder:
        stage = Path(folder)
        for name in public_files(root):
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / name, stage / name)
        (stage / EXAMPLES_FILE).write_text(kit_examples(root), encoding="utf-8")
        write_known_tables(root, stage / KIT_DATA_DIR / KNOWN_TABLES)
        try:
            verify_learner(root, stage)
        except GraderError as leak:
            # The kit check speaks of a bundle; here no bundle exists yet.
            raise GraderError(f"`bundle learner` would refuse this problem: {leak}") from None


def _check_secrets_of(
    root: Path,
    exercise: Path,
    checked: Checked,
    kit: Kit,
    inputs: Sequence[PublicInput],
    seen: Seen,
) -> None:
    """Check the kit of ``root`` for the secrets of ``exercise``, another's or its own."""
    try:
        _check_secrets(exercise, checked, kit, inputs, seen)
    except GraderError as leak:
        if exercise == root:
            raise
        # Its cases' files are named within it: say which exercise's they are.
        raise GraderError(f"{leak} (a case of the exercise in {_folder(exercise)})") from None


def _check_secrets(
    root: Path, checked: Checked, kit: Kit, inputs: Sequence[PublicInput], seen: Seen
) -> None:
    """Refuse a kit holding one exercise's hidden inputs, expected tables or reference."""
    problem = checked.problem
    # Data first, compared as what it means: lines of text miss a hidden input written
    # another way ([1,2], a range for a list), and say less about where it is.
    _check_inputs(inputs, problem.hidden, problem.rules)
    for case in problem.hidden:
        for spec in problem.rules.inputs.fields:
            refusal = SHOWN[spec.secrecy](spec, case, seen)
            if refusal:
                raise GraderError(refusal)
        _check_answer(seen.rows, case, checked.expected[case.name])
    _check_whys(problem.hidden, kit)
    # The lines the exercise shows on purpose (the signature in the starter and the
    # statement), never those of any file of problem/: a copy of the reference there would
    # then hide itself.
    public = {
        line.strip()
        for name in (EXAMPLES_FILE, STARTER_FILE, STATEMENT_FILE, EXERCISE_FILE)
        if (root / name).is_file()
        for line in (root / name).read_text("utf-8", errors="replace").splitlines()
    }
    reference = _reference_lines(root, public)
    for path, lines in kit.lines.items():
        if reference and len(lines & reference) >= REFERENCE_SHARE * len(reference):
            raise GraderError(
                f"learner bundle file {path.relative_to(kit.bundle)} contains the reference's code "
                f"({len(lines & reference)} of its {len(reference)} lines)"
            )


def _rows(values: Mapping[str, Any], rules: Rules) -> list[tuple[Any, ...]]:
    """Return each row's items of the row inputs, as their kinds give them."""
    field = rules.inputs.field
    columns = [field(n).row_items(values[n]) for n in rules.row_inputs]
    return list(zip(*columns, strict=False))


def _check_inputs(inputs: Sequence[PublicInput], hidden: Sequence[Case], rules: Rules) -> None:
    """Refuse a public input equal to a hidden one, or holding every row of one.

    A superset gives the case away too, where each row of the answer depends on its own
    items only (the exercise's ROW_INPUTS): the rows of its table, picked out, are the
    hidden case's answer.
    """
    row_names = rules.row_inputs
    needed = [
        (case, frozenset(_rows(case.inputs, rules)) if row_names else None) for case in hidden
    ]
    for public in inputs:
        for case, rows in needed:
            if set(public.values) != set(case.inputs):
                continue  # another exercise's input: it cannot be this one's
            if public.values == case.inputs:
                raise GraderError(
                    f"learner bundle file {public.where} is the input of {case.source}: "
                    "the kit must not show a hidden case"
                )
            if rows is None or not _alike(public.values, case.inputs, rules):
                continue
            if rows <= set(_rows(public.values, rules)):
                raise GraderError(
                    f"learner bundle file {public.where} holds every row of {case.source}: "
                    f"the kit must not show a hidden case; {ADVICE}"
                )


def _alike(public: Mapping[str, Any], hidden: Mapping[str, Any], rules: Rules) -> bool:
    """Whether a table for ``public`` holds the rows of one for ``hidden``, their row
    inputs aside: the other inputs equal, or as the exercise's same_rows says."""
    if rules.same_rows is not None:
        return bool(rules.same_rows(public, hidden))
    others = [n for n in rules.inputs.names if n not in rules.row_inputs]
    return all(public[n] == hidden[n] for n in others)


class Seen(NamedTuple):
    """What the kit shows, read: every row and column of its tables, and the lists of whole
    numbers written in its text."""

    rows: PublicRows
    written: list[PublicInput]


# How the kit check looks for one hidden input in what the kit shows, as the input's kind
# says (its secrecy): each function returns the refusal, or None. (A whole public input
# equal to a hidden one, or holding its rows, is _check_inputs's.)


def _shown_alone(spec: InputKind, case: Case, seen: Seen) -> str | None:
    """An integer alone tells no case: a width of 2 is in any example."""
    return None


# The fewest numbers of a hidden list that the kit's text is searched for.
SHORTEST_WRITTEN = 4


def _shown_written(spec: InputKind, case: Case, seen: Seen) -> str | None:
    """Refuse a hidden list written out in the kit's text, as a list or a range, in any
    order (its rows are the same rows reordered). A list of fewer than four numbers is
    in any text (`range(3)`, "pairs 0, 1, 2"): only a public input equal to the case's
    gives such a list away (_check_inputs)."""
    hidden = case.inputs[spec.name]
    if len(hidden) < SHORTEST_WRITTEN:
        return None
    ordered = sorted(hidden)
    for public in seen.written:
        shown = public.values[WRITTEN]
        # The length first: a range written in text may stand for a billion numbers.
        if len(shown) == len(hidden) and sorted(shown) == ordered:
            return (
                f"learner bundle file {public.where} is the input of {case.source}: "
                "the kit must not show a hidden case"
            )
    return None


def _shown_rows(spec: InputKind, case: Case, seen: Seen) -> str | None:
    """Refuse a hidden table whose every row is in the kit's tables (see held.py)."""
    table = case.inputs[spec.name]
    stream = seen.rows.streaming(table, case.tolerance)
    if stream is not None:
        return (
            f"learner bundle holds the input {spec.name} of {case.source}: {stream} is "
            f"generated from the same seed, as many values or more; {ADVICE_SEED}"
        )
    seed = seen.rows.seeded(table, case.tolerance)
    if seed is not None:
        return (
            f"learner bundle holds the input {spec.name} of {case.source}: {seed} draws "
            f"it, whatever the shape a learner asks for; {ADVICE_BARE_SEED}"
        )
    places = seen.rows.holding(table, case.tolerance)
    if places is None:
        return None
    return (
        f"learner bundle holds the input {spec.name} of {case.source}: each of its rows is "
        f"in {_places(places)}; {ADVICE}"
    )


# What the author can do, said after a refusal of rows: some of a case's rows may be
# public (a single row in common is no case), never all of them.
ADVICE = "a kit may show some of its rows, never all: leave one out, or change that hidden case"
ADVICE_SEED = "use another seed, or fewer values"
ADVICE_BARE_SEED = "use another seed than a hidden case's"


SHOWN: dict[Secrecy, Callable[[InputKind, Case, Seen], str | None]] = {
    Secrecy.ALONE: _shown_alone,
    Secrecy.WRITTEN: _shown_written,
    Secrecy.ROWS: _shown_rows,
}


def _check_answer(rows: PublicRows, case: Case, expected: Array) -> None:
    """Refuse a kit whose tables hold every row of a hidden case's expected table.

    Within the case's own tolerance: then a file that looks its answers up in the kit's
    data passes the case. Every table counts, the known mistakes' too, and all of them
    together: a learner can read them all.
    """
    # A few small whole numbers are in any text, scaled or in order among a row's columns
    # (a running total's [4, 0, 4]): like a list that short, they tell no case. A few
    # other numbers (sin 6, cos 6) are still looked for.
    if expected.size < SHORTEST_WRITTEN and _small_whole(expected):
        return
    # An answer of one axis is one row.
    places = rows.holding(expected.reshape(-1, expected.shape[-1]), case.tolerance)
    if places is not None:
        raise GraderError(
            f"learner bundle holds the expected table of {case.source}: each of its "
            f"rows is in {_places(places)}; {ADVICE}"
        )


def _small_whole(values: Array) -> bool:
    """Whether every value is a whole number a text could hold by chance (|v| <= 1000)."""
    import numpy as np

    finite = np.isfinite(values).all()
    return bool(finite and (values == np.round(values)).all() and (abs(values) <= 1000).all())


def _folder(exercise: Path) -> str:
    """Name an exercise's folder as its author knows it: from the grader's own folder."""
    home = PACKAGE.parent
    where = exercise.resolve()
    return f"{where.relative_to(home) if where.is_relative_to(home) else where.name}/"


def _places(places: Sequence[str]) -> str:
    more = f" and {len(places) - 2} more" if len(places) > 2 else ""
    return f"{', '.join(places[:2])}{more}"
