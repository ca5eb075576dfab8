"""The flags of every command with values that must be refused: numbers out
of range, not numbers, NaN and infinities for seconds, ports and counts that
cannot be, missing values, unknown subcommands, paths of the wrong kind.
Each must be refused with the flag (or the bad value) named. `paisoar
launch` runs /bin/true, so a flag that was wrongly taken costs nothing."""
import os

from case import Case, Prepared
from data_files import idx_set

TRUE = "/bin/true"
LAUNCH = [
    ("--nproc_per_node", ["0", "-1", "abc", "1000000", "", "1e3", "0x10", "gpu"]),
    ("--nnodes", ["0", "abc", "2:3", "3:2", "-1", ""]),
    ("--node_rank", ["-1", "1", "abc"]),
    ("--master_port", ["-1", "65536", "abc", "99999999999"]),
    ("--rdzv_backend", ["etcd", ""]),
    ("--rdzv_endpoint", ["host:99999", ":::", "host:abc"]),
    ("--rdzv_conf", ["join_timeout=abc", "x", "join_timeout=-1", "join_timeout=nan"]),
    ("--max_restarts", ["-1", "abc", "1.5"]),
    ("--grace_period", ["inf", "nan", "-1", "abc", "1e10"]),
    ("--heartbeat_timeout", ["-1", "nan", "inf"]),
    ("--hang_timeout", ["-1", "nan", "inf", "abc"]),
    ("--join_timeout", ["nan", "-1", "inf"]),
    ("--monitor_interval", ["nan", "-1", "abc"]),
    ("--start_method", ["xyz"]),
    ("--redirects", ["9", "x", "0:9", "5:1"]),
    ("--tee", ["9", "x"]),
    ("--local_ranks_filter", ["a", "-1", "5"]),
    ("--omp_num_threads", ["-1", "0", "abc"]),
]
TRAIN = [("--nproc", ["0", "-1", "65", "abc", "", "1.5", "99999999999"])]
DEMO = [("--nproc", ["0", "65", "abc"]), ("--numel", ["0", "-1", "1073741825", "abc", "1e3"]),
        ("--iters", ["0", "100001", "abc"])]
CONVERT = [("--records-per-shard", ["0", "-1", "abc", "1e3", "1099511627777"]), ("--workers", ["0", "1025", "abc", "-1"])]


def flag_case(family, name, args, names, make=None, accept=None):
    def prepare(where):
        full = [a(where) if callable(a) else a for a in args]
        if make:
            make(where)
        return Prepared(full, names)
    return Case(family, name, f"paisoar {' '.join(a if isinstance(a, str) else '<path>' for a in args)}"[:120],
                prepare, accept, timeout=60)


def convert_args(where):
    idx_set(where / "idx", count=8)
    return where


def cases(seeds):
    out = []
    for flag, values in LAUNCH:
        for v in values:
            out.append(flag_case("flags/launch", f"{flag}={v}", ["launch", flag, v, TRUE], [flag, flag.replace("_", "-")]))
    for flag, values in TRAIN:
        for v in values:
            out.append(flag_case("flags/train", f"{flag}={v}", ["train", flag, v, "--print-config"], [flag]))
    for flag, values in DEMO:
        for v in values:
            out.append(flag_case("flags/demo", f"{flag}={v}", ["demo", flag, v], [flag]))
    for flag, values in CONVERT:
        for v in values:
            out.append(flag_case("flags/convert", f"{flag}={v}",
                                 ["convert", "idx", "--images",
                                  lambda w: convert_args(w) / "idx" / "train-images-idx3-ubyte.gz",
                                  "--labels", lambda w: w / "idx" / "train-labels-idx1-ubyte.gz", "--out",
                                  lambda w: w / "out", flag, v, "--quiet"], [flag]))
    out += paths()
    return out


