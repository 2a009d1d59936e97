"""Flat: the grader's own layout, a file or a folder per learner, named by the learner.

Not a platform's: a class folder no platform's naming fits is read so, as is any entry of a
platform's export that fits none of its names. Listed last, after every platform.
"""

from __future__ import annotations

from grader.batch.platforms.records import Platform

FLAT = PLATFORM = Platform("flat", "a file or folder per learner", listed=1_000)
