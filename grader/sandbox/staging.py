"""A batch's private folders, kept for the next learner where no child could write in them.

Each child of a batch gets a folder of its own under the batch's folder, holding its
submission. Making and deleting a folder and a file per child costs more than it seems: on
a file system without a journal, the kernel looks at every inode freed in the last seconds
each time it hands out one, and a class of hundreds frees two a child.

A folder that the child's own tmpfs covered before anything of the learner was read (the
child says so in its confinement report, which it sends before the submission runs) still
holds exactly what the parent wrote in it: its file is emptied, and the folder is taken by
the next learner of the batch, whose source is written over the file in place. Any other
folder (no tmpfs of the child's own, a report that never came, a learner's own modules beside
the file, a folder lent to the sandbox's user, anything changed in it) is deleted, as every
folder was before.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from grader.files import write_all
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
            fd = _open_as_kept(tmp)
            if fd is None:  # changed while it waited: no one else's to use
                tempdirs.remove_tree(tmp)
                return None
            try:
                write_all(fd, source)
            finally:
                os.close(fd)
        except BaseException:
            tempdirs.remove_tree(tmp)  # a full disk (or a stop) half-way: the folder goes
            raise
        return tmp, submission

    def keep(self, tmp: str, *, covered: bool) -> None:
        """Keep ``tmp`` for the next learner if its child's own tmpfs ``covered`` it and it
        is as the parent made it; delete it otherwise."""
        fd = _open_as_kept(tmp) if covered else None
        if fd is None:
            tempdirs.remove_tree(tmp)
            return
        os.close(fd)  # emptied: nothing of a learner waits in an idle folder
        with self.lock:
            self.free.append(tmp)


def _open_as_kept(tmp: str) -> int | None:
    """Return the submission's file in ``tmp`` opened for writing and emptied, if the folder
    is as the parent made it; None otherwise.

    As made: a folder of the grader's own (mode 0700) holding that one file alone, a regular
    file of the grader's with one link. A folder that was lent to the sandbox's user (root
    grading as uid 65534) is never kept: a process of that user elsewhere on the machine
    could have held the file open, or opened the folder's mode, for the next learner.
    """
    me = os.geteuid()
    try:
        folder = os.lstat(tmp)
        if not stat.S_ISDIR(folder.st_mode) or folder.st_uid != me:
            return None
        if stat.S_IMODE(folder.st_mode) != 0o700 or os.listdir(tmp) != [SUBMISSION_FILE]:
            return None
        # Neither followed if it is a link, nor waited on if it is a pipe; and emptied only
        # once it is known to be the grader's own file.
        flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(os.path.join(tmp, SUBMISSION_FILE), flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_uid == me:
            os.ftruncate(fd, 0)
            return fd
    except OSError:
        pass
    os.close(fd)
    return None
