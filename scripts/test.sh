#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, installs paisoar into
# a scratch prefix and builds and runs the find_package example against it (as a
# user's own project would), runs every C++ test with ctest, fuzzes every reader
# of untrusted input for a bounded time (scripts/fuzz.sh), then installs the
# Python package into the venv (pip install .) and runs its tests and the
# tests of what the real binaries print (tests/cli) and the bad-input
# campaign's quick mode (tests/campaign) with pytest.
# Each phase's wall time is printed as it ends ("test.sh: build: 612 s"), and
# all of them at the end, so a slow suite says where its time went.
set -euo pipefail
cd "$(dirname "$0")/.."
timings=()
phase() {  # phase NAME COMMAND...: runs it, records its seconds
  local name=$1 start=$SECONDS
  shift
  "$@"
  timings+=("$name: $((SECONDS - start)) s")
  echo "test.sh: ${timings[-1]}"
}
phase setup scripts/setup.sh
phase build scripts/build.sh
phase install-check scripts/check_install.sh
phase ctest ctest --test-dir build --output-on-failure -j 2
phase fuzz scripts/fuzz.sh   # libFuzzer over every reader of untrusted input, 60 s each (tests/fuzz/README.md)
phase install-python scripts/install_python.sh
phase pytest "${PAISOAR_VENV:-$PWD/.venv}/bin/python" -m pytest -q tests/python tests/cli tests/campaign
echo "test.sh: the suite passed in $SECONDS s ($(IFS=';'; echo "${timings[*]}"))"
