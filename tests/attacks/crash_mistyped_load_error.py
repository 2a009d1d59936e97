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
os.write(int(sys.argv[1]), struct.pack(">I", len(head)) + head)
os._exit(0)


def sinusoidal_positions(positions, d_model):
    return None
