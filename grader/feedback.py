"""A learner's feedback: what `grader submit` shows that learner, as Markdown and as HTML.

It is rendered from the submit view of a results document alone: the file graded, the
score, each hidden case's name, pass or fail and its sentence of the closed vocabulary, the
hint and the likely mistake, and the warnings submit prints. Nothing of a batch's own
fields (digests, paths, the student's record, the visible examples' codes) is read. A
learner's own text (the name of a file or a folder, in a reason) is escaped for each
rendering; a row lost to the machine or to a bug of the grader gets one fixed sentence.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass
from enum import Enum, auto

from grader.names import display, unlinked
from grader.records import Cause
from grader.results import Results

LOST = (
    "Your submission could not be graded this time, because of a problem on the grading "
    "side, not in your work; the course staff will grade it again."
)
HINT = "hint: "
# What Markdown reads as markup where a learner's text stands (a link or an image, raw
# HTML, an autolink in <>, emphasis, code): escaped with a backslash, which CommonMark
# reads as the character itself.
MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#|~&!])")
# The score the course staff set by hand (`grader export --overrides`), where they did: the
# feedback then gives it, so that it never contradicts the grade (their reason never shown).
STAFF_SCORE = "staff_score"


class Part(Enum):
    """What a line of feedback is, which says how each rendering sets it out."""

    TITLE = auto()
    NOTE = auto()  # a paragraph of its own: why not graded, the file, a warning
    SCORE = auto()
    CASE = auto()  # a hidden case's pass or fail, an item of the cases' list
    DETAIL = auto()  # its sentence or its hint, under its case


@dataclass(frozen=True)
class Line:
    """One line of feedback: what part of it the line is, and its words."""

    kind: Part
    text: str
    learners: bool = False  # the text holds what a learner named: escape it


def view(doc: Results) -> list[Line]:
    """Return what `grader submit` shows the learner of ``doc``, line by line."""
    lines = [Line(Part.TITLE, "Feedback on your submission")]
    submission = str(doc.extra.get("submission", ""))
    staff = doc.extra.get(STAFF_SCORE)
    by_staff = isinstance(staff, (int, float)) and not isinstance(staff, bool)
    score = Line(
        Part.SCORE,
        f"Score: {staff:g}/{doc.max_score:g}, set by the course staff"
        if by_staff
        else f"Score: {doc.score:g}/{doc.max_score:g}",
    )
    if not doc.graded:
        if doc.cause is Cause.SUBMISSION:
            lines.append(Line(Part.NOTE, f"Not graded: {doc.error}", learners=True))
        else:
            lines.append(Line(Part.NOTE, LOST))
        return [*lines, score] if by_staff else lines
    if submission:
        lines.append(Line(Part.NOTE, f"File graded: {submission}", learners=True))
    lines.append(score)
    hints: Counter[str] = Counter()
    failing = 0
    for test in doc.tests:
        said = test.output.split("\n")
        sentence = [s for s in said if not s.startswith(HINT)]
        lines.append(Line(Part.CASE, f"{'PASS' if test.passed else 'FAIL'} {test.name}"))
        if test.passed:
            continue
        failing += 1
        # A case's sentence may quote the learner (their file's name, a line of their code).
        lines += [Line(Part.DETAIL, s, learners=True) for s in sentence if s]
        for hint in (s[len(HINT) :] for s in said if s.startswith(HINT)):
            lines.append(Line(Part.DETAIL, f"hint: {hint}"))
            hints[hint] += 1
    if hints:
        hint, count = hints.most_common(1)[0]
        if 2 * count > failing:
            lines.append(Line(Part.NOTE, f"Likely mistake: {hint}"))
    for warning in doc.extra.get("warnings", ()):
        lines.append(Line(Part.NOTE, f"Warning: {warning}", learners=True))
    return lines


def _md_text(line: Line) -> str:
    text = display(line.text)
    return unlinked(MARKDOWN.sub(r"\\\1", text)) if line.learners else text


def to_markdown(doc: Results, lines: list[Line] | None = None) -> str:
    """Return the learner's feedback as Markdown (from ``lines``, its view, where given)."""
    out = []
    for line in view(doc) if lines is None else lines:
        text = _md_text(line)
        if line.kind is Part.TITLE:
            out += [f"# {text}", ""]
        elif line.kind is Part.CASE:
            out.append(f"- {text}")
        elif line.kind is Part.DETAIL:
            out.append(f"  - {text}")
        else:
            out += ["", text, ""]
    return "\n".join(out).replace("\n\n\n", "\n\n").strip() + "\n"


def to_html(doc: Results, *, page: bool = True, lines: list[Line] | None = None) -> str:
    """Return the learner's feedback as HTML: a page, or (``page`` False) a fragment."""
    body, cases = [], []
    for line in view(doc) if lines is None else lines:
        text = html.escape(display(line.text))
        if line.kind is Part.CASE:
            cases.append(f"<li>{text}")
        elif line.kind is Part.DETAIL:
            cases[-1] += f"<br>{text}"
        elif line.kind is Part.TITLE:
            body.append(f"<h1>{text}</h1>" if page else "")
        else:
            if cases:
                body.append("<ul>" + "".join(c + "</li>" for c in cases) + "</ul>")
                cases = []
            body.append(f"<p>{text}</p>")
    if cases:
        body.append("<ul>" + "".join(c + "</li>" for c in cases) + "</ul>")
    inner = "".join(body)
    if not page:
        return inner
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>Feedback</title></head>\n<body>" + inner + "</body></html>\n"
    )
