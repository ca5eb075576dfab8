"""Builds paisoar's native part for `pip install .`: CMake configures the
repository against the torch of the environment being installed into, builds
libpaisoar, the extension paisoar._C and the CLI (paisoar, paisoar-core), and
the `python` install component places them inside the package.

build/ is shared with scripts/build.sh: when it is already configured against
this torch (tests, benchmarks) only the extension is compiled; unconfigured,
it is configured with the library and the CLI only; configured against
another torch (another environment), build-python-<hash>/ is used instead.
PAISOAR_BUILD_DIR picks a directory. Editable installs (-e) are not supported.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def environment_torch():
    """The torch package of the environment pip installs into.

    pip's isolated build hides that environment's site-packages from sys.path,
    but not from sysconfig, which still names it."""
    paths = sysconfig.get_paths()
    for site in (paths["purelib"], paths["platlib"], *sys.path):
        torch_dir = Path(site) / "torch"
        if (torch_dir / "share" / "cmake" / "Torch").is_dir():
            return torch_dir
    sys.exit("paisoar: this environment has no torch to build against "
             f"({sys.executable}); install one first, e.g. "
             "`pip install torch==2.14.1` (scripts/setup.sh pins the tested one)")


def torch_version(torch_dir):
    text = (torch_dir / "version.py").read_text()
    match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", text)
    if not match:
        sys.exit(f"paisoar: cannot read torch's version from {torch_dir / 'version.py'}")
    return match.group(1)


def cached(build_dir, key):
    """A CMakeCache.txt entry of `build_dir`, or None."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.exists():
        return None
    for line in cache.read_text(errors="replace").splitlines():
        if line.startswith(key + ":"):
            return line.split("=", 1)[1]
    return None


def choose_build_dir(torch_cmake):
    """build/ (shared with scripts/build.sh) when it is unconfigured or was
    configured against this torch; else a directory of this environment's
    own, so one torch's headers never meet another's cached libraries."""
    if "PAISOAR_BUILD_DIR" in os.environ:
        return Path(os.environ["PAISOAR_BUILD_DIR"])
    shared = ROOT / "build"
    known = cached(shared, "Torch_DIR")
    if known is None or Path(known).resolve() == torch_cmake.resolve():
        return shared
    tag = hashlib.sha1(f"{torch_cmake.resolve()}|{sys.executable}".encode()).hexdigest()[:8]
    return ROOT / f"build-python-{tag}"


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        torch_dir = environment_torch()
        build_dir = choose_build_dir(torch_dir / "share" / "cmake" / "Torch")
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DPAISOAR_BUILD_PYTHON=ON",
                     f"-DTorch_DIR={torch_dir / 'share' / 'cmake' / 'Torch'}",
                     f"-DPython3_EXECUTABLE={sys.executable}"]
        if not (build_dir / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"] if shutil.which("ninja") else []
            configure += ["-DPAISOAR_BUILD_TESTS=OFF", "-DPAISOAR_BUILD_BENCH=OFF"]
        # The isolated build's PYTHONPATH would hide torch from CMake's Python too.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
        jobs = str(os.cpu_count() or 2)
        subprocess.run(configure, check=True, env=env)
        subprocess.run(["cmake", "--build", str(build_dir), "-j", jobs, "--target",
                        "paisoar_python", "paisoar_cli", "paisoar_core"], check=True, env=env)
        package = Path(self.build_lib) / "paisoar"
        with tempfile.TemporaryDirectory() as staging:
            subprocess.run(["cmake", "--install", str(build_dir), "--component", "python",
                            "--prefix", staging], check=True, env=env)
            shutil.copytree(Path(staging) / "paisoar", package, dirs_exist_ok=True, symlinks=False)
        built = next(package.glob("_C*.so"), None)
        if built is None:
            sys.exit(f"paisoar: the CMake install left no paisoar/_C*.so in {package}; see the build output above")
        target = Path(self.get_ext_fullpath(ext.name))
        if built.resolve() != target.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, target)
        (package / "_build_info.py").write_text(
            '"""Written by setup.py: what this build of paisoar was compiled against."""\n'
            f"TORCH_VERSION = {torch_version(torch_dir)!r}\n")


setup(ext_modules=[Extension("paisoar._C", sources=[])], cmdclass={"build_ext": CMakeBuild})
