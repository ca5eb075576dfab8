"""Builds paisoar's native part for `pip install .`: CMake configures the
repository against the torch of the environment being installed into, builds
libpaisoar, the extension paisoar._C and the CLI (paisoar, paisoar-core), and
the `python` install component places them inside the package.

build/ is shared with scripts/build.sh: when it is already configured (tests,
benchmarks) only the extension is compiled; otherwise it is configured with
the library and the CLI only. PAISOAR_BUILD_DIR picks another directory.
"""
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


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        torch_dir = environment_torch()
        build_dir = Path(os.environ.get("PAISOAR_BUILD_DIR", ROOT / "build"))
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
        built = next(package.glob("_C*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        if built.resolve() != target.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, target)
        (package / "_build_info.py").write_text(
            '"""Written by setup.py: what this build of paisoar was compiled against."""\n'
            f"TORCH_VERSION = {torch_version(torch_dir)!r}\n")


setup(ext_modules=[Extension("paisoar._C", sources=[])], cmdclass={"build_ext": CMakeBuild})
