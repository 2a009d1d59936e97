"""feedback/ID.md and feedback/ID.html: what `grader submit` shows each learner, written by
`batch` and by `merge`, a learner's own text escaped, a lost row said in one fixed sentence."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest

from grader.feedback import LOST
from tests.conftest import CORPUS, ROOT, Cli, assert_feedback_closed

pytestmark = pytest.mark.slow  # every test grades a class

RIGHT = (ROOT / "solutions" / "reference.py").read_text()
SWAPPED = (CORPUS / "wrong" / "swapped.py").read_text()
EVIL = "<b>x<i>_*[y](z)#.py"  # a name a learner chose, markup in Markdown and in HTML


def test_batch_writes_each_learners_feedback(cli: Cli, tmp_path: Path) -> None:
    """Each row gets its pair of files: the score, each case, the hint; the learner's own
    name escaped; nothing of the batch's own fields (digests, paths, the student)."""
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ada.py").write_text(RIGHT)
    (klass / "bob.py").write_text(SWAPPED)
    (klass / "eve").mkdir()
    (klass / "eve" / EVIL).write_text(RIGHT)
    (klass / "nil").mkdir()
    (klass / "nil" / "notes.txt").write_text("no code")
    out = tmp_path / "out"
    code, _, err = cli("batch", klass, "--out", out, "--no-progress")
    assert code == 0, err
    folder = out / "feedback"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{who}.{kind}" for who in ("ada", "bob", "eve", "nil") for kind in ("md", "html")
    )
    ada = (folder / "ada.md").read_text()
    assert "Score: 10/10" in ada and "- PASS single_pair" in ada
    bob = (folder / "bob.md").read_text()
    assert "Score: 0/10" in bob and "hint: " in bob and "Likely mistake: " in bob
    for name in ("ada", "bob"):
        assert_feedback_closed(out, name, f"{name}.py")
        text = (folder / f"{name}.md").read_text() + (folder / f"{name}.html").read_text()
        assert "sha256" not in text and str(klass) not in text and "class" not in text
    eve_md, eve_html = (folder / "eve.md").read_text(), (folder / "eve.html").read_text()
    assert r"\<b\>x\<i\>\_\*\[y\]\(z\)\#.py" in eve_md
    assert "<b>x" not in eve_html and html.escape(EVIL) in eve_html
    nil = (folder / "nil.md").read_text()
    assert "Not graded: " in nil and "Score" not in nil


