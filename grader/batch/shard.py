"""Shares of a class for many machines: which share this machine grades.

An id's share is a hash of the id alone (manifest.share_of), so N machines that see the
same class folder pick disjoint shares that cover it, with no coordination: `--shard K/N`,
or `--shard auto` from a job runner's variables. grader.batch.merge combines their outputs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from grader.batch.manifest import Shard
from grader.errors import GraderError
from grader.states import Word

COUNT_ENV = "GRADER_SHARDS"


class Auto(Word):
    """`--shard auto`: the share a Kubernetes Indexed Job's or a Slurm array's variables say."""

    AUTO = "auto"


STEP_ENV = "SLURM_ARRAY_TASK_STEP"


def _env_int(environ: Mapping[str, str], name: str) -> int:
    text = environ.get(name)
    if text is None:
        raise GraderError(f"--shard auto: {name} is not set")
    # ASCII digits only, and few of them: int() would also take "1_0", " 1", the digits of
    # other scripts and a number of thousands of digits, none of which a job runner sets.
    if not re.fullmatch(r"-?[0-9]{1,9}", text):
        raise GraderError(f"--shard auto: invalid {name} {text!r}, not a whole number")
    return int(text)


def shard_from_env(environ: Mapping[str, str]) -> Shard:
    """Return this task's shard from a Kubernetes Indexed Job's or a Slurm job array's variables.

    Kubernetes: JOB_COMPLETION_INDEX (0-based) and GRADER_SHARDS (the Job's completions,
    which Kubernetes does not pass on). Slurm: SLURM_ARRAY_TASK_ID counted from
    SLURM_ARRAY_TASK_MIN in steps of SLURM_ARRAY_TASK_STEP, and SLURM_ARRAY_TASK_COUNT
    (GRADER_SHARDS, if set, wins).
    """
    if "JOB_COMPLETION_INDEX" in environ:
        where = "JOB_COMPLETION_INDEX"
        index = _env_int(environ, where) + 1
        if COUNT_ENV not in environ:
            raise GraderError(
                f"--shard auto: JOB_COMPLETION_INDEX is set but {COUNT_ENV} is not; set it to "
                "the Job's completions"
            )
        count, count_from = _env_int(environ, COUNT_ENV), COUNT_ENV
    elif "SLURM_ARRAY_TASK_ID" in environ:
        where = "SLURM_ARRAY_TASK_ID"
        task = _env_int(environ, where)
        low = _env_int(environ, "SLURM_ARRAY_TASK_MIN")
        step = _env_int(environ, STEP_ENV) if environ.get(STEP_ENV) else 1
        if step < 1:
            raise GraderError(f"--shard auto: invalid {STEP_ENV} {step}, not 1 or more")
        index = (task - low) // step + 1
        count_from = COUNT_ENV if COUNT_ENV in environ else "SLURM_ARRAY_TASK_COUNT"
        count = _env_int(environ, count_from)
    else:
        raise GraderError(
            "--shard auto: neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor "
            "SLURM_ARRAY_TASK_ID (Slurm job array) is set; give --shard K/N instead"
        )
    if count < 1 or not 1 <= index <= count:
        raise GraderError(
            f"--shard auto: share {index} from {where} is not within 1..{count} "
            f"(the count from {count_from})"
        )
    return Shard(index, count)


def resolve_shard(value: Shard | Auto | None, environ: Mapping[str, str]) -> Shard | None:
    """Return the shard asked for: None for the whole class, K/N as given, or from auto."""
    if value is Auto.AUTO:
        return shard_from_env(environ)
    return value
