"""The class report's two renderings, report.md and report.html, from one ClassReport.

Every text a learner chose (an id, a name, a reason) is escaped for the page; the page
loads nothing and runs no script.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from grader.batch.classreport import ClassReport, Learner, build
from grader.batch.manifest import WHOLE
from grader.batch.outdir import REPORT_HTML, REPORT_MD
from grader.files import TEMPLATES, atomic_write
from grader.names import unlinked
from grader.report import limits_line

TEMPLATE = TEMPLATES / "classreport.html"
WIDTH = 100  # report.md stays readable in a terminal this wide
OPEN_LIST = 30  # lists of ids this short show unfolded on the page; longer ones fold


def write_class_report(out: Path, written: Mapping[str, Learner] | None = None) -> ClassReport:
    """Build the class report of ``out`` and write report.html and report.md beside it
    (``written``: the learners a batch has just written, see classreport.build)."""
    report = build(out, written)
    for name, text in ((REPORT_HTML, render_html(report)), (REPORT_MD, render_markdown(report))):
        atomic_write(out / name, text)
    return report


# ---- words shared by both renderings ----


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _apart(r: ClassReport) -> str:
    """Say who the cases' shares leave out: the learners whose whole file failed."""
    whole = r.whole_file
    apart = sum(n for _, n in whole)
    if not apart:
        return ""
    how = ", ".join(f"{code} {n}" for code, n in whole)
    ran = len(r.graded) - apart
    one = apart == 1
    return (
        f"{apart} graded learner{'' if one else 's'} whose whole file failed ({how}) "
        f"{'fails' if one else 'fail'} every case alike, counted apart: each share is of "
        f"the {ran} answers that ran, so it says how many answers the case caught."
    )


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
    if m.layout.exported:
        late = r.ids(lambda x: x.late)
        again = r.ids(lambda x: x.attempts > 0)
        found.insert(0, ("layout", str(m.layout)))
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


# Learners' text (ids, names from an export, reasons naming their files) may hold what a
# Markdown viewer would take for HTML, an entity (`&commat;`), a link, code, a fence,
# emphasis or a table's cell: escaped, it reads as written. A bare address is kept from
# becoming a link too.
_MD_ESCAPES = str.maketrans({c: "\\" + c for c in "\\<>[]`*|#&~"})


def _wrap(text: str, indent: str = "", first: str | None = None) -> list[str]:
    """Wrap a paragraph of report.md, its text escaped (see _MD_ESCAPES)."""
    return textwrap.wrap(
        unlinked(text.translate(_MD_ESCAPES)),
        WIDTH,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_on_hyphens=False,
        # A word cut after its escape's backslash would leave it at a line's end, a line
        # break there, and the character after it markup again: a long name runs long.
        break_long_words=False,
    ) or [first or indent]


def _id_lines(ids: Iterable[str], indent: str = "") -> list[str]:
    return _wrap(", ".join(ids), indent) if ids else [f"{indent}(none)"]


def render_markdown(r: ClassReport) -> str:
    """Return report.md: plain Markdown that reads as well in a terminal, at most 100 wide."""
    counts = r.counts()
    lines = [f"# Class report: {scope(r)}", ""]
    lines += _md_counts(r, counts)
    lines += _md_scores(r, counts["graded"])
    lines += _md_cases(r)
    lines += _md_mistakes(r, counts["graded"])
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


def _md_counts(r: ClassReport, counts: dict[str, int]) -> list[str]:
    lines = ["| " + " | ".join(label for _, label in HEADLINE) + " |"]
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
    return lines


def _md_scores(r: ClassReport, graded: int) -> list[str]:
    lines = [f"## Scores of the {graded} graded, out of {_score(r.max_score)}", "", "```"]
    top = max((b.count for b in r.bars), default=0)
    label_width = max(len(b.label) for b in r.bars)
    for b in r.bars:
        bar = "#" * round(50 * b.count / top) if top else ""
        lines.append(f"{b.label:>{label_width}} | {bar + ' ' if bar else ''}{b.count}")
    return [*lines, "```", ""]


