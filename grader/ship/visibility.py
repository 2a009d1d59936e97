"""When Gradescope shows a learner the tests or the output: its results.json's values.

A module of its own, importing nothing, so that the CLI's parser reads it at no cost.
"""

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