def paths():
    """Flags whose values are paths of the wrong kind, and commands missing what they need."""
    images = lambda w: w / "idx" / "train-images-idx3-ubyte.gz"  # noqa: E731
    labels = lambda w: w / "idx" / "train-labels-idx1-ubyte.gz"  # noqa: E731

    def with_idx(w):
        idx_set(w / "idx", count=8)

    def fifo_images(w):
        with_idx(w)
        os.unlink(images(w))
        os.mkfifo(images(w))

    def file_out(w):
        with_idx(w)
        (w / "out").write_text("x")

    def run_with_metrics(w):
        (w / "run").mkdir()
        (w / "run" / "metrics.jsonl").write_text('{"step": 1, "loss": 1.0}\n')

    rows = [
        ("launch", "no-program", ["launch", "--nproc_per_node", "1"], ["PROGRAM", "program"], None),
        ("launch", "program-missing", ["launch", "/nonexistent/prog"], ["/nonexistent/prog"], None),
        ("launch", "program-directory", ["launch", "/tmp"], ["/tmp"], None),
        ("launch", "program-not-executable", ["launch", lambda w: w / "x.sh"], ["x.sh"],
         lambda w: (w / "x.sh").write_text("echo hi\n")),
        ("launch", "log-dir-is-file", ["launch", "--log_dir", lambda w: w / "f", TRUE], ["--log_dir", "log-dir", "/f"],
         lambda w: (w / "f").write_text("x")),
        ("convert", "images-directory", ["convert", "idx", "--images", lambda w: w, "--labels", labels, "--out",
                                         lambda w: w / "out"], ["--images"], with_idx),
        ("convert", "images-fifo", ["convert", "idx", "--images", images, "--labels", labels, "--out",
                                    lambda w: w / "out", "--quiet"], ["train-images-idx3-ubyte.gz"], fifo_images),
        ("convert", "out-is-file", ["convert", "idx", "--images", images, "--labels", labels, "--out",
                                    lambda w: w / "out", "--quiet"], ["out"], file_out),
        ("convert", "root-is-file", ["convert", "folder", "--root", lambda w: w / "f", "--out", lambda w: w / "out"],
         ["--root", "/f"], lambda w: (w / "f").write_text("x")),
        ("convert", "root-empty", ["convert", "folder", "--root", lambda w: w / "empty", "--out", lambda w: w / "out",
                                   "--quiet"], ["empty"], lambda w: (w / "empty").mkdir()),
        ("convert", "no-subcommand", ["convert"], ["convert", "idx", "folder"], None),
        ("report", "no-runs", ["report"], ["runs", "RUN"], None),
        ("report", "html-is-directory", ["report", lambda w: w / "run", "--html", lambda w: w / "run"], ["--html", "/run"],
         run_with_metrics),
        ("report", "html-missing-dir", ["report", lambda w: w / "run", "--html", lambda w: w / "no" / "r.html"],
         ["no/r.html", "/no'"], run_with_metrics),
        ("report", "png-in-proc", ["report", lambda w: w / "run", "--png", "/proc/r.png"], ["/proc/r.png"],
         run_with_metrics),
        ("zero-consolidate", "dir-is-file", ["zero-consolidate", lambda w: w / "f", lambda w: w / "o.safetensors"],
         ["dir", "/f"], lambda w: (w / "f").write_text("x")),
        ("zero-consolidate", "extra-argument", ["zero-consolidate", lambda w: w, lambda w: w / "o", "extra"], ["extra"],
         None),
        ("bench", "no-subcommand", ["bench"], ["bench"], None),
        ("bench", "unknown", ["bench", "nosuch"], ["nosuch"], None),
        ("top", "no-command", [], ["command", "Commands"], None),
        ("top", "help-unknown", ["help", "nosuch"], ["nosuch"], None),
        ("train", "config-missing-value", ["train", "--config"], ["--config"], None),
        ("train", "set-missing-value", ["train", "--set"], ["--set"], None),
        ("train", "positional", ["train", "extra", "--print-config"], ["extra"], None),
    ]
    return [flag_case(f"flags/{command}", name, args, names, make) for command, name, args, names, make in rows]
