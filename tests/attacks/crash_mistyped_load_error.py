# While importing, writes its own load error whose "module" is a list: once a TypeError in
# the grader (unhashable list), and exit 3.
import json
import os
import struct
import sys

head = json.dumps(
    {"event": "load_error", "kind": "import_exception", "exc_type": "ModuleNotFoundError",
     "module": ["x"], "line": [1], "nbytes": 0}
).encode()
# The result channel: the last argument a lone child gets, descriptor 3 in a batch's fork.
for fd in (int(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 3, 3):
    try:
        os.write(fd, struct.pack(">I", len(head)) + head)
        break
    except OSError:
        continue
os._exit(0)


def sinusoidal_positions(positions, d_model):
    return None
