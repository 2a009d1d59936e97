"""The exercise's public part: the function a learner writes, and the arguments it takes.

Read by the grader without being run (only the literal values below count), and shipped
in the learner kit: nothing here is secret.
"""

FUNCTION = "sinusoidal_positions"
ARGUMENTS = ("positions", "d_model")
