"""Gradebook files shaped as each platform writes them, and batch outputs to export from.

Each template is built beside a download of the same class (tests/batch/test_platforms.py's
`canvas`, `moodle` and `blackboard` builders): the same user ids, participants and
usernames. Where each shape comes from is said above it.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from grader import results
from grader.batch.manifest import WHOLE, CaseInfo, for_batch, write_manifest
from grader.batch.outdir import RESULTS_DIR, result_path
from grader.batch.platforms import layout_of
from grader.problem.cases import load_problem
from grader.records import SCHEMA_VERSION, Cause
from grader.results import CaseEntry, Results, not_graded
from grader.sandbox.limits import Limits
from tests.conftest import ROOT

HIDDEN = load_problem(ROOT).hidden
WRONG = "wrong values: part of the table is outside the tolerance"

# Canvas, Grades > Export: as canvas-lms's lib/gradebook_exporter.rb writes it (Ruby's CSV:
# "\n" line endings, quotes only where a cell needs them): Student, ID, SIS User ID, SIS
# Login ID, Section, a custom column (read only), a `Title (id)` column per assignment,
# then the totals; a `Manual Posting` row for an assignment that posts by hand; the
# `    Points Possible` row, `(read only)` under what no import sets. The user ids are the
# download's (`smithjohn_12345_67991_solution.py`); 67890 handed nothing in; the last row
# is Canvas's test student.
CANVAS = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Notes,HW 1: Sinusoids (5001),"
    "HW 2: Rotary (5002),Current Points,Final Points,Current Score,Unposted Current Score,"
    "Final Score,Unposted Final Score\n"
    ",,,,,,Manual Posting,,,,,,,\n"
    "    Points Possible,,,,,(read only),20.00,10.00,(read only),(read only),(read only),"
    "(read only),(read only),(read only)\n"
    '"Smith, John",12345,S12345,jsmith,Section A,"two lines\nof notes",,8.00,8.00,8.00,'
    "26.67,26.67,26.67,26.67\n"
    '"Doe, Jane",23456,S23456,jdoe,Section A,,5.00,,5.00,5.00,25.00,25.00,25.00,25.00\n'
    '"=Student, Two",34567,S34567,student2,Section B,@note,,,0.00,0.00,,,0.00,0.00\n'
    '"Lee, Ann",45678,S45678,alee,Section B,,EX,,0.00,0.00,,,0.00,0.00\n'
    '"Kim, Bo",56789,S56789,kbo,Section B,,N/A,,0.00,0.00,,,0.00,0.00\n'
    '"Ng, Kim",67890,S67890,kng,Section B,,,,0.00,0.00,,,0.00,0.00\n'
    '"Student, Test",99999,,,Section A,,,,0.00,0.00,,,0.00,0.00\n'
)


# The same, as a user with Canvas's "semicolons" and "byte order mark" export options and
# a decimal comma (a French locale) downloads it.
def semicolons(text: str) -> str:
    """Return a Canvas export as that user downloads it: a BOM, semicolons, decimal commas
    (and a name holding a comma no longer quoted, as no semicolon is in it)."""
    text = re.sub(r"([0-9])\.([0-9])", r"\1,\2", text.replace(",", ";"))
    return "\ufeff" + re.sub(r'"([^"\n;]*); ([^"\n;]*)"', r"\1, \2", text)


CANVAS_SEMICOLONS = semicolons(CANVAS)

# Moodle, the assignment's offline grading worksheet: as mod/assign's gradingtable.php
# writes it for download (a UTF-8 BOM and PHP's fputcsv quoting, which quotes any cell
# with a space): Identifier ("Participant N", N as in the download's folders
# `John Smith_1001_assignsubmission_file_`), the name and email, Status, Grade, Maximum
# Grade (the English pack's `maxgrade`, set twice there: the later "Maximum Grade" is the
# one shown), Grade can be changed, the dates, Feedback comments. 1004 submitted nothing; 1005's
# grade is locked in the gradebook ("Grade can be changed": No).
MOODLE_EN = (
    '\ufeffIdentifier,"Full name","Email address",Status,Grade,"Maximum Grade",'
    '"Grade can be changed","Last modified (submission)","Last modified (grade)",'
    '"Feedback comments"\n'
    '"Participant 1001","John Smith",john@example.edu,"Submitted for grading",,100.00,Yes,'
    '"Friday, 1 March 2024, 10:00 AM",-,\n'
    '"Participant 1002","Zoë O\'Brien",zoe@example.edu,"Submitted for grading",,100.00,'
    'Yes,"Friday, 1 March 2024, 11:00 AM",-,"See me after class"\n'
    '"Participant 1003","Ann Lee",ann@example.edu,"Submitted for grading",,100.00,Yes,'
    '"Friday, 1 March 2024, 12:00 PM",-,\n'
    '"Participant 1004","Max Muster",max@example.edu,"No submission",,100.00,Yes,-,-,\n'
    '"Participant 1005","Lou Locked",lou@example.edu,"Submitted for grading",55.00,100.00,'
    'No,"Friday, 1 March 2024, 1:00 PM","Saturday, 2 March 2024, 9:00 AM","Seen in class"\n'
)
# The same worksheet downloaded in French: Moodle's French strings (its language pack's
# assign strings: Identifiant, Note maximale, La note peut être modifiée, Dernière
# modification (note)), "Participant" with no space before the number, a decimal comma
# (quoted, as the delimiter is a comma), Oui and Non. Its feedback field's header is the
# feedback type's own name, found by where it stands: after the grade's date.
MOODLE_FR = (
    '\ufeffIdentifiant,"Nom complet","Adresse de courriel",Statut,Note,"Note maximale",'
    '"La note peut être modifiée","Dernière modification (travail remis)",'
    '"Dernière modification (note)","Feedback par commentaires"\n'
    'Participant1001,"John Smith",john@example.edu,"Remis pour évaluation",,"100,00",Oui,'
    '"vendredi 1 mars 2024, 10:00",-,\n'
    'Participant1002,"Zoë O\'Brien",zoe@example.edu,"Remis pour évaluation",,"100,00",'
    'Oui,"vendredi 1 mars 2024, 11:00",-,\n'
    'Participant1003,"Ann Lee",ann@example.edu,"Remis pour évaluation",,"100,00",Oui,'
    '"vendredi 1 mars 2024, 12:00",-,\n'
    'Participant1004,"Max Muster",max@example.edu,"Non remis",,"100,00",Oui,-,-,\n'
    'Participant1005,"Lou Locked",lou@example.edu,"Remis pour évaluation","55,00","100,00",'
    'Non,"vendredi 1 mars 2024, 13:00","samedi 2 mars 2024, 09:00",Vu\n'
)
# The same worksheet downloaded in Spanish, a language export has no strings of (its
# columns are found by where Moodle puts them): the Spanish pack's strings, "Participante"
# with no space before the number, Sí and No, and a feedback type's field after the
# grade's date.
MOODLE_ES = (
    '\ufeffIdentificador,"Nombre completo","Dirección de correo",Estado,Calificación,'
    '"Calificación máxima","La calificación puede cambiarse",'
    '"Última modificación (entrega)","Última modificación (calificación)",'
    '"Comentarios de retroalimentación"\n'
    'Participante1001,"John Smith",john@example.edu,"Enviado para calificar",,100.00,Sí,'
    '"viernes, 1 de marzo de 2024, 10:00",-,\n'
    'Participante1002,"Zoë O\'Brien",zoe@example.edu,"Enviado para calificar",,100.00,Sí,'
    '"viernes, 1 de marzo de 2024, 11:00",-,\n'
    'Participante1003,"Ann Lee",ann@example.edu,"Enviado para calificar",,100.00,Sí,'
    '"viernes, 1 de marzo de 2024, 12:00",-,\n'
    'Participante1004,"Max Muster",max@example.edu,"Sin entrega",,100.00,Sí,-,-,\n'
    'Participante1005,"Lou Locked",lou@example.edu,"Enviado para calificar",55.00,100.00,'
    'No,"viernes, 1 de marzo de 2024, 13:00","sábado, 2 de marzo de 2024, 09:00",Visto\n'
)

# Blackboard, Grade Center > Work Offline > Download (Full Grade Center, tab-delimited):
# as Blackboard Learn's help on working offline describes it, a `.xls` that is UTF-16 text
# with its mark, tab-delimited, every cell in quotes here; Username is each student's key
# (the download's `HW 1_Sinusoid_jsmith_attempt_...`), and each column is headed
# `Title [Total Pts: P Score] |id`, the calculated ones `up to P`. CRLF line endings.
BLACKBOARD_ROWS = [
    [
        "Last Name",
        "First Name",
        "Username",
        "Student ID",
        "Last Access",
        "Availability",
        "Weighted Total [Total Pts: up to 0 Percentage] |2001",
        "Total [Total Pts: up to 30 Score] |2002",
        "HW 1 Sinusoid [Total Pts: 10 Score] |2003",
        "Quiz 1 [Total Pts: 20 Score] |2004",
    ],
    ["Smith", "John", "jsmith", "1001", "2024-03-02 09:31:00", "Yes", "", "15.00", "", "15"],
    ["Lee", "Alice", "alee", "1002", "2024-03-01 10:02:00", "Yes", "", "0.00", "", ""],
    ["Ng", "Kim", "kng", "1003", "", "Yes", "", "0.00", "", ""],
]


Rows = list[list[str]]


def blackboard_download(rows: Rows = BLACKBOARD_ROWS) -> bytes:
    """The Work Offline download: UTF-16 with its mark, tabs, every cell quoted, CRLF."""
    text = "".join("\t".join(f'"{c}"' for c in row) + "\r\n" for row in rows)
    return codecs.BOM_UTF16_LE + text.encode("utf-16-le")


def blackboard_comma(rows: Rows = BLACKBOARD_ROWS) -> bytes:
    """The download with Delimiter Type Comma: a `.csv`, every cell in quotes, as its help
    asks of comma-delimited files."""
    return "".join(",".join(f'"{c}"' for c in row) + "\r\n" for row in rows).encode()


def blackboard_resaved(rows: Rows = BLACKBOARD_ROWS) -> bytes:
    """The download as a spreadsheet re-saves it as "CSV UTF-8": a mark, commas, quotes only
    where a cell needs them, CRLF."""
    text = "".join(",".join(row) + "\r\n" for row in rows)
    return codecs.BOM_UTF8 + text.encode("utf-8")


def blackboard_unicode_text(rows: Rows = BLACKBOARD_ROWS) -> bytes:
    """The download re-saved by a spreadsheet as "Unicode Text": UTF-16 with its mark, tabs,
    no quotes."""
    text = "".join("\t".join(row) + "\r\n" for row in rows)
    return codecs.BOM_UTF16_LE + text.encode("utf-16-le")


def graded(score: int, *, relpath: str = "", name: str = "", hint: bool = False) -> Results:
    """A results document as a batch writes it: ``score`` of the ten hidden cases passed."""
    tests = tuple(
        CaseEntry(
            name=c.name,
            passed=i < score,
            score=1.0 if i < score else 0.0,
            max_score=1.0,
            output="passed" if i < score else WRONG,
            outcome="passed" if i < score else "wrong_answer",
        )
        for i, c in enumerate(HIDDEN)
    )
    return Results(
        score=float(score),
        max_score=float(len(HIDDEN)),
        output="",
        tests=tests,
        extra={
            "schema_version": SCHEMA_VERSION,
            "mode": "submit",
            "submission": "solution.py",
            "warnings": [],
            "batch": {"path": relpath, "sha256": "0" * 64},
            "student": {"id": "", "name": name, "late": False, "attempts": []},
        },
        execution_time=1.0,
    )


def lost(message: str, cause: Cause = Cause.ENVIRONMENT) -> Results:
    """A results document of a row the grader could not grade."""
    return not_graded([(c.name, c.max_score) for c in HIDDEN], message, submission="x", cause=cause)


def batch_out(out: Path, layout: str, docs: dict[str, Results]) -> Path:
    """Write a batch's output folder holding ``docs`` as its results, read in ``layout``."""
    (out / RESULTS_DIR).mkdir(parents=True)
    for entry_id, doc in docs.items():
        # As a batch records a student of an export, graded or not: under the id it gave.
        student = doc.extra.get("student") or {"name": "", "late": False, "attempts": []}
        if layout != "flat" and not student.get("id"):
            doc = doc.with_extra(student={**student, "id": entry_id})
        results.write(result_path(out, entry_id), doc)
    ids = sorted(docs)
    manifest = for_batch(
        shard=WHOLE,
        suite="0" * 64,
        tolerance="|got - want| <= 1e-06 + 1e-06 * |want|",
        limits=Limits()._asdict(),
        cases=[CaseInfo(c.name, c.why, c.max_score) for c in HIDDEN],
        class_ids=ids,
        ids=ids,
        sandbox="bwrap",
        seconds=1.0,
        graded=len(ids),
        settings={},
        layout=layout_of(layout),
    )
    write_manifest(out, manifest)
    return out
