# Raises an exception whose class has a name of thousands of characters, from a helper
# with a long name too. A name is cut; the answer is an exception, not tampering.
LONG = "Position" * 600

Error = type(LONG + "Error", (Exception,), {})
exec(f"def {LONG}_helper():\n    raise Error('not yet')", globals())


def sinusoidal_positions(positions, d_model):
    globals()[LONG + "_helper"]()
