"""The class report: what a class got wrong, built from a batch's output folder alone.

It reads batch.json and results/ID.json, nothing else, so `grader report OUT` and
`grader merge` rebuild it anywhere. It is for staff, never for learners: it names the
hidden cases with their whys, and every learner's id beside their mistakes.
"""

from __future__ import annotations

import html
import textwrap
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader import results
from grader.batch.manifest import WHOLE, Manifest, read_manifest
from grader.batch.outdir import REPORT_HTML, REPORT_MD, result_path
from grader.errors import GraderError
from grader.files import TEMPLATES, atomic_write
from grader.names import cell
from grader.records import Outcome
from grader.report import limits_line

TEMPLATE = TEMPLATES / "classreport.html"
PASSED = Outcome.PASSED.value
# Outcomes in the order the report lists them: the enum's, so the most benign first.
OUTCOME_ORDER = [o.value for o in Outcome]
WIDTH = 100  # report.md stays readable in a terminal this wide
OPEN_LIST = 30  # lists of ids this short show unfolded on the page; longer ones fold


@dataclass(frozen=True)
class Learner:
    """One results file, as much of it as the class report needs."""

    id: str
    score: float
    max_score: float
    outcomes: dict[str, str]
    diagnoses: frozenset[str]
    examples: dict[str, str] | None  # None: not recorded (results from an older grader)
    error: str | None  # why it was not graded; None when it was
    # What a platform's export says: handed in late, and how many other attempts it holds.
    late: bool = False
    attempts: int = 0

    @property
    def graded(self) -> bool:
        return self.error is None

    @property
    def passed(self) -> bool:
        """Return True when it was graded and passed every hidden case."""
        return self.graded and all(o == PASSED for o in self.outcomes.values())

    @property
    def passed_examples(self) -> bool:
        """Return True when its outcomes on the visible examples were recorded, all passed."""
        return self.examples is not None and all(o == PASSED for o in self.examples.values())

    def has(self, outcome: str) -> bool:
        return outcome in self.outcomes.values()


def read_learner(path: Path, entry_id: str) -> Learner:
    """Read one results/ID.json; a missing or unreadable one is a usage error."""
    try:
        doc = results.read(path)
    except FileNotFoundError:
        raise GraderError(f"{str(path)!r} is missing: the output folder is incomplete") from None
    except (OSError, ValueError) as exc:  # a folder anyone may have edited: a usage error
        raise GraderError(f"cannot read {str(path)!r}: {type(exc).__name__}") from None
    examples = doc.stamp.get("examples")
    # A platform's export names the student: the report lists them by id and name.
    student = doc.extra.get("student")
    name = str(student.get("name", ""))[:200] if isinstance(student, dict) else ""
    # What the report shows of them goes through the one naming function: an older
    # output's id or a reason quoting a file name may hold anything a learner chose.
    return Learner(
        id=cell(f"{entry_id} ({name})" if name else entry_id),
        score=doc.score,
        max_score=doc.max_score,
        outcomes=doc.outcomes,
        diagnoses=frozenset(t.diagnosis for t in doc.tests if t.diagnosis is not None),
        examples=None
        if not isinstance(examples, dict)
        else {str(k): str(v) for k, v in examples.items()},
        error=None if doc.error is None else cell(doc.error),
        late=isinstance(student, dict) and student.get("late") is True,
        attempts=len(student.get("attempts") or ()) if isinstance(student, dict) else 0,
    )


@dataclass(frozen=True)
class CaseLine:
    """A hidden case and how the graded class fared on it."""

    name: str
    why: str
    failed: int
    graded: int
    how: tuple[tuple[str, int], ...]  # failing outcome kinds, most frequent first


@dataclass(frozen=True)
class Mistake:
    """A mistake the diagnosis named, and who made it."""

    code: str
    hint: str
    ids: tuple[str, ...]


@dataclass(frozen=True)
class Bar:
    """One bar of the score chart: the graded learners whose score falls in [low, high)."""

    label: str
    low: float
    high: float
    count: int


