"""The one YAML loader: plain data only, within its bounds, refusing in one short line."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.errors import Refused
from grader.files import read_bounded
from grader.problem import yamlsafe
from grader.problem.yamlsafe import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    load_bytes,
    load_file,
    load_text,
)
from tests.conftest import ROOT

# The longest refusal: its fixed words, a cut value of 200 characters, field and line.
MOST_MESSAGE = 400


@pytest.fixture(params=["libyaml", "python"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with libyaml's parser, and again with PyYAML's own (machines without it)."""
    if request.param == "python":
        monkeypatch.setattr(yamlsafe, "_PARSER", yaml.SafeLoader)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML was built without libyaml here")
    return str(request.param)


def _refusal(text: str) -> Refused:
    with pytest.raises(Refused) as info:
        load_text(text)
    assert len(str(info.value)) <= MOST_MESSAGE
    return info.value


SHIPPED = sorted(
    [
        ROOT / "examples.yaml",
        ROOT / "solutions" / "corpus.yaml",
        *(ROOT / "hidden_tests").glob("*.yaml"),
    ]
)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_files_load_as_pyyaml_loads_them(path: Path) -> None:
    """Every YAML file the grader reads reads as PyYAML's safe loader reads it."""
    assert load_file(path).data == yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("text", "words", "field", "line"),
    [
        ("a: &x [1]\nb: 2\n", "anchors (&x) are not allowed", "a", 1),
        ("a: 1\nb: *x\n", "aliases (*x) are not allowed", "b", 2),
        ("a: !!python/object/apply:os.system [ls]\n", "tags (!!python/object/apply", "a", 1),
        ("a: !!str 1\n", "tags (!!str) are not allowed", "a", 1),
        ("a: ! 1\n", "tags (!) are not allowed", "a", 1),
        ("a:\n  b: 1\n  c: 2\n  b: 3\n", "duplicate key 'b' (lines 2 and 4)", "a.b", 4),
        ("<<: {a: 1}\n", "merge keys (<<) are not allowed", "(file)", 1),
        ("a: 1\n---\nb: 2\n", "more than one YAML document", "(file)", 2),
        ("? [a, b]\n: 1\n", "a mapping key must be a plain value", "(file)", 1),
        ("a: " + "9" * 101 + "\n", "a number longer than 100 characters", "a", 1),
        ("a: 2001-02-30\n", "not a valid timestamp", "a", 1),
        ("a:\n\tb: 1\n", "tabs are not allowed in YAML; indent with spaces", "(file)", 2),
        ("a: [1, 2\n", "not valid YAML (column 1): while parsing a flow sequence", "(file)", 2),
        ("a: 1\nb: \x07\n", "not valid YAML: unacceptable character #x0007", "(file)", 2),
    ],
)
def test_refusals_name_field_and_line(
    parser: str, text: str, words: str, field: str, line: int
) -> None:
    """Each refused construct is said in one short line, at its field and line."""
    refused = _refusal(text)
    assert words in str(refused)
    assert (refused.field, refused.line) == (field, line)
    assert "\n" not in str(refused)


def test_an_alias_bomb_is_refused_at_its_first_anchor(parser: str) -> None:
    """The billion laughs, ten-fold per level: refused before anything is expanded."""
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=False):
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
    text = "\n".join(levels) + "\n"
    assert len(text) < 450
    started = time.monotonic()
    assert str(_refusal(text)) == "anchors (&a) are not allowed"
    assert time.monotonic() - started < 1


def test_depth_and_values_are_bounded(parser: str) -> None:
    """Nesting past MAX_DEPTH and more than MAX_NODES values are refused, not built."""
    assert load_text("[" * MAX_DEPTH + "]" * MAX_DEPTH).data is not None
    assert f"nested deeper than {MAX_DEPTH}" in str(_refusal("a:\n" + "  - " * 40 + "1\n"))
    _refusal("[" * 100_000)  # libyaml may stop it first, at its own limit
    many = "[" + "0," * MAX_NODES + "0]"
    assert f"more than {MAX_NODES} values" in str(_refusal(many))


