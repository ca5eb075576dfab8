#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, installs paisoar into
# a scratch prefix and builds and runs the find_package example against it (as a
# user's own project would), runs every C++ test with ctest, fuzzes every reader
# of untrusted input for a bounded time (scripts/fuzz.sh), then installs the
# Python package into the venv (pip install .) and runs its tests and the
# tests of what the real binaries print (tests/cli) and the bad-input
# campaign's quick mode (tests/campaign) with pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
scripts/check_install.sh
ctest --test-dir build --output-on-failure -j 2
scripts/fuzz.sh   # libFuzzer over every reader of untrusted input, 60 s each (tests/fuzz/README.md)
scripts/install_python.sh
"${PAISOAR_VENV:-$PWD/.venv}/bin/python" -m pytest -q tests/python tests/cli tests/campaign