@dataclass(frozen=True)
class ClassReport:
    """Everything the class report shows; report.html and report.md render this one object."""

    manifest: Manifest
    learners: tuple[Learner, ...]
    cases: tuple[CaseLine, ...]
    mistakes: tuple[Mistake, ...]
    bars: tuple[Bar, ...]
    max_score: float

    def ids(self, keep: Callable[[Learner], bool]) -> tuple[str, ...]:
        return tuple(x.id for x in self.learners if keep(x))

    @property
    def graded(self) -> tuple[Learner, ...]:
        return tuple(x for x in self.learners if x.graded)

    @property
    def not_graded(self) -> tuple[tuple[str, str], ...]:
        return tuple((x.id, x.error) for x in self.learners if x.error is not None)

    def counts(self) -> dict[str, int]:
        """Return the headline figures, keyed as the HTML's element ids name them."""
        graded = self.graded
        return {
            "submissions": len(self.learners),
            "graded": len(graded),
            "passed": sum(1 for x in graded if x.passed),
            "failed": sum(1 for x in graded if not x.passed),
            "not-graded": len(self.learners) - len(graded),
            "timed-out": sum(1 for x in graded if x.has(Outcome.TIMEOUT.value)),
            "crashed": sum(1 for x in graded if x.has(Outcome.CRASH.value)),
        }

    def outcome_counts(self) -> list[tuple[str, int]]:
        """Return each failing outcome kind with the number of graded learners who met it."""
        found = Counter(o for x in self.graded for o in set(x.outcomes.values()) if o != PASSED)
        return sorted(found.items(), key=lambda kv: _outcome_rank(kv[0]))

    @property
    def examples_only(self) -> tuple[str, ...]:
        """Ids that pass every visible example but fail some hidden case."""
        return self.ids(lambda x: x.graded and not x.passed and x.passed_examples)

    @property
    def unnamed(self) -> tuple[str, ...]:
        """Ids with a wrong answer on some hidden case and no mistake named for any: the
        learners a staff member must read, since no hint told them what went wrong."""
        wrong = Outcome.WRONG_ANSWER.value
        return self.ids(lambda x: x.graded and x.has(wrong) and not x.diagnoses)

    @property
    def passed_all(self) -> tuple[str, ...]:
        """Ids that pass every hidden case and every visible example."""
        return self.ids(lambda x: x.passed and x.passed_examples)

    @property
    def examples_unknown(self) -> int:
        return sum(1 for x in self.graded if x.examples is None)


def _outcome_rank(code: str) -> int:
    return OUTCOME_ORDER.index(code) if code in OUTCOME_ORDER else len(OUTCOME_ORDER)


def score_bars(scores: Sequence[float], max_score: float) -> tuple[Bar, ...]:
    """Return the score chart's bars: one per whole score up to 20, else ten equal bins."""
    whole = max_score == int(max_score) and all(s == int(s) for s in scores)
    if whole and max_score <= 20:
        n = int(max_score)
        counts = Counter(int(s) for s in scores)
        return tuple(Bar(f"{i}", i, i + 1, counts.get(i, 0)) for i in range(n + 1))
    width = max_score / 10 if max_score > 0 else 1.0
    counts = Counter(min(int(s / width), 9) for s in scores)
    return tuple(
        Bar(f"{i * width:g}-{(i + 1) * width:g}", i * width, (i + 1) * width, counts.get(i, 0))
        for i in range(10)
    )


def build(out: Path) -> ClassReport:
    """Read an output folder's manifest and results; return its class report."""
    from grader.verdict.diagnose import HINTS

    manifest = read_manifest(out)
    learners = tuple(
        read_learner(result_path(out, entry_id), entry_id) for entry_id in manifest.ids
    )
    graded = [x for x in learners if x.graded]
    cases = []
    for case in manifest.cases:
        failing = Counter(
            x.outcomes.get(case.name, "missing")
            for x in graded
            if x.outcomes.get(case.name) != PASSED
        )
        cases.append(
            CaseLine(
                name=case.name,
                why=case.why,
                failed=sum(failing.values()),
                graded=len(graded),
                how=tuple(sorted(failing.items(), key=lambda kv: (-kv[1], kv[0]))),
            )
        )
    made: dict[str, list[str]] = {}
    for x in graded:
        for code in sorted(x.diagnoses):
            made.setdefault(code, []).append(x.id)
    mistakes = sorted(
        (Mistake(code, HINTS.get(code, ""), tuple(ids)) for code, ids in made.items()),
        key=lambda m: (-len(m.ids), m.code),
    )
    max_score = sum(c.max_score for c in manifest.cases)
    return ClassReport(
        manifest=manifest,
        learners=learners,
        cases=tuple(cases),
        mistakes=tuple(mistakes),
        bars=score_bars([x.score for x in graded], max_score),
        max_score=max_score,
    )


