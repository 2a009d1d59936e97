#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
# Environment, for testing the script outside Gradescope:
#   AUTOGRADER_ROOT   instead of /autograder
#   GRADER_SKIP_APT=1 skip the system packages (already there)
#   GRADER_PYTHON     the interpreter that makes the venv (default python3)
#   GRADER_PIP_ARGS   extra arguments for pip install (for example, offline flags)
set -euo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"

if [ "${GRADER_SKIP_APT:-0}" != 1 ]; then
  apt-get update
  # bubblewrap is the preferred sandbox; where the image cannot use it, the grader falls
  # back to Landlock by itself.
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    python3 python3-venv python3-pip bubblewrap
fi

if [ ! -x "$root/venv/bin/python" ]; then
  "${GRADER_PYTHON:-python3}" -m venv "$root/venv"
fi
# shellcheck disable=SC2086  # GRADER_PIP_ARGS is a list of words on purpose
"$root/venv/bin/python" -m pip install --quiet ${GRADER_PIP_ARGS:-} "$root/source"
