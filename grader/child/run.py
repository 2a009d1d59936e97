"""The child side of the grading protocol: import a submission and call it on given inputs.

This file runs as a script in a fresh interpreter (``python -I -S -B run.py FD FILE FUNC CONFIG``)
and imports nothing from the grader package but its sibling ``confine``: it sees only the
inputs the parent sends, never expected values, case files or the reference. It answers on
file descriptor FD with frames: a 4-byte big-endian length, a JSON header, then
``header["nbytes"]`` bytes of float64 payload. The parent trusts none of it: whatever
arrives is validated there and compared there.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import mmap
import os
import site
import sys
import time
import traceback
from typing import Any

if __name__ == "__main__":
    # Started with -S: site's start-up (a scan of .pth files, an editable install's import
    # hook) would cost more than a tenth of the child's start. The parent names the folders
    # to import from instead, and exit()/quit() are put back for the submission.
    sys.path.extend(json.loads(sys.argv[4]).get("sys_path", []))
    site.setquit()

import numpy as np

if __package__:  # imported by the parent, as part of the grader (a kit's check, the tests)
    from grader.child.aside import step_aside
    from grader.child.channel import Channel
    from grader.child.request import argument, read_request
else:
    # A script: `channel` and `confine` are found beside it, inside the sandbox or not.
    # `confine` is imported only where the parent asks for walls (Linux's C library).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from aside import step_aside  # type: ignore[import-not-found,no-redef]
    from channel import Channel  # type: ignore[import-not-found,no-redef]
    from request import argument, read_request  # type: ignore[import-not-found,no-redef]

MAX_TEXT = 2000
# Address space set aside while the submission is imported, then given back: see serve().
# More than MALLOC_TOP_PAD_ (16 MB, walls.child_env), which glibc adds to each growth of
# the heap: a smaller reserve would leave room for no growth at all.
RESERVE_BYTES = 48 << 20
# The parent takes tables of at most this many axes (and no axis longer than the element
# limit); another shape is answered as such, not sent.
MAX_AXES = 4
# numpy's own limit on axes: a list nested deeper says only that it is deeper.
DEEPER_THAN_NUMPY = 65
# Names (of a type, an exception, a function) are cut to this: the parent refuses a frame
# with a longer string as forged, and a longer name says nothing more.
MAX_NAME = 200
# The exit status of a child whose own code ran out of the memory the submission holds:
# the one answer that needs no memory. The parent (grader/verdict/judge.py) reads it as the
# memory limit; a submission that exits with it itself only earns that verdict.
EXIT_OUT_OF_MEMORY = 85


def _text(value: object) -> str:
    """Return str(value) cut to a bounded length, surviving a lying __str__."""
    try:
        text = str(value)
    except BaseException:  # noqa: BLE001 - the submission's __str__ may raise anything
        text = "<unprintable>"
    return _clean(text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " [...cut]")


def _clean(text: str) -> str:
    # A lone surrogate ("\ud800") is a valid str but no UTF-8: the parent refuses it.
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


def _name(value: str) -> str:
    return _clean(value if len(value) <= MAX_NAME else value[:MAX_NAME] + "...")


def _where(exc: BaseException, path: str) -> tuple[int | None, str]:
    """Return the last line of the submission the traceback passed through, and its text."""
    line, text = None, ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == path:
            line, text = frame.lineno, (frame.line or "")
    if isinstance(exc, SyntaxError) and exc.filename == path:
        line, text = exc.lineno, (exc.text or "").rstrip("\n")
    return line, _name(text)


def _exception(exc: BaseException, path: str) -> dict[str, Any]:
    line, text = _where(exc, path)
    frames = [
        {"line": f.lineno, "function": _name(f.name), "text": _name(f.line or "")}
        for f in traceback.extract_tb(exc.__traceback__)
        if f.filename == path
    ]
    message = exc.msg if isinstance(exc, SyntaxError) else _text(exc)
    return {
        "exc_type": _name(type(exc).__name__),
        "message": _text(message),
        "line": line,
        "text": text,
        "frames": frames[-10:],
        "errno": exc.errno if isinstance(exc, OSError) else None,
        "module": _text(exc.name) if isinstance(exc, ImportError) and exc.name else None,
    }


def _encode(result: object, max_elements: int) -> tuple[dict[str, Any], memoryview | bytes]:
    """Turn whatever the submission returned into a float64 payload or a reason it can't be."""
    if result is None:
        return {"kind": "bad_value", "reason": "none"}, b""
    if (
        type(result) is np.ndarray
        and result.dtype == np.float64
        and result.flags.c_contiguous
        and 0 < result.size <= max_elements
        and _holdable(result.shape, max_elements)
    ):
        # The common answer, a plain float64 table, goes out as it lies (a copy adds only its
        # size in pages); what changes it meanwhile changes only this submission's answer.
        return {"kind": "ok", "shape": list(result.shape), "dtype": "float64"}, result.data
    try:
        # A view where it can be (ndarray subclasses dropped; __array__ asked once): the size
        # is known before any copy, so a table past the bound costs nothing.
        arr = np.asarray(result)
    except ValueError as exc:
        text = str(exc)
        if "inhomogeneous" not in text and "maximum number of dimension" in text:
            # Nested deeper than numpy's limit on axes.
            return {"kind": "bad_value", "reason": "shape", "ndim": DEEPER_THAN_NUMPY}, b""
        if "inhomogeneous" in text or "sequence" in text:
            return {"kind": "bad_value", "reason": "ragged"}, b""
        raise
    if arr.dtype.kind == "c":
        return {"kind": "bad_value", "reason": "complex"}, b""
    if arr.dtype.kind not in "biuf":
        return {
            "kind": "bad_value",
            "reason": "non_numeric",
            "type": _name(type(result).__name__),
            "dtype": arr.dtype.kind,
        }, b""
    if arr.size > max_elements:
        return {"kind": "bad_value", "reason": "too_large"}, b""
    if not _holdable(arr.shape, max_elements):
        # Five axes, or an empty table with one enormous axis: a wrong shape all the same,
        # told by its number of axes, which the parent turns into its sentence.
        return {"kind": "bad_value", "reason": "shape", "ndim": arr.ndim}, b""
    # The one copy, within the bound, detaches the table from the object (array, not
    # ascontiguousarray, which makes a 0-d answer 1-d).
    out = np.array(arr, dtype=np.float64, order="C")
    payload = out.data if out.size else b""  # (a view of no elements cannot be cast to bytes)
    return {"kind": "ok", "shape": list(out.shape), "dtype": arr.dtype.name}, payload