def test_a_row_lost_to_a_grader_bug_gets_the_fixed_sentence(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither the exception's text nor its type nor a path reaches the learner."""
    import grader.batch.grading

    real = grader.batch.grading.grade_in_with_examples

    def flaky(session: Any, **kwargs: Any) -> Any:
        if kwargs["src"].name == "b.py":
            raise RuntimeError(f"boom in {tmp_path}")
        return real(session, **kwargs)

    monkeypatch.setattr(grader.batch.grading, "grade_in_with_examples", flaky)
    klass = tmp_path / "class"
    klass.mkdir()
    for name in ("a.py", "b.py"):
        (klass / name).write_text(RIGHT)
    code, _, _ = cli("batch", klass, "--out", tmp_path / "out", "--no-progress")
    assert code == 3
    for kind in ("md", "html"):
        text = (tmp_path / "out" / "feedback" / f"b.{kind}").read_text()
        assert LOST in text and "boom" not in text and "RuntimeError" not in text
        assert str(tmp_path) not in text


@pytest.mark.parametrize("blocked", ["ann.md", "ann.html"])
def test_a_feedback_file_that_cannot_be_written_is_logged_once(
    cli: Cli, tmp_path: Path, blocked: str
) -> None:
    """A folder where a learner's feedback file goes: grader.log says so in one entry, not
    once as the result is written and again as the batch ends."""
    klass = tmp_path / "class"
    klass.mkdir()
    for name in ("ann.py", "bob.py"):
        (klass / name).write_text(RIGHT)
    out = tmp_path / "out"
    (out / "feedback" / blocked).mkdir(parents=True)
    cli("batch", klass, "--out", out, "--no-progress")
    entries = (out / "grader.log").read_text().splitlines()
    said = [e for e in entries if "its feedback files could not be written" in e]
    assert len(said) == 1 and "ann: " in said[0], entries
    assert (out / "feedback" / "bob.html").is_file()


def test_a_missing_feedback_file_is_counted_and_ends_the_batch_2(cli: Cli, tmp_path: Path) -> None:
    """Every learner graded but one's feedback file not written: the closing lines count it
    and name grader.log, the batch ends 2 (the machine's); once its place is fixed, the
    same command writes it and ends 0."""
    klass = tmp_path / "class"
    klass.mkdir()
    for name in ("ann.py", "bob.py", "cid.py"):
        (klass / name).write_text(RIGHT)
    out = tmp_path / "out"
    for blocked in ("ann.html", "cid.md"):
        (out / "feedback" / blocked).mkdir(parents=True)
    code, stdout, err = cli("batch", klass, "--out", out, "--no-progress")
    assert code == 2, err
    assert "3 submissions: 3 graded" in stdout
    last = err.strip().splitlines()[-1]
    assert last.startswith("grader: 2 submissions' feedback files could not be written"), err
    assert f"(each is named in {out / 'grader.log'})" in last
    for who in ("ann", "bob", "cid"):
        assert '"score": 10.0' in (out / "results" / f"{who}.json").read_text()
    for blocked in ("ann.html", "cid.md"):
        (out / "feedback" / blocked).rmdir()
    code, _, err = cli("batch", klass, "--out", out, "--no-progress")
    assert code == 0 and "feedback" not in err, err
    assert all((out / "feedback" / f"{who}.html").is_file() for who in ("ann", "cid"))


def test_a_merge_that_cannot_write_a_feedback_file_logs_counts_it_and_ends_2(
    cli: Cli, tmp_path: Path
) -> None:
    """A merge writes every learner's feedback as a batch does: one it cannot write is one
    entry of the merge's grader.log, counted on stderr, and the merge ends 2; once its place
    is fixed, the same merge writes it and ends 0."""
    klass = tmp_path / "class"
    klass.mkdir()
    for name in ("ann.py", "bob.py", "cid.py", "dan.py"):
        (klass / name).write_text(RIGHT)
    shares = [tmp_path / f"share{k}" for k in (1, 2)]
    for k, share in enumerate(shares, start=1):
        assert cli("batch", klass, "--out", share, "--shard", f"{k}/2", "--no-progress")[0] == 0
    into = tmp_path / "merged"
    (into / "feedback" / "bob.html").mkdir(parents=True)
    code, _, err = cli("merge", *shares, "--out", into)
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("grader: 1 submissions' feedback files could not be written"), err
    said = [e for e in (into / "grader.log").read_text().splitlines() if "feedback" in e]
    assert len(said) == 1 and "bob: " in said[0], said
    assert (into / "feedback" / "ann.html").is_file()
    (into / "feedback" / "bob.html").rmdir()
    code, _, err = cli("merge", *shares, "--out", into)
    assert code == 0 and "feedback" not in err, err
    assert (into / "feedback" / "bob.html").is_file()


def test_an_address_in_a_learners_name_links_nowhere(cli: Cli, tmp_path: Path) -> None:
    """A file named `www.example.com.py`, a learner's folder holding `mail@example.org/`:
    in feedback.md the address is escaped, as a viewer of GitHub's kind would link it."""
    root = tmp_path / "class"
    (root / "gus" / "mail@example.org").mkdir(parents=True)
    (root / "gus" / "mail@example.org" / "sol.py").write_text(RIGHT)
    root.joinpath("www.example.com.py").write_text(RIGHT)
    out = tmp_path / "out"
    code, _, err = cli("batch", root, "--out", out)
    assert code == 0, err
    text = "\n".join(p.read_text() for p in (out / "feedback").glob("*.md"))
    assert "www\\.example" in text and "mail`@`example" in text
    assert "www.example" not in text and "mail@example" not in text


def test_an_entity_or_a_fence_in_a_learners_name_is_text_in_report_md(
    cli: Cli, tmp_path: Path
) -> None:
    """`ann&commat;evil.example.py` would read as an address once the viewer decodes it;
    `~~~x.py` would open a fence: report.md escapes both characters."""
    root = tmp_path / "class"
    (root / "gus").mkdir(parents=True)
    # Two files defining it differently: the row's reason names both.
    (root / "gus" / "~~~x.py").write_text(RIGHT)
    (root / "gus" / "ann&commat;evil.example.py").write_text(RIGHT.replace("10000", "500000", 1))
    out = tmp_path / "out"
    (root / "ada.py").write_text(RIGHT)
    code, _, err = cli("batch", root, "--out", out)
    assert code == 0, err
    text = (out / "report.md").read_text()
    assert "\\&commat;" in text and "\\~\\~\\~x" in text
    assert "&commat;" not in text.replace("\\&commat;", "")
