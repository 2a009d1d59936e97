"""IPython's own syntax in a notebook cell, turned into Python line for line.

A line magic, a shell escape or a help request (`%matplotlib inline`, `!pip install ...`,
`files = !ls`, `np.sum?`) is IPython's only where a logical line starts: outside brackets,
strings and backslash continuations. There it becomes `pass` at its indent (`%time STMT`
becomes STMT: IPython runs it once where it stands); anywhere else
its `%` or `!` is Python's (`x = (a\n    % b)`, `if (a\n    != b)`). Where logical lines
start is asked of Python's tokenizer, as IPython's input transformer does: each line is
looked at as the tokenizer asks for it, and a magic is handed to it as `pass` already, so
that one pass over the cell suffices and the magic's own text (an unclosed quote in a shell
line) never confuses what follows. A cell magic whose body is Python (`%%time`,
`%%capture`) keeps its body; any other (`%%bash`, `%%writefile`, `%%html`) is not Python.

A cell's lines are Python's lines: ended by `\n`, `\r\n` or a lone `\r`, as the tokenizer
counts them, never by what else `str.splitlines` takes for an end (`\f`, `\v`, `\x1c`-`\x1e`,
`\x85`, `\u2028`, `\u2029`): those stay inside their line, where the compiler sees them.
"""

from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass, field

from grader.names import display

# Cell magics whose body is Python, run with something around it.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
# A line magic that runs the rest of its line once in the notebook's namespace, as Python
# would: `%time BASE = 10000.0` binds BASE, `BASE = %time base()` too. (%timeit runs it
# inside a function of its own, its names local: left out with the other magics.)
PYTHON_LINE_MAGIC = re.compile(r"^(\s*(?:\w+\s*=\s*)?)%time[ \t]+(?=\S)")
MAGIC_LINE = re.compile(r"^(\s*)(?:[%!]|\w+\s*=\s*[%!]|[\w.]+\?\??\s*$)")
OPENING = frozenset("([{")
CLOSING = frozenset(")]}")
# Where Python's tokenizer ends a line, and nowhere else.
LINE_END = re.compile(r"\r\n|\r|\n")


def python_lines(text: str) -> list[str]:
    """Return text's lines as Python counts them (line 3 of a traceback is item 2)."""
    return LINE_END.split(text)


@dataclass
class Python:
    """A cell's lines as Python, one for each of its own, or why the cell is not Python."""

    lines: list[str]
    error: str = ""
    tokens: int = 0  # Python's tokens read in it


class TooManyTokens(Exception):
    """The cells hold more tokens than the bound handed in: not parsed at all."""


def python_of(source: str, most: int) -> Python:
    """Return a code cell's lines with IPython's own syntax turned into Python; past
    ``most`` tokens, raise TooManyTokens where the tokenizer stands (nothing built)."""
    lines = python_lines(source)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].strip()[2:].split(maxsplit=1)
        name = magic[0] if magic else ""
        if name not in PYTHON_CELL_MAGICS:
            return Python(lines, f"a %%{display(name)[:30]} cell is not Python")
        lines[first] = ""
    reader = _Lines(lines, most=most)
    return Python(reader.transformed(), tokens=reader.tokens_all)


@dataclass
class _Lines:
    """The tokenizer's reader of a cell: each line it asks for, a magic made `pass` where a
    logical line starts."""

    lines: list[str]
    at: int = 0
    depth: int = 0  # brackets open
    fresh: bool = True  # a logical line starts at the next line read
    tokens: int = 0  # tokens seen since the last line was read
    most: int = 0  # the bound on tokens_all
    tokens_all: int = 0
    out: list[str] = field(default_factory=list)

    def transformed(self) -> list[str]:
        try:
            for token in tokenize.generate_tokens(self.readline):
                self.seen(token)
        except (tokenize.TokenError, SyntaxError, ValueError):
            # Python's own mistake, where the tokenizer stopped: the lines it did not
            # read stay as written, and the compiler says where the cell goes wrong.
            pass
        return self.out + self.lines[len(self.out) :]

    def readline(self) -> str:
        if self.at >= len(self.lines):
            return ""
        line = self.lines[self.at]
        # A line read with no token seen since the last continues that one (a string, a
        # backslash): no logical line starts there.
        if self.fresh and (self.tokens or self.at == 0):
            python = PYTHON_LINE_MAGIC.match(line)
            match = MAGIC_LINE.match(line)
            if python:
                line = python.group(1) + line[python.end() :]
            elif match:
                line = f"{match.group(1)}pass"
        self.out.append(line)
        self.at += 1
        self.tokens = 0
        self.fresh = False
        return line + "\n"

    def seen(self, token: tokenize.TokenInfo) -> None:
        self.tokens += 1
        self.tokens_all += 1
        if self.tokens_all > self.most:
            raise TooManyTokens
        if token.type == tokenize.OP and token.string in OPENING:
            self.depth += 1
        elif token.type == tokenize.OP and token.string in CLOSING:
            self.depth = max(self.depth - 1, 0)
        elif token.type == tokenize.NEWLINE or (token.type == tokenize.NL and not self.depth):
            self.fresh = True
        else:
            self.fresh = False
