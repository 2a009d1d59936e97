"""The exceptions the grader raises for usage and configuration problems, and the exit
statuses every command ends with (docs/exit-codes.md)."""

# 0: graded and passed (or done); 1: graded and failed, or nothing gradable; 2: usage,
# configuration or the machine; 3: a bug of the grader. A stop signal ends as 128 + N.
EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class GraderError(Exception):
    """A problem with the grader's input (arguments, problem files), never with a submission.

    The CLI prints its message on one line and exits with ``status`` (2: usage,
    configuration or environment); candidate failures are never raised as this, they are
    reported as case outcomes.
    """

    status = EXIT_USAGE


class NothingToGrade(GraderError):
    """The command ran, and found nothing it could grade (exit 1)."""

    status = EXIT_FAILED


# The field of an issue with a problem file as a whole, where no field of it is at fault.
WHOLE_FILE = "(file)"


class Refused(GraderError):
    """A problem file refused as it was read: one short line, with the field and the line.

    ``field`` is the dotted field where reading stopped (WHOLE_FILE for the file as a whole)
    and ``line`` the line it starts on, when there is one.
    """

    def __init__(self, message: str, *, field: str = WHOLE_FILE, line: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.line = line
