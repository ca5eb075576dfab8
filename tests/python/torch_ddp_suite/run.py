"""Runs every test of torch's distributed harness that builds a DDP twice,
with torch's DDP (the control) and with paisoar's in its place (harness.py),
on gloo, 2 ranks, the CPU, and prints the counts: passed with torch, passed
with paisoar, and each test that passes with torch but fails with paisoar,
marked when docs/PYTHON.md excludes it (it reads torch's internals).

  python run.py [--jobs N] [--json OUT] [--only TEST ...] [--ddp torch|paisoar]

Exit status 0 when every test that passes with torch passes with paisoar or
is excluded (and every exclusion still fails), else 1.
A worker (run.py --worker) runs the tests it reads on stdin one at a time
and answers each with a JSON line on the descriptor given to it."""
import argparse
import inspect
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE.parents[2] / "docs" / "PYTHON.md"
EXCLUSIONS_BEGIN, EXCLUSIONS_END = "<!-- torch-ddp-suite exclusions -->", "<!-- /torch-ddp-suite exclusions -->"
# A worker's test past the harness's own timeout (harness.TEST_TIMEOUT_S) by
# this much is killed with its worker.
GRACE_S = 60


def candidates(base):
    """The harness's tests whose code (through the helpers it calls) builds a DistributedDataParallel."""
    source = {name: inspect.getsource(getattr(base, name)) for name in dir(base)
              if not name.startswith("__") and callable(getattr(base, name, None))}

    def builds(name, seen):
        if name in seen:
            return False
        seen.add(name)
        text = source.get(name, "")
        return "DistributedDataParallel" in text or any(builds(m, seen) for m in re.findall(r"self\.(_\w+)\(", text))

    return sorted(n for n in source if n.startswith("test_") and builds(n, set()))


def exclusions(path=DOCS):
    """{test name: reason} from docs/PYTHON.md's table between the markers."""
    text = path.read_text()
    if EXCLUSIONS_BEGIN not in text or EXCLUSIONS_END not in text:
        raise SystemExit(f"{path}: no exclusion table between {EXCLUSIONS_BEGIN} and {EXCLUSIONS_END}")
    table = text.split(EXCLUSIONS_BEGIN, 1)[1].split(EXCLUSIONS_END, 1)[0]
    out = {}
    for row in re.finditer(r"^\|\s*`(test_\w+)`\s*\|\s*(.+?)\s*\|\s*$", table, re.M):
        out[row.group(1)] = row.group(2)
    return out


def summary_line(error_text):
    """The last line of each rank's traceback (or the whole text's last line)."""
    lines = [line for line in error_text.splitlines() if line.strip()]
    ends = [lines[i - 1].strip() for i, line in enumerate(lines) if line.startswith("Process ") and i > 0]
    last = lines[-1].strip() if lines else ""
    picked = [line for line in ends if not line.startswith("Process ")] + [last]
    return " | ".join(dict.fromkeys(picked))[:600]


# --- worker side -------------------------------------------------------------

def worker(answer_fd, marks):
    """Runs the tests named on stdin; one JSON line per test on answer_fd."""
    answers = os.fdopen(answer_fd, "w", buffering=1)
    import harness

    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        result = unittest.TestResult()
        start = time.monotonic()
        harness.TestDistBackendWithSpawn(name).run(result)
        if result.failures or result.errors:
            status, text = "failed", "\n".join(t for _, t in result.failures + result.errors)
        elif result.skipped:
            status, text = "skipped", result.skipped[0][1]
        else:
            status, text = "passed", ""
        answers.write(json.dumps({"test": name, "status": status, "seconds": round(time.monotonic() - start, 1),
                                  "built_ddp": os.path.exists(os.path.join(marks, name)),
                                  "summary": summary_line(text) if text else "", "error": text}) + "\n")


# --- coordinator side ----------------------------------------------------------

class Worker:
    def __init__(self, ddp, marks, log_dir, index, timeout_s):
        read_fd, write_fd = os.pipe()
        env = dict(os.environ, TORCH_DDP_SUITE_DDP=ddp, TORCH_DDP_SUITE_MARKS=marks,
                   TORCH_DDP_SUITE_TIMEOUT=str(timeout_s), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                   PYTORCH_PRINT_REPRO_ON_FAILURE="0")
        self.log = open(Path(log_dir) / f"{ddp}-worker{index}.log", "a")
        self.proc = subprocess.Popen([sys.executable, str(HERE / "run.py"), "--worker", str(write_fd), marks],
                                     stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT, text=True,
                                     env=env, pass_fds=(write_fd,), start_new_session=True)
        os.close(write_fd)
        self.answers = os.fdopen(read_fd, "r")
        self.test = None
        self.deadline = None

    def give(self, test, timeout_s):
        self.test, self.deadline = test, time.monotonic() + timeout_s(test) + GRACE_S
        self.log.write(f"\n===== {test}\n")
        self.log.flush()
        self.proc.stdin.write(test + "\n")
        self.proc.stdin.flush()

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.answers.close()
        self.log.close()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()
        self.answers.close()
        self.log.close()


