"""`paisoar launch` started from a Python environment runs .py ranks under
that environment's Python, as torchrun's run under its own (sys.executable),
not under the first python3 on PATH; PAISOAR_PYTHON or torchrun's
PYTHON_EXEC, when set, choose another. The launcher's C++ tests
(tests/launch) cover the rest: the binary's default, and the message for a
Python without torch."""
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import paisoar
import pytest
import torch

RANK = """import sys
print(f"EXECUTABLE={sys.executable}")
import torch
print(f"TORCH={torch.__version__}")
"""


@pytest.fixture
def setup(tmp_path):
    """A rank script; a python3 first on PATH that must not run; and a second
    environment (not the one paisoar was built with) that sees this one's
    torch and paisoar, as a user's other venv with the same packages would."""
    (tmp_path / "rank.py").write_text(RANK)
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'the first python3 on PATH ran' >&2\nexit 3\n")
    fake.chmod(0o755)
    other = tmp_path / "other-env"
    venv.create(other, with_pip=False)
    site_dirs = {Path(paisoar.__file__).resolve().parent.parent, Path(torch.__file__).resolve().parent.parent}
    purelib = subprocess.run([str(other / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "paisoar_test_parent.pth").write_text(
        "".join(f"import site; site.addsitedir({str(d)!r})\n" for d in sorted(site_dirs)))
    env = {k: v for k, v in os.environ.items() if k not in ("PAISOAR_PYTHON", "PYTHON_EXEC")}
    env["PATH"] = f"{fake.parent}:{env.get('PATH', '/usr/bin:/bin')}"
    return tmp_path, other / "bin" / "python", env


def launched(command, rank, env):
    done = subprocess.run([*command, "launch", "--master_port", "0", str(rank)],
                          capture_output=True, text=True, timeout=120, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert f"[rank0]: TORCH={torch.__version__}\n" in done.stdout, output
    return done.stdout


def test_the_console_script_runs_ranks_under_its_environments_python(setup):
    tmp_path, _, env = setup
    script = shutil.which("paisoar", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.fail(f"no `paisoar` console script next to {sys.executable}: install the package (scripts/install_python.sh)")
    out = launched([script], tmp_path / "rank.py", env)
    assert f"[rank0]: EXECUTABLE={sys.executable}\n" in out, out


def test_python_m_paisoar_runs_ranks_under_that_python(setup):
    tmp_path, other_python, env = setup
    out = launched([str(other_python), "-m", "paisoar"], tmp_path / "rank.py", env)
    assert f"[rank0]: EXECUTABLE={other_python}\n" in out, out


def test_paisoar_python_and_python_exec_choose_another(setup):
    tmp_path, other_python, env = setup
    for variable in ("PAISOAR_PYTHON", "PYTHON_EXEC"):
        out = launched([str(other_python), "-m", "paisoar"], tmp_path / "rank.py",
                       dict(env, **{variable: sys.executable}))
        assert f"[rank0]: EXECUTABLE={sys.executable}\n" in out, (variable, out)
