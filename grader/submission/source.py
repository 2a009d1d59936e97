"""The learner's file as the parent reads it, and what the parent decides without running it.

Whether the file compiles, and whether it defines the function with a usable signature, is
decided here, from the source alone: the child is never asked, so nothing the submission
does can forge these verdicts. Light on purpose: the pipeline reads the submission before
it starts the child.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from grader.errors import GraderError
from grader.files import READ_FLAGS
from grader.names import shown, takes
from grader.threads import Worker

if TYPE_CHECKING:  # the pipeline imports this before it starts the child: keep it light
    from grader.records import Outcome

T = TypeVar("T")
COMPILER_NAME = "compile-check"
MAX_SUBMISSION_BYTES = 1024 * 1024
# What a learner hands in, by suffix: defined here once, for every reader of submissions.
SUBMISSION_SUFFIX = ".py"
NOTEBOOK_SUFFIX = ".ipynb"
SUBMISSION_SUFFIXES = (SUBMISSION_SUFFIX, NOTEBOOK_SUFFIX)
ZIP_SUFFIX = ".zip"
# A notebook of plots is tens of megabytes of images; the code made of it has the .py bound.
MAX_NOTEBOOK_BYTES = 32 * 1024 * 1024
# Compiling a hostile 1 MiB file can recurse deeply in C (Python 3.10 overflows an 8 MiB
# stack on a long attribute chain); on a thread this large it ends in RecursionError instead.
COMPILE_STACK_BYTES = 256 * 1024 * 1024
_compiler_lock = threading.Lock()
_compiler: Worker | None = None


class Static(NamedTuple):
    """The parent's own verdict on a file it has not run: None, or why it cannot load."""

    outcome: Outcome | None
    message: str = ""
    imports: tuple[str, ...] = ()  # in the order of the text
    # Without the function: the names its top level binds (another exercise's function?).
    bound: frozenset[str] = frozenset()


class Source(NamedTuple):
    """The submitted file as the parent read it: for names and line numbers it may cite.

    For a notebook, ``text`` and ``data`` are the module made of it (see notebook.py),
    ``places`` says where each of its lines came from, and ``notes`` what was left out (or,
    for a folder, what else it held).
    """

    name: str
    text: str
    data: bytes = b""
    places: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # The submission's other modules, importable beside it: (file name, bytes).
    beside: tuple[tuple[str, bytes], ...] = ()
    # For a folder or a zip, the path of the file graded inside it, as shown.
    inner: str = ""
    # Folders beside it holding modules but no __init__.py (mylib): an import of one fails.
    not_packages: frozenset[str] = frozenset()
    # A notebook whose cells left out may change what the function reads: no known
    # mistake is named on its answers (see slicer.unsure).
    unsure: bool = False

    def digest(self) -> str:
        """Return a digest of everything graded: the code and the modules beside it."""
        import hashlib

        h = hashlib.sha256(self.data)
        for name, data in self.beside:
            h.update(b"\0" + name.encode("utf-8", "surrogateescape") + b"\0" + data)
        return h.hexdigest()

    def where(self, number: int) -> str:
        """Return how the learner finds line ``number``: "line 7", or "cell 3, line 2"."""
        if 1 <= number <= len(self.places):
            return self.places[number - 1]
        return f"line {number}"

    def line(self, number: object) -> int | None:
        """Return ``number`` if it is a line of the file."""
        from grader.submission.ipython import LINE_END

        lines = len(LINE_END.findall(self.text)) + 1
        if isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= lines:
            return number
        return None

    def line_text(self, number: int) -> str:
        """Return line ``number`` of the file, stripped and bounded, for a syntax error."""
        from grader.submission.ipython import python_lines

        lines = python_lines(self.text)
        return lines[number - 1].strip()[:200] if 1 <= number <= len(lines) else ""


def name_problem(path: Path) -> str:
    """Return why a file is not a submission by its name alone, or "" if it may be one.

    One rule for every way in (command line, batch, Gradescope): a Python file, `.py`.
    """
    if path.suffix.lower() not in SUBMISSION_SUFFIXES:  # Yusuf.PY is a .py
        return (
            f"{shown(path.name)} is not a Python file: a submission is a {SUBMISSION_SUFFIX}, "
            f"a notebook ({NOTEBOOK_SUFFIX}), or a .zip or folder of them"
        )
    return ""


def misnamed(path: Path, protected: Sequence[Path]) -> str:
    """Return what to do with a file named as no code that holds Python nonetheless
    (zoe.py.txt): "rename to .py"; or "" where it holds none, or may not be read.

    Python here is text that parses and defines, assigns or imports something at its top
    level: a line of prose may parse, but defines nothing.
    """
    if not name_problem(path) or link_problem(path, protected):
        return ""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SUBMISSION_BYTES:
            return ""
        if protected and (info.st_dev, info.st_ino) in protected_files(protected):
            return ""
        data = handle.read(MAX_SUBMISSION_BYTES + 1)
    if not on_compiler(_holds_python, data):
        return ""
    stem = path.name.rpartition(".")[0] if "." in path.name[1:] else path.name
    renamed = stem if stem.lower().endswith(SUBMISSION_SUFFIX) else stem + SUBMISSION_SUFFIX
    return (
        f"{shown(path.name)} holds Python under another name: rename to "
        f"{SUBMISSION_SUFFIX} ({shown(renamed)})"
    )


