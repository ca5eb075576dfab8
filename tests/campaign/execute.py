"""Runs a case through the real binary: in its own directory and session,
with a timeout (a hang is killed with every process of its session, the
launcher's ranks included, and reported),
under a 4 GiB data-segment limit (a reader that allocates what a lying header
announces fails there instead of taking the machine), and with the variables
of an enclosing launcher removed so `paisoar train` starts its own ranks."""
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_support import BIN  # noqa: E402  (the binary the CLI tests run)

DATA_LIMIT_KIB = 4 << 20
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
                 "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")


@dataclass
class Run:
    command: str      # the shell line that reproduces it (from the case directory)
    code: int         # exit status; -N for signal N
    out: bytes
    err: bytes
    timed_out: bool
    seconds: float
    dir: Path


def case_env(extra):
    env = {k: v for k, v in os.environ.items()
           if k not in LAUNCHER_VARS and not k.startswith(("TORCHELASTIC_", "PAISOAR_"))}
    env.update(OMP_NUM_THREADS="1", LC_ALL="C.UTF-8")
    env.update(extra)
    return env


def kill_session(sid):
    """SIGKILL every process of the session this call started (the binary and the
    ranks its launcher put in process groups of their own), each by its id."""
    for _ in range(3):
        members = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid:  # fields after the name: state, ppid, pgrp, session
                members.append(int(stat.parent.name))
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not members:
            return
        time.sleep(0.5)


def run_case(case, root):
    """Prepares `case` under root/<family>/<name> and runs it. Exit 127 (the
    binary or paisoar-core missing, as while they are being relinked) is
    retried on a fresh copy of the input after a pause."""
    for attempt in range(10):
        where = Path(root) / case.family / case.name
        if where.exists():
            shutil.rmtree(where)
        where.mkdir(parents=True)
        run, prepared = run_once(case, where)
        if run.code != 127:
            break
        time.sleep(30)
    return run, prepared


def run_once(case, where):
    prepared = case.prepare(where)
    args = [str(a) for a in prepared.args]
    shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in prepared.env.items())
    command = (shown + " " if shown else "") + shlex.join([str(BIN), *args])
    wrapper = ["bash", "-c", f'ulimit -d {DATA_LIMIT_KIB} && exec "$0" "$@"', str(BIN), *args]
    start = time.monotonic()
    process = subprocess.Popen(wrapper, cwd=where, env=case_env(prepared.env), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = process.communicate(timeout=case.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_session(process.pid)
        out, err = process.communicate()
    return Run(command, process.returncode, out, err, timed_out, time.monotonic() - start, where), prepared
