#!/usr/bin/env bash
# Installs the built paisoar into a scratch prefix, builds examples/find_package
# against it with find_package(paisoar), and runs it on 2 ranks with the
# installed launcher.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d /tmp/paisoar-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install build --prefix "$prefix" >/dev/null
cmake -S examples/find_package -B "$prefix/example-build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/example-build"
"$prefix/bin/paisoar" launch --nproc_per_node 2 --master_port 0 -- \
  "$prefix/example-build/allreduce_example"
echo "check_install: the find_package(paisoar) example built and ran on 2 ranks"
