"""A gradebook template's bounds, its compact reading, its linear writing and its delimiter:
a hostile or broken template is refused in one line (exit 2), never the machine's memory."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from grader.batch.platforms import sheet as sheet_module
from grader.batch.platforms.sheet import read_sheet
from tests.batch.gradebooks import CANVAS, batch_out, graded
from tests.conftest import Cli

HW1 = "HW 1: Sinusoids"


def run_export(cli: Cli, tmp_path: Path, template: bytes, *args: str) -> tuple[int, str, str]:
    out = tmp_path / "out"
    if not out.exists():
        batch_out(out, "canvas", {"canvas-12345": graded(7, name="smithjohn")})
    path = tmp_path / "grades.csv"
    path.write_bytes(template)
    dest = tmp_path / "filled.csv"
    return cli("export", out, "--to", "canvas", "--template", path, "-o", dest, *args)


@pytest.mark.parametrize(
    ("tail", "said"),
    [
        ('"X",999' + "," * 30_000 + "\n", "more than 20000 cells in row 11"),
        ('"X",999,"' + "a" * (sheet_module.MAX_FIELD + 1) + '"\n', "a cell of row 11 holds"),
        ('"X",999\n' * (sheet_module.MAX_ROWS + 1), "more than 200000 rows"),
    ],
)
def test_a_template_past_a_gradebooks_bounds_is_refused_in_one_line(
    cli: Cli, tmp_path: Path, tail: str, said: str
) -> None:
    """Too many cells in a row, a cell too long, too many rows: one line naming the bound,
    exit 2, no file written (the attack's template of 60 MiB of commas took gigabytes)."""
    code, _, err = run_export(cli, tmp_path, (CANVAS + tail).encode(), "--column", HW1)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "filled.csv").exists()


@pytest.mark.slow
def test_a_large_template_is_read_as_spans_not_objects() -> None:
    """Reading a template costs a few bytes per byte of it (cells as spans over its text),
    not a Python object per cell: ~200 bytes per byte before."""
    row = '"X",999' + ",7" * 15_000 + "\n"
    raw = (CANVAS + row * 10).encode()
    tracemalloc.start()
    try:
        sheet = read_sheet(raw, "t")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(sheet.rows[-1]) == 15_002 and sheet.rows[-1][2].value == "7"
    assert peak < 20 * len(raw), peak


class Counting(str):
    """A text that counts the characters each slice and concatenation of it copies."""

    copied = 0

    def __getitem__(self, key: object) -> Counting:
        part = Counting(str.__getitem__(self, key))  # type: ignore[index]
        Counting.copied += len(part)
        return part

    def __add__(self, other: str) -> Counting:
        joined = Counting(str.__add__(self, other))
        Counting.copied += len(joined)
        return joined


def test_writing_copies_the_text_once_whatever_the_number_of_cells() -> None:
    """Writing N cells copies the file's text about once, not once per cell (40,000 rows
    of --missing zero took 17.6 s as each cell rebuilt the whole text)."""
    text = "id,score\n" + "".join(f"{i},\n" for i in range(3000))
    sheet = read_sheet(text.encode(), "t")
    for r in range(1, len(sheet.rows)):
        sheet.set(r, 1, "0.00")
    sheet.text = Counting(sheet.text)
    Counting.copied = 0
    written = sheet.to_bytes().decode()
    assert written == text.replace(",\n", ",0.00\n").replace("id,0.00", "id,score")
    assert Counting.copied <= 2 * len(text), Counting.copied


def test_the_delimiter_is_the_one_every_row_agrees_with(cli: Cli, tmp_path: Path) -> None:
    """A comma Canvas export whose assignment title holds more semicolons than the header
    has commas (Canvas quotes no semicolon in a comma file) is read with commas."""
    title = "HW 1; part a; b; c; d; e; f; g; h; i; j; k; l; m; n"
    template = CANVAS.replace("HW 1: Sinusoids (5001)", f"{title} (5001)")
    assert template.splitlines()[0].count(";") > template.splitlines()[0].count(",")
    code, stdout, err = run_export(cli, tmp_path, template.encode(), "--column", title)
    assert code == 0, err
    assert "smithjohn" not in stdout and "1 score written" in stdout
    assert (tmp_path / "filled.csv").read_text() == template.replace(
        'of notes",,8.00', 'of notes",14.00,8.00'
    )