def write_class_report(out: Path) -> ClassReport:
    """Build the class report of ``out`` and write report.html and report.md beside it."""
    report = build(out)
    for name, text in ((REPORT_HTML, render_html(report)), (REPORT_MD, render_markdown(report))):
        atomic_write(out / name, text)
    return report


# ---- words shared by both renderings ----


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _score(x: float) -> str:
    return f"{x:g}"


def scope(r: ClassReport) -> str:
    """Return what the report covers: the whole class, or one shard of it."""
    m = r.manifest
    if m.shard == WHOLE:
        shards = len({run.shard for run in m.runs})
        merged = f", merged from {shards} shards" if shards > 1 else ""
        return f"the whole class: {m.class_size} submissions{merged}"
    return f"shard {m.shard}: {len(m.ids)} of the class's {m.class_size} submissions"


def facts(r: ClassReport) -> list[tuple[str, str]]:
    """Return the grading's own facts as (label, text) pairs."""
    m = r.manifest
    sandboxes = sorted({run.sandbox for run in m.runs})
    if len(sandboxes) <= 1:
        sandbox = sandboxes[0] if sandboxes else "-"
    else:
        sandbox = "; ".join(f"shard {run.shard}: {run.sandbox}" for run in m.runs)
    total = sum(run.seconds for run in m.runs)
    shards = len({run.shard for run in m.runs})
    if len(m.runs) == 1:
        duration = f"{total:.1f} s"
    elif shards == 1:  # one share, resumed: every run counts, the last one beside
        duration = f"{total:.1f} s in {len(m.runs)} runs, the last {m.runs[-1].seconds:.1f} s"
    else:
        longest = max(run.seconds for run in m.runs)
        duration = (
            f"{shards} shards in {len(m.runs)} runs, the longest {longest:.1f} s, "
            f"{total:.1f} s in all"
        )
    limits = limits_line(m.limits).removeprefix("limits: ") if m.limits else "-"
    found = [
        ("sandbox", sandbox),
        ("limits", limits),
        ("tolerance", m.tolerance),
        ("suite digest", m.suite),
        ("duration", duration),
    ]
    if m.layout != "flat":
        late = r.ids(lambda x: x.late)
        again = r.ids(lambda x: x.attempts > 0)
        found.insert(0, ("layout", m.layout))
        found.append(("late (no penalty applied)", ", ".join(late) if late else "none"))
        found.append(("graded on a later attempt", ", ".join(again) if again else "none"))
    return found


HEADLINE = [
    ("submissions", "submissions"),
    ("graded", "graded"),
    ("passed", "passed every hidden case"),
    ("failed", "failed some"),
    ("not-graded", "not graded"),
    ("timed-out", "timed out"),
    ("crashed", "crashed"),
]


# ---- report.md ----


def _wrap(text: str, indent: str = "", first: str | None = None) -> list[str]:
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_on_hyphens=False,
    ) or [first or indent]


def _id_lines(ids: Iterable[str], indent: str = "") -> list[str]:
    return _wrap(", ".join(ids), indent) if ids else [f"{indent}(none)"]