def run_tests(ddp, tests, jobs, log_dir, base_timeout_s):
    """{test: result} for `tests` with `ddp`'s DDP, on `jobs` workers, `base_timeout_s` a test."""

    def timeout_s(test):
        return base_timeout_s

    marks = tempfile.mkdtemp(prefix=f"torch-ddp-suite-{ddp}-")
    pending, results, workers = list(tests), {}, []
    selector = selectors.DefaultSelector()

    def start(index):
        w = Worker(ddp, marks, log_dir, index, base_timeout_s)
        selector.register(w.answers, selectors.EVENT_READ, w)
        workers.append(w)
        return w

    def feed(w):
        if pending:
            w.give(pending.pop(0), timeout_s)
        else:
            w.test = None

    for i in range(min(jobs, len(pending))):
        feed(start(i))
    while any(w.test for w in workers):
        for key, _ in selector.select(timeout=5):
            w = key.data
            line = w.answers.readline()
            if line:
                result = json.loads(line)
                results[result["test"]] = result
                print(f"  [{ddp}] {result['status']:7} {result['seconds']:6.1f}s {result['test']}", flush=True)
                feed(w)
            else:  # the worker died: its test failed, a new worker takes the rest
                selector.unregister(w.answers)
                w.kill()
                workers.remove(w)
                results[w.test] = {"test": w.test, "status": "failed", "seconds": 0, "built_ddp": True,
                                   "summary": f"the worker died (exit {w.proc.returncode})", "error": ""}
                print(f"  [{ddp}] failed  (worker died) {w.test}", flush=True)
                if pending:
                    feed(start(len(workers) + len(results)))
        for w in list(workers):
            if w.test and time.monotonic() > w.deadline:
                selector.unregister(w.answers)
                w.kill()
                workers.remove(w)
                results[w.test] = {"test": w.test, "status": "failed", "seconds": timeout_s(w.test) + GRACE_S,
                                   "built_ddp": True, "summary": "timed out (the worker was killed)", "error": ""}
                print(f"  [{ddp}] failed  (timed out) {w.test}", flush=True)
                if pending:
                    feed(start(len(workers) + len(results)))
    for w in workers:
        selector.unregister(w.answers)
        w.close()
    return results


def compare(torch_results, paisoar_results, excluded):
    """The verdict: what passes with torch, with paisoar, what differs."""
    passed_torch = sorted(t for t, r in torch_results.items() if r["status"] == "passed" and r["built_ddp"])
    passed_both = [t for t in passed_torch if paisoar_results.get(t, {}).get("status") == "passed"]
    lost = [t for t in passed_torch if t not in passed_both]
    return {
        "passed_torch": passed_torch,
        "passed_paisoar": passed_both,
        "fail_with_paisoar": [t for t in lost if t not in excluded],
        "excluded_failing": [t for t in lost if t in excluded],
        # An exclusion must name a test that passes with torch and fails with paisoar.
        "stale_exclusions": sorted(t for t in excluded if t not in lost),
    }


def report(verdict, torch_results, paisoar_results, excluded):
    n = len(verdict["passed_torch"])
    print(f"\ntorch's DDP suite (distributed_test.py, gloo, 2 ranks, CPU): {len(torch_results)} tests whose code "
          "builds a DDP")
    print(f"passed with torch's DDP:   {n}")
    print(f"passed with paisoar's DDP: {len(verdict['passed_paisoar'])} of those {n}")
    print(f"excluded (they read torch's internals; docs/PYTHON.md): {len(verdict['excluded_failing'])}")
    for t in verdict["fail_with_paisoar"]:
        print(f"FAILS WITH PAISOAR: {t}: {paisoar_results[t]['summary']}")
    for t in verdict["stale_exclusions"]:
        state = (f"torch {torch_results.get(t, {}).get('status', 'not run')}, "
                 f"paisoar {paisoar_results.get(t, {}).get('status', 'not run')}")
        print(f"STALE EXCLUSION (not a test that passes with torch and fails with paisoar: {state}): {t}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2, help="tests at once, each on 2 rank processes (default 2)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test (default 120)")
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--only", nargs="+", help="these tests only")
    parser.add_argument("--ddp", choices=("torch", "paisoar"), help="one side only: print its results")
    parser.add_argument("--logs", help="the workers' logs go here (default: a temporary directory)")
    args = parser.parse_args()

    os.environ["TORCH_DDP_SUITE_DDP"] = "torch"  # listing the tests needs no paisoar
    sys.path.insert(0, str(HERE))
    import harness

    tests = args.only or candidates(harness.DistributedTest._DistTestBase)
    excluded = exclusions()
    log_dir = args.logs or tempfile.mkdtemp(prefix="torch-ddp-suite-logs-")
    os.makedirs(log_dir, exist_ok=True)
    print(f"{len(tests)} tests of torch's harness build a DDP; {args.jobs} at once; logs in {log_dir}", flush=True)
    started = time.monotonic()
    sides = [args.ddp] if args.ddp else ["torch", "paisoar"]
    results = {}
    for side in sides:
        wanted = tests
        if side == "paisoar" and "torch" in results:  # only what the control passed need be tried
            wanted = [t for t, r in results["torch"].items() if r["status"] == "passed" and r["built_ddp"]]
        results[side] = run_tests(side, wanted, args.jobs, log_dir, args.timeout)
    print(f"({time.monotonic() - started:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if len(sides) == 1:
        counts = {}
        for r in results[sides[0]].values():
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        print(f"{sides[0]}: {counts}")
        return 0
    verdict = compare(results["torch"], results["paisoar"], excluded)
    report(verdict, results["torch"], results["paisoar"], excluded)
    if args.json:
        Path(args.json).write_text(json.dumps(dict(results, verdict=verdict), indent=1))
    return 1 if verdict["fail_with_paisoar"] or verdict["stale_exclusions"] else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        answer_fd = int(sys.argv[2])
        os.dup2(2, 1)  # the tests' own prints go to the log, not into the answers
        # From here the forkserver finds harness.py (measured: run from elsewhere, its preload
        # fails and every rank imports torch afresh, ~20 s a test instead of ~1 s).
        os.chdir(HERE)
        sys.path.insert(0, str(HERE))
        worker(answer_fd, sys.argv[3])
    else:
        sys.exit(main())
