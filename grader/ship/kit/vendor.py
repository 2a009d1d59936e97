"""A learner kit's own package: the grader vendored under the kit's name, so that any
number of kits install into one environment and import side by side.

Each kit is the distribution and command `NAME-kit` and the package `NAME_kit`; no kit has
a top-level `grader`, which a second kit would replace.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from string import Template

from grader import __version__
from grader.files import PACKAGE, TEMPLATES
from grader.problem.exercise import Exercise

# An import of the grader, at the start of a line: `from grader.x import y`, `import grader`.
# As bytes: an author's module may be written in any encoding its coding cookie names.
_IMPORT = re.compile(rb"^([ \t]*)(from|import)([ \t]+)grader(?=[\s.])", re.MULTILINE)

# The grader's learner commands, quoted in a text: `grader run FILE`, `grader serve`.
_COMMAND = re.compile(rb"`grader (run|serve)\b")

# What a kit needs installed: floors only. A pin would make Colab (numpy 2 preinstalled)
# replace its own numpy and restart the runtime.
REQUIRES = ("numpy>=1.24", "pyyaml>=6", "markdown>=3.4")
PLOT_REQUIRES = ("matplotlib>=3.7",)

_INIT = '''"""The learner kit of the exercise $title.

In a shell: `$kit run FILE` (the visible examples), `$kit serve` (the practice page).
In a notebook: `from $package import check`, then `check($function)`.
"""

__version__ = "$version"


def __getattr__(name: str) -> object:
    # `check` is loaded when it is first asked for: the command line never pays for it.
    if name == "check":
        from $package.ship.kit.check import check

        return check
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
'''


def rename_imports(source: bytes, package: str) -> bytes:
    """Return Python source whose imports of the grader import ``package`` instead."""
    name = package.encode("ascii")
    return _IMPORT.sub(lambda m: m[1] + m[2] + m[3] + name, source)


def vendor(stage: Path, exercise: Exercise, title: str) -> Path:
    """Write the grader into ``stage`` as the kit's package, and the kit's pyproject.toml;
    return the package's folder."""
    package = exercise.kit_package
    target = stage / package
    for path in sorted(PACKAGE.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        dest = target / path.relative_to(PACKAGE)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".py":
            dest.write_bytes(rename_imports(path.read_bytes(), package))
        else:
            shutil.copy2(path, dest)
    words = {
        "title": title,
        "kit": exercise.kit,
        "package": package,
        "function": exercise.function,
        "version": __version__,
    }
    (target / "__init__.py").write_text(Template(_INIT).substitute(words), encoding="utf-8")
    pyproject = Template((TEMPLATES / "kit_pyproject.toml").read_text("utf-8"))
    (stage / "pyproject.toml").write_text(
        pyproject.substitute(
            words,
            title_toml=title.replace("\\", "\\\\").replace('"', '\\"'),
            requires=_toml_list(REQUIRES),
            plot=_toml_list(PLOT_REQUIRES),
        ),
        encoding="utf-8",
    )
    return target


def rename_problem(stage: Path, names: list[str], exercise: Exercise) -> None:
    """Make the kit's copies of the exercise's modules import the kit's package, and its
    public files (starter, statement, examples) name the kit's command, not `grader`."""
    for name in names:
        path = stage / name
        if path.suffix == ".py":
            path.write_bytes(rename_imports(path.read_bytes(), exercise.kit_package))
        if path.suffix in (".py", ".md", ".yaml"):
            path.write_bytes(name_command(path.read_bytes(), exercise.kit))


def name_command(text: bytes, kit: str) -> bytes:
    """Return ``text`` with the grader's learner commands (`grader run`, `grader serve`)
    named as the kit's own (`KIT run`): a kit has no `grader` command."""
    return _COMMAND.sub(b"`" + kit.encode("ascii") + rb" \1", text)


def _toml_list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"
