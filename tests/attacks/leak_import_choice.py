# Fails while it is imported, before any input, in a way chosen by what it reads then (here
# its process id; a real attack would read a neighbour's trace in the machine's caches): at a
# chosen line, with an exception class named by the choice, or on a chosen missing module.
import os
import sys

CHOICE = os.getpid() % 20000


def sinusoidal_positions(positions, d_model):
    return None


if CHOICE % 3 == 0:
    code = compile("\n" * (20 + CHOICE) + "raise ValueError('Leak')", __file__, "exec")
    exec(code)
if CHOICE % 3 == 1:
    raise type("Leak_%d" % CHOICE, (Exception,), {})()
try:
    import numpy_helpers_not_here
except ImportError:
    sys.modules.pop("numpy_helpers_not_here", None)
__import__("leak_module_%d" % CHOICE)