def _md_cases(r: ClassReport) -> list[str]:
    lines = ["## Hidden cases, and the share of the answers that ran that failed each", ""]
    if _apart(r):
        lines += [*_wrap(_apart(r)), ""]
    for c in r.cases:
        how = ", ".join(f"{code} {n}" for code, n in c.how)
        head = f"{c.name}: {c.failed} of {c.graded} failed ({_share(c.failed, c.graded)})"
        lines += _wrap(head + (f": {how}" if how else ""), "  ", "- ")
        lines += _wrap(f"why: {c.why}", "  ")
    return [*lines, ""]


def _md_mistakes(r: ClassReport, graded: int) -> list[str]:
    lines = ["## Mistakes named, most frequent first", ""]
    if not r.mistakes:
        return [*lines, "No mistake was named.", ""]
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
    return [*lines, ""]


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
    out.append(_html_counts(r, counts))
    out.append(
        f'<section id="scores"><h2 id="scores-title">Scores of the {graded} graded, out of '
        f"{_score(r.max_score)}</h2>{_chart(r)}</section>"
    )
    out.append(_html_cases(r))
    out.append(_html_mistakes(r, graded))
    out.append(_html_patterns(r))
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


def _html_counts(r: ClassReport, counts: dict[str, int]) -> str:
    figures = "".join(
        f'<div><dt>{_e(label)}</dt><dd id="n-{key}">{counts[key]}</dd></div>'
        for key, label in HEADLINE
    )
    out = [f'<section id="counts"><h2>The class</h2><dl class="figures">{figures}</dl>']
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
            f'<td class="num">{_share(n, counts["graded"])}</td></tr>'
            for code, n in kinds
        )
        out.append(
            "<h3>Outcomes met</h3><p class=note>Graded learners with at least one case of each "
            'outcome.</p><table id="outcomes"><thead><tr><th>outcome</th><th>learners</th>'
            f"<th>share</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(out) + "</section>"


def _html_cases(r: ClassReport) -> str:
    rows = "".join(
        f'<tr data-case="{_e(c.name)}"><td class="name">{_e(c.name)}</td>'
        f'<td class="num failed">{c.failed}</td><td class="num share">'
        f"{_share(c.failed, c.graded)}</td><td>"
        + _e(", ".join(f"{code} {n}" for code, n in c.how))
        + f"</td><td>{_e(c.why)}</td></tr>"
        for c in r.cases
    )
    apart = f' <span id="whole-file">{_e(_apart(r))}</span>' if _apart(r) else ""
    return (
        '<section id="cases"><h2>Hidden cases</h2><p class=note>The share of the graded '
        f"answers that ran that failed each case, and how.{apart}</p><table><thead><tr>"
        "<th>case</th><th>failed</th>"
        f"<th>share</th><th>how</th><th>why</th></tr></thead><tbody>{rows}</tbody></table>"
        "</section>"
    )


def _html_mistakes(r: ClassReport, graded: int) -> str:
    items = "".join(
        f'<li data-mistake="{_e(m.code)}"><p><code>{_e(m.code)}</code>: '
        f'<span class="count">{len(m.ids)}</span> ({_share(len(m.ids), graded)} of the graded)'
        f'</p><p class="hint">{_e(m.hint)}</p>{_ids_html(m.ids, f"who-{_e(m.code)}")}</li>'
        for m in r.mistakes
    )
    return (
        '<section id="mistakes"><h2>Mistakes named, most frequent first</h2>'
        + (f"<ol>{items}</ol>" if items else "<p>No mistake was named.</p>")
        + f"<h3>A wrong answer, and no mistake named ({len(r.unnamed)})</h3>"
        + _ids_html(r.unnamed, "unnamed")
        + "</section>"
    )


def _html_patterns(r: ClassReport) -> str:
    unknown = (
        f"<p class=note>{r.examples_unknown} results hold no verdicts on the visible examples: "
        "grade them again to place them here.</p>"
        if r.examples_unknown
        else ""
    )
    return (
        '<section id="patterns"><h2>Examples against hidden cases</h2>'
        f"<h3>Pass the visible examples, fail hidden cases ({len(r.examples_only)})</h3>"
        + _ids_html(r.examples_only, "examples-only")
        + f"<h3>Pass everything ({len(r.passed_all)})</h3>"
        + _ids_html(r.passed_all, "passed-all")
        + unknown
        + "</section>"
    )
