"""Run a function the moment a module is first imported, by whichever code imports it.

The command's start imports as little as it can (`grader --help` needs no `logging`), yet
what must hold once a module is in use (the grader's logging set up before any record,
whoever logs it first: the grader, concurrent.futures, a library) must hold from its first
use on. A finder placed first on sys.meta_path hands the import to the usual finders and
wraps the loader they find, so that the function runs right after the module's own code,
before the importer gets the module. Where the module is imported already, it runs now.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import Any


def after_import(name: str, then: Callable[[], None]) -> None:
    """Call ``then`` once the top-level module ``name`` is imported: now if it is."""
    if name in sys.modules:
        then()
        return
    for finder in sys.meta_path:
        if isinstance(finder, _Watch) and finder.name == name:
            finder.then = then  # the latest wish: a second command in one process
            return
    sys.meta_path.insert(0, _Watch(name, then))


class _Watch:
    """A finder that finds nothing itself: it waits for one module's import."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None  # the other finders (a frozen module, say) take it as usual
        spec.loader = _Then(spec.loader, self.then)  # type: ignore[assignment]  # a Loader in all but name
        return spec


class _Then:
    """A loader that is the module's own, and calls a function after running the module."""

    def __init__(self, loader: Any, then: Callable[[], None]) -> None:
        self._loader, self._then = loader, then

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._then()

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename... as the loader's
        return getattr(self._loader, name)