def render_markdown(r: ClassReport) -> str:
    """Return report.md: plain Markdown that reads as well in a terminal, at most 100 wide."""
    counts = r.counts()
    lines = [f"# Class report: {scope(r)}", ""]
    lines += ["| " + " | ".join(label for _, label in HEADLINE) + " |"]
    lines += ["|" + "|".join("---:" for _ in HEADLINE) + "|"]
    lines += ["| " + " | ".join(str(counts[key]) for key, _ in HEADLINE) + " |", ""]
    if r.not_graded:
        lines += ["Not graded:"]
        for entry_id, reason in r.not_graded:
            lines += _wrap(f"{entry_id}: {reason}", "  ", "- ")
        lines.append("")
    kinds = r.outcome_counts()
    if kinds:
        lines += _wrap(
            "Graded learners with at least one case of each outcome: "
            + ", ".join(f"{code} {n}" for code, n in kinds)
            + "."
        )
        lines.append("")
    graded = counts["graded"]
    lines += [f"## Scores of the {graded} graded, out of {_score(r.max_score)}", "", "```"]
    top = max((b.count for b in r.bars), default=0)
    label_width = max(len(b.label) for b in r.bars)
    for b in r.bars:
        bar = "#" * round(50 * b.count / top) if top else ""
        lines.append(f"{b.label:>{label_width}} | {bar + ' ' if bar else ''}{b.count}")
    lines += ["```", ""]
    lines += ["## Hidden cases, and the share of the graded class that failed each", ""]
    for c in r.cases:
        how = ", ".join(f"{code} {n}" for code, n in c.how)
        head = f"{c.name}: {c.failed} of {c.graded} failed ({_share(c.failed, c.graded)})"
        lines += _wrap(head + (f": {how}" if how else ""), "  ", "- ")
        lines += _wrap(f"why: {c.why}", "  ")
    lines.append("")
    lines += ["## Mistakes named, most frequent first", ""]
    if not r.mistakes:
        lines += ["No mistake was named.", ""]
    for i, m in enumerate(r.mistakes, 1):
        n = len(m.ids)
        number = f"{i}. "
        indent = " " * len(number)
        lines += _wrap(
            f"{m.code}: {n} learner{'s' if n != 1 else ''} ({_share(n, graded)} of the graded)",
            indent,
            number,
        )
        if m.hint:
            lines += _wrap(f"hint: {m.hint}", indent)
        lines += _wrap("learners: " + ", ".join(m.ids), indent)
    if r.mistakes:
        lines.append("")
    lines += [f"## A wrong answer, and no mistake named ({len(r.unnamed)})", ""]
    lines += [*_id_lines(r.unnamed), ""]
    lines += [f"## Pass the visible examples, fail hidden cases ({len(r.examples_only)})", ""]
    lines += [*_id_lines(r.examples_only), ""]
    lines += [f"## Pass everything ({len(r.passed_all)})", ""]
    lines += [*_id_lines(r.passed_all), ""]
    if r.examples_unknown:
        lines += _wrap(
            f"({r.examples_unknown} results hold no verdicts on the visible examples: grade "
            "them again to place them in the two lists above.)"
        )
        lines.append("")
    lines += ["## Grading", ""]
    for label, text in facts(r):
        lines += _wrap(f"{label}: {text}", "  ", "- ")
    return "\n".join(lines) + "\n"


# ---- report.html ----


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _chart(r: ClassReport) -> str:
    """Return the score distribution as inline SVG: one labelled bar per bin."""
    bars = r.bars
    top = max((b.count for b in bars), default=0) or 1
    slot, plot, base = 48, 160, 190
    width = slot * len(bars) + 20
    parts = [
        f'<svg id="score-chart" viewBox="0 0 {width} 230" width="{width}" role="img" '
        f'aria-labelledby="scores-title">',
        f'<line x1="10" y1="{base}" x2="{width - 10}" y2="{base}" class="axis"/>',
    ]
    for i, b in enumerate(bars):
        h = round(plot * b.count / top, 1)
        x = 10 + i * slot + 6
        parts.append(
            f'<rect class="bar" x="{x}" y="{base - h}" width="{slot - 12}" height="{h}" '
            f'data-label="{_e(b.label)}" data-count="{b.count}"><title>score {_e(b.label)}: '
            f"{b.count}</title></rect>"
            f'<text class="count" x="{x + (slot - 12) / 2}" y="{base - h - 4}">{b.count}</text>'
            f'<text class="label" x="{x + (slot - 12) / 2}" y="{base + 16}">{_e(b.label)}</text>'
        )
    parts.append(f'<text class="label" x="{width / 2}" y="{base + 36}">score</text></svg>')
    return "".join(parts)


def _ids_html(ids: Sequence[str], list_id: str) -> str:
    if not ids:
        return f'<p id="{list_id}" class="ids" data-count="0">(none)</p>'
    items = "".join(f"<li>{_e(i)}</li>" for i in ids)
    unfold = " open" if len(ids) <= OPEN_LIST else ""
    return (
        f"<details{unfold}><summary>{len(ids)} learner{'s' if len(ids) != 1 else ''}</summary>"
        f'<ul id="{list_id}" class="ids" data-count="{len(ids)}">{items}</ul></details>'
    )


