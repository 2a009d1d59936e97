"""What only a learner kit holds: its own package (the grader vendored under the kit's
name), `check` for notebooks and its report."""