def _holds_python(data: bytes) -> bool:
    import ast

    try:
        tree = ast.parse(data.decode("utf-8-sig"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # UnicodeDecodeError too
        return False
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    return any(isinstance(node, (*kinds, ast.Assign)) for node in tree.body)


def link_problem(path: Path, protected: Sequence[Path]) -> str:
    """Return why an untrusted path may not be read, or "" if it may.

    Course staff and Gradescope hand over folders a learner shaped: a symbolic link there
    could point at anything the grader can read (the hidden cases, /etc/passwd), so none
    is followed, and nothing that resolves inside a protected folder is read.
    """
    if path.is_symlink():
        return f"{shown(path.name)} is a symbolic link; links are not followed"
    real = path.resolve()
    for folder in _resolved(tuple(protected)):
        if real.is_relative_to(folder):
            return f"{shown(path.name)} is inside the problem's own files; not read"
    return ""


@functools.lru_cache(maxsize=8)
def _resolved(folders: tuple[Path, ...]) -> tuple[Path, ...]:
    """Return the problem's folders resolved, once: a batch asks for every learner's file."""
    return tuple(folder.resolve() for folder in folders)


def protected_files(protected: Sequence[Path]) -> frozenset[tuple[int, int]]:
    """Return the (device, inode) of every file in the protected folders.

    A hard link to a hidden case is another name for the same inode: no path check sees it.
    """
    found: set[tuple[int, int]] = set()
    for folder in protected:
        for item in [folder, *(folder.rglob("*") if folder.is_dir() else ())]:
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.add((info.st_dev, info.st_ino))
    return frozenset(found)


def read_submission(path: Path, *, function: str) -> Source:
    """Read the learner's file, refusing what cannot be a Python source file or notebook."""
    if not path.exists():
        raise GraderError(f"no such file: {str(path)!r}")
    if not path.is_file():
        raise GraderError(f"not a file: {str(path)!r}")
    problem = misnamed(path, ()) or name_problem(path)
    if problem:
        raise GraderError(problem)
    bound = _bound(path)
    size = path.stat().st_size
    if size > bound:
        raise GraderError(f"{path.name} is {size} bytes; {_bound_text(path)}")
    with path.open("rb") as handle:  # never more than the bound, however it grows meanwhile
        data = handle.read(bound + 1)
    if len(data) > bound:  # it grew between the two looks
        raise GraderError(f"{path.name} grew past the bound; {_bound_text(path)}")
    return as_source(path.name, data, function)


def _bound(path: Path) -> int:
    return MAX_NOTEBOOK_BYTES if path.suffix.lower() == NOTEBOOK_SUFFIX else MAX_SUBMISSION_BYTES


def _bound_text(path: Path) -> str:
    if path.suffix.lower() == NOTEBOOK_SUFFIX:
        return f"notebooks may be at most {MAX_NOTEBOOK_BYTES // (1024 * 1024)} MiB"
    return "submissions may be at most 1 MiB"


def as_source(name: str, data: bytes, function: str) -> Source:
    """Return a file's bytes as the Source graded: a notebook becomes the module it means."""
    if not name.lower().endswith(NOTEBOOK_SUFFIX):
        return Source(name=shown(name), text=data.decode("utf-8", "replace"), data=data)
    from grader.submission.notebook import to_module

    try:
        module = on_compiler(to_module, data, function)
    except GraderError as exc:
        raise GraderError(f"{shown(name)}: {exc}") from None
    code = module.text.encode("utf-8", "surrogatepass")
    if len(code) > MAX_SUBMISSION_BYTES:
        raise GraderError(f"{shown(name)}: its code is over 1 MiB, the bound of a submission")
    return Source(
        shown(name), module.text, code, module.places, module.left_out, unsure=module.unsure
    )


def check_source(src: Source, function: str, arguments: Sequence[str]) -> Static:
    """Compile and inspect the file without running it; say why it cannot load, if it
    cannot: it must define ``function``, taking ``arguments``."""
    return on_compiler(_check_or_defer, src, function, tuple(arguments))


def on_compiler(task: Callable[..., T], *args: object) -> T:
    """Run ``task`` on the one compiling thread: every ast.parse, compile and symtable of
    learners' code goes there (two threads parsing at once fail on Python 3.11)."""
    compiler = _compiler_thread()
    if compiler is None or threading.current_thread().name.startswith(COMPILER_NAME):
        return task(*args)  # no such thread, or already on it (waiting on itself would hang)
    return compiler.submit(task, *args).result()


def _compiler_thread() -> Worker | None:
    """Return the one thread, with a large stack, that compiles for the whole process.

    One thread, not one per file: a batch compiles hundreds of files, and one at a time,
    since Python 3.11 keeps the AST's recursion depth per interpreter, not per thread (two
    batch workers compiling at once failed with a SystemError). None where no thread with
    that stack can start: the caller's thread compiles then.
    """
    global _compiler
    with _compiler_lock:
        if _compiler is None:
            old = threading.stack_size(COMPILE_STACK_BYTES)
            try:
                _compiler = Worker(COMPILER_NAME)  # its thread starts now, with the stack
            except (RuntimeError, MemoryError):
                pass
            finally:
                threading.stack_size(old)
        return _compiler


def _check_or_defer(src: Source, function: str, arguments: tuple[str, ...]) -> Static:
    try:
        return _check(src, function, arguments)
    except Exception:  # noqa: BLE001 - inspecting a strange tree: let the child decide
        return Static(None)


def _decodes(data: bytes) -> None:
    """Raise the SyntaxError `python file.py` raises for bytes its encoding cannot decode.

    Compiling bytes in memory lets undecodable bytes in a comment pass, where running the
    file refuses them (PEP 263): a Latin-1 file with no coding line must not score here
    and fail for its author.
    """
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # Its first two lines are not UTF-8 and declare nothing (found below, with the
        # byte and its line), or they declare an encoding Python does not know.
        encoding = "utf-8"
        if _utf8(data):
            raise SyntaxError(str(exc).partition(" for ")[0], (None, 1, None, None)) from None
    try:
        data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        code = f"code starting with '\\x{data[exc.start]:02x}'"
        said = (
            f"Non-UTF-8 {code}, but no encoding declared (PEP 263)"
            if encoding in ("utf-8", "utf-8-sig")
            else f"{code} cannot be read as {encoding}, the encoding declared"
        )
        raise SyntaxError(said, (None, line, None, None)) from None


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _check(src: Source, function: str, arguments: tuple[str, ...]) -> Static:
    import ast

    from grader.records import Outcome

    try:
        _decodes(src.data)
        tree = ast.parse(src.data, filename=src.name)
        compile(tree, src.name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = src.line(exc.lineno)
        where = f" at {src.where(line)}" if line else ""
        text = src.line_text(line) if line else ""
        return Static(
            Outcome.SYNTAX_ERROR,
            f"{src.name} has a syntax error{where}: {exc.msg}" + (f"\n    {text}" if text else ""),
        )
    except ValueError:
        return Static(Outcome.SYNTAX_ERROR, f"{src.name} holds null bytes: it is not a text file")
    except SystemError:
        # The interpreter's own failure, not the file's (seen once, rarely, in a batch under
        # load): no verdict here; the child compiles it too, before it is given any input.
        return Static(None)
    except (RecursionError, MemoryError):
        return Static(
            Outcome.SYNTAX_ERROR, f"{src.name} is nested too deeply for Python to compile it"
        )
    except Exception as exc:  # noqa: BLE001 - the compiler's failure on this file is a verdict
        return Static(
            Outcome.SYNTAX_ERROR, f"{src.name} could not be compiled ({type(exc).__name__})"
        )
    from grader.submission.defines import accepts, bound_names, imported, missing

    imports = imported(tree)
    bound = bound_names(tree.body)
    node = bound.get(function)
    if node is None:
        if re.search(rf"\b{re.escape(function)}\b", src.text):
            return Static(None, imports=imports)  # bound some dynamic way: the child will see
        said = missing(src.name, function, bound)
        return Static(Outcome.MISSING_FUNCTION, said, imports, frozenset(bound))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not accepts(
        node.args, len(arguments)
    ):
        return Static(
            Outcome.BAD_SIGNATURE,
            f"{function} must accept {takes(arguments)} "
            f"(yours is {function}({ast.unparse(node.args)}))",
            imports,
        )
    return Static(None, imports=imports)


def read_untrusted(
    path: Path,
    *,
    function: str,
    protected: Sequence[Path],
    inodes: frozenset[tuple[int, int]] | None = None,
) -> Source:
    """Read a file from a folder a learner shaped: never through a link (see link_problem).

    ``inodes`` are protected_files(protected), for a caller that reads many files at once.
    """
    problem = link_problem(path, protected) or name_problem(path)
    if problem:
        raise GraderError(problem)
    try:
        # O_NOFOLLOW: a file swapped for a link after the check above is still not followed.
        fd = os.open(path, READ_FLAGS)
    except OSError as exc:
        raise GraderError(f"cannot read {shown(path.name)}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise GraderError(f"{shown(path.name)} is not a regular file")
        if inodes is None:
            inodes = protected_files(protected)
        if (info.st_dev, info.st_ino) in inodes:
            raise GraderError(
                f"{shown(path.name)} is a hard link to one of the problem's own files; not read"
            )
        bound = _bound(path)
        if info.st_size > bound:
            raise GraderError(f"{shown(path.name)} is {info.st_size} bytes; {_bound_text(path)}")
        data = handle.read(bound + 1)
    if len(data) > bound:
        raise GraderError(f"{shown(path.name)} grew past the bound; {_bound_text(path)}")
    return as_source(path.name, data, function)