def render_html(r: ClassReport) -> str:
    """Return report.html: one self-contained page, no script, nothing loaded from anywhere."""
    counts = r.counts()
    graded = counts["graded"]
    out: list[str] = [f"<header><h1>Class report</h1><p>{_e(scope(r))}</p></header><main>"]
    figures = "".join(
        f'<div><dt>{_e(label)}</dt><dd id="n-{key}">{counts[key]}</dd></div>'
        for key, label in HEADLINE
    )
    out.append(f'<section id="counts"><h2>The class</h2><dl class="figures">{figures}</dl>')
    if r.not_graded:
        rows = "".join(
            f'<tr><td class="id">{_e(i)}</td><td>{_e(reason)}</td></tr>'
            for i, reason in r.not_graded
        )
        out.append(
            '<h3>Not graded</h3><table id="not-graded"><thead><tr><th>learner</th>'
            f"<th>reason</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    kinds = r.outcome_counts()
    if kinds:
        rows = "".join(
            f'<tr data-outcome="{_e(code)}"><td>{_e(code)}</td><td class="num">{n}</td>'
            f'<td class="num">{_share(n, graded)}</td></tr>'
            for code, n in kinds
        )
        out.append(
            "<h3>Outcomes met</h3><p class=note>Graded learners with at least one case of each "
            'outcome.</p><table id="outcomes"><thead><tr><th>outcome</th><th>learners</th>'
            f"<th>share</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    out.append("</section>")
    out.append(
        f'<section id="scores"><h2 id="scores-title">Scores of the {graded} graded, out of '
        f"{_score(r.max_score)}</h2>{_chart(r)}</section>"
    )
    rows = "".join(
        f'<tr data-case="{_e(c.name)}"><td class="name">{_e(c.name)}</td>'
        f'<td class="num failed">{c.failed}</td><td class="num share">'
        f"{_share(c.failed, c.graded)}</td><td>"
        + _e(", ".join(f"{code} {n}" for code, n in c.how))
        + f"</td><td>{_e(c.why)}</td></tr>"
        for c in r.cases
    )
    out.append(
        '<section id="cases"><h2>Hidden cases</h2><p class=note>The share of the graded class '
        "that failed each case, and how.</p><table><thead><tr><th>case</th><th>failed</th>"
        f"<th>share</th><th>how</th><th>why</th></tr></thead><tbody>{rows}</tbody></table>"
        "</section>"
    )
    items = "".join(
        f'<li data-mistake="{_e(m.code)}"><p><code>{_e(m.code)}</code>: '
        f'<span class="count">{len(m.ids)}</span> ({_share(len(m.ids), graded)} of the graded)'
        f'</p><p class="hint">{_e(m.hint)}</p>{_ids_html(m.ids, f"who-{_e(m.code)}")}</li>'
        for m in r.mistakes
    )
    out.append(
        '<section id="mistakes"><h2>Mistakes named, most frequent first</h2>'
        + (f"<ol>{items}</ol>" if items else "<p>No mistake was named.</p>")
        + f"<h3>A wrong answer, and no mistake named ({len(r.unnamed)})</h3>"
        + _ids_html(r.unnamed, "unnamed")
        + "</section>"
    )
    unknown = (
        f"<p class=note>{r.examples_unknown} results hold no verdicts on the visible examples: "
        "grade them again to place them here.</p>"
        if r.examples_unknown
        else ""
    )
    out.append(
        '<section id="patterns"><h2>Examples against hidden cases</h2>'
        f"<h3>Pass the visible examples, fail hidden cases ({len(r.examples_only)})</h3>"
        + _ids_html(r.examples_only, "examples-only")
        + f"<h3>Pass everything ({len(r.passed_all)})</h3>"
        + _ids_html(r.passed_all, "passed-all")
        + unknown
        + "</section>"
    )
    rows = "".join(
        f'<div><dt>{_e(label)}</dt><dd class="fact">{_e(text)}</dd></div>'
        for label, text in facts(r)
    )
    out.append(f'<section id="facts"><h2>Grading</h2><dl class="facts">{rows}</dl></section>')
    out.append("</main>")
    page = TEMPLATE.read_text(encoding="utf-8")
    return page.replace("<!--TITLE-->", _e(f"Class report: {scope(r)}")).replace(
        "<!--BODY-->", "".join(out)
    )