def test_size_is_bounded_before_parsing(tmp_path: Path) -> None:
    """A file of one byte more than the bound is refused as it is read."""
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * MAX_BYTES)
    assert load_file(path).empty
    path.write_bytes(b"#" * (MAX_BYTES + 1))
    with pytest.raises(Refused, match=f"larger than {MAX_BYTES} bytes"):
        load_file(path)
    with pytest.raises(Refused, match="larger than 10 bytes"):
        load_bytes(b"a: 1234567890\n", limit=10)


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    """A FIFO, a folder, a link (to /dev/zero or to a plain file) are refused unopened."""
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "folder.yaml").mkdir()
    (tmp_path / "plain.yaml").write_text("a: 1\n")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "plain.yaml")
    kinds = {"fifo": "a FIFO", "folder": "a folder", "zero": "a symbolic link"}
    kinds["link"] = "a symbolic link"
    for name, kind in kinds.items():
        with pytest.raises(Refused) as info:
            read_bounded(tmp_path / f"{name}.yaml", MAX_BYTES)
        assert str(info.value).startswith(f"not a regular file ({kind})")
    with pytest.raises(Refused, match="cannot read: No such file"):
        read_bounded(tmp_path / "missing.yaml", MAX_BYTES)
    assert load_file(tmp_path / "plain.yaml").data == {"a": 1}


def test_lines_are_where_each_field_is_written() -> None:
    """A key's line is where the key is; an item's where the item is."""
    loaded = load_text("a:\n  b:\n    - 1\n    - [2,\n       3]\nc: 4\n")
    assert yamlsafe.line_of(loaded.place, "a.b") == 2
    assert yamlsafe.line_of(loaded.place, "a.b[1]") == 4
    assert yamlsafe.line_of(loaded.place, "c") == 6
    assert yamlsafe.line_of(loaded.place, "a.missing") == 1
    assert yamlsafe.line_of(loaded.place, "(file)") is None


def test_values_shown_are_cut() -> None:
    """A value is shown in at most 200 characters and a marker; a huge integer by its size."""
    assert (
        yamlsafe.shown_value("x" * 10_000) == repr("x" * 200)[:200] + "...[cut to 200 characters]"
    )
    assert yamlsafe.shown_value(10**5000).startswith("an integer of about")
    assert len(yamlsafe.shown_value(list(range(10**5)))) < 240


def _within_bounds(call: object, data: object) -> None:
    started = time.monotonic()
    try:
        call(data)  # type: ignore[operator]
    except Refused as refused:
        assert len(str(refused)) <= MOST_MESSAGE
        assert "\n" not in str(refused)
    assert time.monotonic() - started < 2


YAMLISH = st.lists(
    st.sampled_from(
        [
            "a",
            ": ",
            "- ",
            "[",
            "]",
            "{",
            "}",
            ",",
            "&x ",
            "*x",
            "!!str ",
            "<<",
            "? ",
            "\n",
            "  ",
            "\t",
            "'",
            '"',
            "1",
            "1e3",
            ".inf",
            "~",
            "#",
            "---\n",
            "%YAML 1.1\n",
            "2001-02-30",
            ":",
            "|\n",
            ">\n",
            "\\",
            "\x00",
            "\ud800",
        ]
    )
    | st.text(max_size=8),
    max_size=60,
).map("".join)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(YAMLISH)
def test_fuzzed_text_loads_or_is_refused(text: str) -> None:
    """Any text: plain data, or Refused with a short one-line message, in bounded time, with
    either parser."""
    _within_bounds(load_text, text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(yamlsafe, "_PARSER", yaml.SafeLoader)
        _within_bounds(load_text, text)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_fuzzed_bytes_load_or_are_refused(data: bytes) -> None:
    """Any bytes: plain data, or Refused with a short one-line message, in bounded time."""
    _within_bounds(load_bytes, data)


@settings(max_examples=500, deadline=None)
@given(st.from_regex(r"[-+]?[0-9_.:eExob+]{1,14}", fullmatch=True))
def test_numbers_read_as_pyyaml_reads_them(scalar: str) -> None:
    """A plain scalar that looks like a number means what it means to PyYAML's safe loader."""
    try:
        want = yaml.safe_load(f"x: {scalar}\n")
    except (yaml.YAMLError, ValueError):
        return  # not YAML PyYAML reads: refused by both, or by the loader's stricter rules
    try:
        got = load_text(f"x: {scalar}\n").data
    except Refused as refused:
        # Only a number YAML 1.2 reads otherwise (010, 1:30, 0b1, 1_0) is refused, by name.
        assert "in YAML 1.1, something else to YAML 1.2" in str(refused), refused
        assert any(c in scalar for c in ":_bo") or scalar.lstrip("+-").startswith("0")
        return
    assert got == want and type(got["x"]) is type(want["x"])  # type: ignore[index]