def _holdable(shape: tuple[int, ...], max_elements: int) -> bool:
    return len(shape) <= MAX_AXES and all(n <= max_elements for n in shape)


def _load(path: str, function: str, arity: int) -> Any:
    with open(path, "rb") as handle:
        source = handle.read()
    # Compiling apart from running means a SyntaxError here comes from the compiler, before
    # any of the submission ran, so the parent may show its message even on hidden cases.
    try:
        code = compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return {"kind": "syntax", **_exception(exc, path)}
    # The submission's own other modules (a utils.py handed in beside it) lie in its
    # folder: importable, after everything installed, which they cannot shadow. The
    # child's own modules leave the way first: a learner's allowlist.py or run.py is theirs.
    step_aside()
    sys.path.append(os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("submission", path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    exec(code, vars(module))
    func = getattr(module, function, None)
    if func is None:
        defined = sorted(
            name
            for name, value in vars(module).items()
            if callable(value)
            and not name.startswith("_")
            and getattr(value, "__module__", "") == module.__name__
        )
        return {"kind": "missing_function", "defined": [_name(n) for n in defined[:20]]}
    if not callable(func):
        return {"kind": "not_callable", "type": _name(type(func).__name__)}
    try:
        inspect.signature(func).bind(*[0] * arity)
    except TypeError:
        return {"kind": "bad_signature", "signature": _text(inspect.signature(func))}
    except ValueError:
        pass  # builtins without a signature: let the call decide
    return func


def _confine(config: dict[str, Any]) -> dict[str, Any]:
    """Apply the limits and walls the parent decided; numpy is imported, the submission not.

    The parent says yes or no to each wall: nothing here reads a backend's name.
    """
    import confine  # type: ignore[import-not-found]
    import held  # type: ignore[import-not-found]

    applied: dict[str, Any] = {"backend": config["backend"]}
    if config.get("cgroup_fd") is not None:
        confine.join_task_limit(config["cgroup_fd"])
    applied["tasks"] = config["tasks_rule"]
    applied["writes"] = config["writes_rule"]
    private = config.get("private")
    if config["alone"]:
        applied["namespaces"] = config["bwrap_namespaces"]
    uid = config["drop_to_uid"]
    in_user_namespace = False
    if private:
        # Before leaving root (or the template's capability): namespaces need it.
        owner = (os.getuid(), os.getgid()) if uid is None else (uid, uid)
        # Taken before a mount is refused, a user namespace holds every capability in it.
        in_user_namespace, before = bool(private.get("user")), held.namespaces()
        try:
            applied["namespaces"] = confine.private_folder(uid=owner[0], gid=owner[1], **private)
            applied["own_tmpfs"] = True  # over its folder: the parent may keep the folder
            if config["landlock"]:  # the tmpfs bounds all writes only where nothing else is
                applied["writes"] = f"{private['size'] >> 20} MB in all (tmpfs)"
        except OSError as exc:
            applied["namespaces"] = held.taken(before, exc.strerror)
    confine.apply_limits(config["limits"])
    if uid is not None and os.getuid() != uid:
        confine.become_user(uid)
    if in_user_namespace or (uid is None and config["drop_capabilities"]):
        # In a user namespace of its own, this process holds every capability there.
        confine.drop_capabilities()
    if uid is not None:
        applied["dropped"] = "uid"
    elif in_user_namespace or config["drop_capabilities"]:
        applied["dropped"] = "capabilities"
    # After the last change of identity, which would clear it; before seccomp, which
    # refuses this prctl. No child outlives its grader (or its template).
    if config.get("parent"):
        confine.die_with_parent(config["parent"])
    if config["own_pids"]:
        confine.own_pid_namespace()
    if config["landlock"]:
        applied["landlock_abi"] = confine.apply_landlock(read=config["read"], write=config["write"])
    if config["seccomp"]:
        # Signals cannot leave Landlock's scope from ABI 6, nor bwrap's PID namespace where
        # the child is alone in it (a fork shares its template's).
        scoped = config["alone"] or applied.get("landlock_abi", 0) >= 6
        applied["seccomp"] = confine.apply_seccomp(allow_signals=bool(scoped))
    applied |= {"forked": True} if config.get("forked") else {}
    return applied


def main() -> None:
    config = json.loads(sys.argv[4])
    serve(_channel(sys.argv[1], config), sys.argv[2], sys.argv[3], config)


def _channel(given: str, config: dict[str, Any]) -> int:
    """Return the result channel's descriptor: given as one, or on Windows as a handle."""
    if config.get("handle") and sys.platform == "win32":
        import msvcrt

        return msvcrt.open_osfhandle(int(given), os.O_WRONLY)
    return int(given)


def serve(fd: int, path: str, function: str, config: dict[str, Any]) -> None:
    """Confine this process, import the submission, then answer the request read from stdin.

    The parent sends the request only once it has read "loaded": while the submission is
    imported, no input exists in this process, so whatever the import does or says cannot
    carry one out.
    """
    try:
        _serve(fd, path, function, config)
    except MemoryError:
        # The submission holds the memory this process's own code needed (to read the
        # inputs, to encode an answer): say so the one way that needs none.
        os._exit(EXIT_OUT_OF_MEMORY)


def _serve(fd: int, path: str, function: str, config: dict[str, Any]) -> None:
    channel = Channel(fd)
    if config.get("confine", True):
        started = _walls(channel, config)
        if started is None:
            return
        applied, reserve = started
    else:
        # No walls and no limits on this system (macOS, Windows): the parent stops this
        # process at the time limit, and memory is the machine's.
        reserve = mmap.mmap(-1, 1)  # a reserve of one byte: there is no limit to keep it for
        applied = {"backend": config["backend"], "tasks": config["tasks_rule"]}
        applied |= {"writes": config["writes_rule"], "unwalled": True}
    channel.send({"event": "confined", **applied})
    # The request arrives on the original stdin; the submission gets an empty one.
    requests = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    try:
        loaded = _load(path, function, int(config["arity"]))
    except MemoryError:
        reserve.close()
        channel.send({"event": "load_error", "kind": "memory"})
        return
    except BaseException as exc:  # noqa: BLE001 - anything at import is the submission's
        reserve.close()
        channel.send({"event": "load_error", "kind": "import_exception", **_exception(exc, path)})
        return
    reserve.close()
    if isinstance(loaded, dict):
        channel.send({"event": "load_error", **loaded})
        return
    channel.send({"event": "loaded"})
    shared = config.get("tables_fd")  # the memory file the tables may come in (request.py)
    _answer(channel, requests, loaded, path, shared if isinstance(shared, int) else None)


def _walls(channel: Channel, config: dict[str, Any]) -> tuple[dict[str, Any], Any] | None:
    """Apply the walls and limits, and set the memory reserve aside; None once it has said
    why it cannot start."""
    try:
        applied = _confine(config)
    except OSError as exc:
        channel.send({"event": "confine_error", "message": f"the walls failed: {_text(exc)}"})
        return None
    # An import may take all the memory the limit allows: this much address space (untouched,
    # free) is set aside until it is over, so that this process can still answer "memory".
    # Set before the submission runs: a limit too low for it is the settings' failure.
    try:
        reserve = mmap.mmap(-1, RESERVE_BYTES, flags=mmap.MAP_PRIVATE)
    except OSError as exc:
        message = f"its own {RESERVE_BYTES >> 20} MB reserve does not fit the memory limit"
        channel.send({"event": "confine_error", "message": f"{message} ({_text(exc)})"})
        return None
    return applied, reserve


def _answer(channel: Channel, requests: int, loaded: Any, path: str, shared: int | None) -> None:
    """Read the request, now that the submission is imported, and answer each case in turn."""
    cases, tables = read_request(requests, shared)
    # Encoded before any call, in case a call leaves no memory to encode anything with.
    fallbacks = [
        channel.frame({"event": "result", "case": c["id"], "kind": "memory"}) for c in cases
    ]
    for case, out_of_memory in zip(cases, fallbacks, strict=True):
        began = time.perf_counter()
        try:
            args = [argument(value, case["blobs"], tables) for value in case["args"]]
            result = loaded(*args)
            header, payload = _encode(result, int(case["max_elements"]))
        except MemoryError:
            header, payload = {"kind": "memory"}, b""
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are answers too
            header, payload = {"kind": "exception", **_exception(exc, path)}, b""
        header["seconds"] = time.perf_counter() - began
        try:
            channel.send({"event": "result", "case": case["id"], **header}, payload)
        except MemoryError:
            channel.write(out_of_memory)
    _flush_outputs()
    channel.send({"event": "done"})
    # Every answer is in: leave now, whatever threads the submission left running.
    os._exit(0)


def _flush_outputs() -> None:
    """Push what the submission printed into the pipes before "done", so the parent has it."""
    for stream in (sys.stdout, sys.stderr):
        # The submission may have replaced them with anything.
        with contextlib.suppress(BaseException):
            stream.flush()


if __name__ == "__main__":
    main()
