#!/usr/bin/env bash
# Installs the Python package paisoar into the project's venv (scripts/setup.sh
# makes it): `pip install .`, which builds paisoar._C with CMake in build/
# (reusing what scripts/build.sh compiled there). Without build isolation, so
# no network is needed: the venv already has setuptools and torch.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PAISOAR_VENV:-$PWD/.venv}
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps .
"$venv/bin/python" -c "import paisoar; print('install_python: paisoar', paisoar.__version__, 'for torch', paisoar._C.built_with_torch)"
