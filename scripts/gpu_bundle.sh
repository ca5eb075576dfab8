#!/usr/bin/env bash
# Prepares, on a Debian 12 machine (after scripts/setup.sh), what
# scripts/gpu_check.sh needs on a GPU machine without apt or network: the
# headers, libraries and CMake configs of the Debian packages paisoar builds
# with, copied with their paths into build-gpu-deps/root (about 10 MB). Carry
# that folder to the GPU machine with the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(
  libyaml-cpp-dev libyaml-cpp0.7 libcli11-dev nlohmann-json3-dev libgloo-dev
  libjpeg62-turbo-dev libjpeg62-turbo libpng-dev libpng16-16 zlib1g-dev zlib1g libgtest-dev
)
dest=build-gpu-deps/root
rm -rf build-gpu-deps
mkdir -p "$dest"
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    { echo "gpu_bundle: $pkg is not installed: run scripts/setup.sh first" >&2; exit 1; }
  # Headers, libraries and CMake configs; not docs, man pages or sources.
  # (/lib/... is /usr/lib/... on Debian 12's merged /usr.)
  { dpkg -L "$pkg" | grep -E '^(/usr)?/(include|lib|share/cmake)/' || true; } | while read -r f; do
    if [ -f "$f" ] || [ -L "$f" ]; then
      to="$dest/usr${f#/usr}"
      mkdir -p "$(dirname "$to")"
      cp -a "$f" "$to"
    fi
  done
done
# Absolute symlinks (libz.so -> /lib/...) would point at the GPU machine's own
# files: point them at the copy beside them.
find "$dest" -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in /*) ln -sfn "$(basename "$target")" "$link" ;; esac
done
dpkg-query -W -f='${Package} ${Version}\n' "${PACKAGES[@]}" > build-gpu-deps/PACKAGES
echo "gpu_bundle: $(du -sh build-gpu-deps | cut -f1) in build-gpu-deps (packages: build-gpu-deps/PACKAGES)"
