"""The one exception type the grader raises for usage and configuration problems."""


class GraderError(Exception):
    """A problem with the grader's input (arguments, problem files), never with a submission.

    The CLI prints its message on one line and exits 2; candidate failures are never raised
    as this, they are reported as case outcomes.
    """
