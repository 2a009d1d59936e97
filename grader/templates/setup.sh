#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
# Environment, for testing the script outside Gradescope:
#   AUTOGRADER_ROOT   instead of /autograder
#   GRADER_SKIP_APT=1 skip the system packages (already there)
#   GRADER_PYTHON     the interpreter that makes the venv (default python3; 3.10 or later)
#   GRADER_PIP_ARGS   extra arguments for pip install (for example, offline flags)
#   GRADER_SKIP_LOCK=1 skip the grading stack of requirements.lock (already in the venv)
set -euo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
python="${GRADER_PYTHON:-python3}"

# A failed step is written down for run_autograder, which then gives every submission a
# "not graded" result that says so, instead of no result at all.
rm -f "$root/setup_error"
trap 'echo "setup.sh line $LINENO: $BASH_COMMAND exited with status $?" >"$root/setup_error"' ERR

if [ "${GRADER_SKIP_APT:-0}" != 1 ]; then
  apt-get update
  # bubblewrap is the preferred sandbox; where the image cannot use it, the grader falls
  # back to Landlock by itself.
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    python3 python3-venv python3-pip bubblewrap
fi

# Ubuntu 22.04, Gradescope's default image, has Python 3.10: the oldest the grader supports.
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "$python is not a Python 3.10 or later" | tee "$root/setup_error" >&2
  exit 1
fi
if [ ! -x "$root/venv/bin/python" ]; then
  "$python" -I -m venv "$root/venv"
fi
# The grading stack first, exactly as requirements.lock pins it (versions and hashes, wheels
# only), as the grader's container image installs it; then the grader, with nothing left
# to fetch.
if [ "${GRADER_SKIP_LOCK:-0}" != 1 ]; then
  # shellcheck disable=SC2086  # GRADER_PIP_ARGS is a list of words on purpose
  "$root/venv/bin/python" -I -m pip install --quiet --require-hashes --only-binary :all: \
    ${GRADER_PIP_ARGS:-} -r "$root/source/requirements.lock"
fi
# shellcheck disable=SC2086
"$root/venv/bin/python" -I -m pip install --quiet --no-deps --no-build-isolation \
  ${GRADER_PIP_ARGS:-} "$root/source"
# The grader must import in the venv it will run in; better to fail here than per submission.
# -I everywhere: a file in the working folder never stands in for a module (see run_autograder).
"$root/venv/bin/python" -I -c 'import grader.cli'
