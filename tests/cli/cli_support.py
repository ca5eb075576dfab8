"""What a user sees from the real `paisoar` binaries: `run` executes
build/bin/paisoar (or $PAISOAR_BIN) with arguments and returns the exit code,
stdout and stderr, so tests check the words and the code, not an exception
inside. Every run has a timeout: a hang fails the test."""
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("PAISOAR_BIN", ROOT / "build" / "bin" / "paisoar"))


@dataclass
class Result:
    code: int
    out: str
    err: str

    def __str__(self):
        return f"exit {self.code}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


# What the libraries under paisoar say in their own words: a message a user
# reads never passes one through bare (tests/cli checks every run's output).
LIBRARY_PHRASES = [re.compile(p) for p in (
    r"cannot use value\(\)",                                     # nlohmann::json
    r"type must be (string|number|boolean|array|object|null)",    # nlohmann::json
    r"\[json\.exception",                                         # nlohmann::json
    r"Target -?\d+ is out of bounds",                              # torch's cross entropy
    r"\bbad file\b",                                               # yaml-cpp
    r"Exception raised from",                                     # c10's source location
    r"basic_string::|std::bad_",                                  # the C++ library
)]


def library_phrases(text):
    return [p.pattern for p in LIBRARY_PHRASES if p.search(text)]


def run(*args, timeout=120, cwd=None, env=None):
    if not BIN.exists():
        pytest.fail(f"{BIN} does not exist: build paisoar first (scripts/build.sh)")
    full_env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    done = subprocess.run([str(BIN), *map(str, args)], capture_output=True, timeout=timeout, cwd=cwd,
                          env=full_env)
    # Bytes that are not UTF-8 are what a user would see as garbage: fail on them.
    try:
        out, err = done.stdout.decode(), done.stderr.decode()
    except UnicodeDecodeError as e:
        pytest.fail(f"paisoar {' '.join(map(str, args))} printed bytes that are not text: {e}\n"
                    f"{done.stdout!r}\n{done.stderr!r}")
    leaked = library_phrases(out + err)
    if leaked:
        pytest.fail(f"paisoar {' '.join(map(str, args))} passed a library's words through: {leaked}\n{out}\n{err}")
    return Result(done.returncode, out, err)


def printable(text):
    """True when every character is printable or whitespace (no garbage)."""
    return all(c.isprintable() or c in "\n\t\r" for c in text)
