"""A batch's private folders, kept for the next learner where no child could write in them.

Each child of a batch gets a folder of its own under the batch's folder, holding its
submission. Making and deleting a folder and a file per child costs more than it seems: on
a file system without a journal, the kernel looks at every inode freed in the last seconds
each time it hands out one, and a class of hundreds frees two a child.

A folder that the child's own tmpfs covered before anything of the learner was read (the
child says so in its confinement report, which it sends before the submission runs) still
holds exactly what the parent wrote in it: it is emptied, given back to the grader, and
taken by the next learner of the batch, whose source is written over the file in place.
Any other folder (no tmpfs of the child's own, a report that never came, a learner's own
modules beside the file, anything odd in it) is deleted, as every folder was before.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from grader.sandbox import tempdirs

# The name a submission's file has in its private folder.
SUBMISSION_FILE = "submission.py"


class Kept:
    """A batch's emptied private folders, each waiting for the next learner."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.free: list[str] = []

    def take(self, source: bytes) -> tuple[str, Path] | None:
        """Return a kept folder and its file, now holding ``source``; None if none is kept."""
        with self.lock:
            if not self.free:
                return None
            tmp = self.free.pop()
        submission = Path(tmp, SUBMISSION_FILE)
        try:
            _overwrite(submission, source)
        except BaseException:
            tempdirs.remove_tree(tmp)  # a full disk (or a stop) half-way: the folder goes
            raise
        return tmp, submission

    def keep(self, tmp: str, *, covered: bool) -> None:
        """Keep ``tmp`` for the next learner if its child's own tmpfs ``covered`` it and it
        holds nothing but the file the parent wrote; delete it otherwise."""
        if covered and _empty_but_the_file(tmp):
            with self.lock:
                self.free.append(tmp)
        else:
            tempdirs.remove_tree(tmp)


def _empty_but_the_file(tmp: str) -> bool:
    """Empty the submission's file, hand the folder back to the grader, and return True, if
    ``tmp`` is a folder holding that regular file alone; return False otherwise."""
    path = os.path.join(tmp, SUBMISSION_FILE)
    try:
        if os.listdir(tmp) != [SUBMISSION_FILE]:
            return False
        # Not followed if it is a link: only the file the parent wrote is emptied.
        # Nor waited on: a pipe's open would block, where this one fails.
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                return False
            if info.st_uid != os.geteuid():
                # Given to the sandbox's user for its child: back to the grader while idle.
                os.fchown(fd, os.geteuid(), os.getegid())
                os.chown(tmp, os.geteuid(), os.getegid(), follow_symlinks=False)
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _overwrite(path: Path, data: bytes) -> None:
    """Write ``data`` over the kept file, in place: no inode is made or freed."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
