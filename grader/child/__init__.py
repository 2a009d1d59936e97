"""Code that runs inside the child: no import from the rest of the grader package."""
