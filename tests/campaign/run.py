"""The bad-input campaign: every family's damaged inputs through the real
paisoar binary ($PAISOAR_BIN, else build/bin/paisoar), each classified (see
verdict.py). Prints the counts per family and class and every failure with
its command and output, writes them all as JSON, and exits 1 on a failure.

    python tests/campaign/run.py [--quick] [--jobs 2] [--json out.json] [--family REGEX]

--quick runs a deterministic subset that still covers every family."""
import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from case import select_quick  # noqa: E402
from execute import BIN, run_case  # noqa: E402
from seeds import make_seeds  # noqa: E402
from verdict import CLASSES, FAILURES, classify  # noqa: E402
import family_checkpoint  # noqa: E402
import family_config  # noqa: E402
import family_config_values  # noqa: E402
import family_flags  # noqa: E402
import family_idx  # noqa: E402
import family_images  # noqa: E402
import family_metrics  # noqa: E402
import family_shards  # noqa: E402
import family_zero  # noqa: E402

FAMILY_MODULES = (family_config, family_config_values, family_idx, family_images, family_shards, family_checkpoint,
                  family_metrics, family_zero, family_flags)
QUICK_PER_FAMILY = 1


def all_cases(seeds):
    cases = []
    for module in FAMILY_MODULES:
        cases += module.cases(seeds)
    ids = [c.id for c in cases]
    duplicates = {i for i in ids if ids.count(i) > 1}
    assert not duplicates, f"case ids must be unique: {sorted(duplicates)}"
    return cases


def run_one(case, root, keep):
    run, prepared = run_case(case, root)
    verdict, reason = classify(case, run, prepared)
    out = (run.out + b"\n" + run.err).decode(errors="replace").strip()
    record = {"id": case.id, "family": case.family, "name": case.name, "what": case.what, "class": verdict,
              "reason": reason, "code": run.code, "seconds": round(run.seconds, 2), "command": run.command,
              "output_tail": "\n".join(out.splitlines()[-12:])}
    if verdict in FAILURES or keep:
        record["dir"] = str(run.dir)
    else:
        shutil.rmtree(run.dir, ignore_errors=True)
    return record


def campaign(quick=False, jobs=2, family=None, workdir=None, keep=False, progress=print):
    """Runs the campaign; returns the list of result records."""
    if not BIN.exists():
        raise SystemExit(f"{BIN} does not exist: build paisoar (scripts/build.sh) or set PAISOAR_BIN")
    root = Path(workdir or tempfile.mkdtemp(prefix="paisoar-campaign-"))
    seeds = make_seeds(root)
    cases = all_cases(seeds)
    if quick:
        cases = select_quick(cases, QUICK_PER_FAMILY)
    if family:
        cases = [c for c in cases if re.search(family, c.family)]
    progress(f"{len(cases)} cases under {root} with {BIN}")
    results = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for record in pool.map(lambda c: run_one(c, root / "cases", keep), cases):
            results.append(record)
            if record["class"] in FAILURES:
                progress(f"  {record['class']}: {record['id']}: {record['reason']}")
            if len(results) % 50 == 0:
                progress(f"  {len(results)}/{len(cases)} done")
    return results


def table(results):
    families = sorted({r["family"] for r in results})
    width = max([len(f) for f in families] + [6])
    lines = [f"{'family':<{width}} " + " ".join(f"{c:>16}" for c in CLASSES) + f" {'total':>6}"]
    for f in families + ["all"]:
        rows = [r for r in results if f in ("all", r["family"])]
        counts = [sum(r["class"] == c for r in rows) for c in CLASSES]
        lines.append(f"{f:<{width}} " + " ".join(f"{n:>16}" for n in counts) + f" {len(rows):>6}")
    return "\n".join(lines)


def report_failures(results):
    lines = []
    for r in results:
        if r["class"] in FAILURES:
            lines += [f"{r['class']} {r['id']}: {r['what']}", f"  why: {r['reason']}", f"  run: {r['command']}",
                      f"  kept in: {r.get('dir')}", "  output:"]
            lines += ["    " + line for line in r["output_tail"].splitlines()]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PER_FAMILY} case(s) per family")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once")
    parser.add_argument("--family", help="only families matching this regular expression")
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--workdir", help="where the inputs go (default: a new temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep every case's directory, not only failures'")
    args = parser.parse_args(argv)
    start = time.monotonic()
    results = campaign(args.quick, args.jobs, args.family, args.workdir, args.keep)
    print(table(results))
    failures = report_failures(results)
    print(failures or "no failures")
    print(f"{len(results)} cases in {time.monotonic() - start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"binary": str(BIN), "quick": args.quick, "results": results}, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
