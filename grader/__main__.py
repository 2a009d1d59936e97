"""Allow `python -m grader`."""

from grader.cli import entry

entry()
