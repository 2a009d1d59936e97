"""Allow `python -m grader`."""

from grader.launch import entry

entry()
