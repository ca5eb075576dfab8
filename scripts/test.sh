#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, installs paisoar into
# a scratch prefix and builds and runs the find_package example against it (as a
# user's own project would), then runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
scripts/check_install.sh
ctest --test-dir build --output-on-failure -j 2
