"""Config values, key by key: every key of the schema given values of the
wrong type (in the file), integers and numbers at and past the ends of their
types and non-finite ones, the same through --set, and tiny training runs
whose numbers are in range but extreme. Printed configs are judged by the
oracle; a run that exits 0 must have trained on finite losses."""
import math
import re

from case import Case, Prepared
from family_config import REFUSE, SEED_CONFIG, decoded, oracle_check, print_case, writer
from seeds import sets
from yaml_subset import Schema

WRONG = {
    "int": ["abc", "1.5", "[1]", "{a: 1}", "true", "~", '""', "1e3", "0x"],
    "float": ["abc", "[1.0]", "{a: 1}", "true", "~", '""', "1,5", "0x10"],
    "bool": ["maybe", "2", "[true]", "{a: 1}", "~", '""', "tRUE", "yess"],
    "str": ["[a]", "{a: 1}", "~", "[]"],
    "list-int": ["{a: 1}", "[[1]]", "[{a: 1}]", "abc", "~", "[1, abc]", "[1.5]", "5"],
    "list-str": ["{a: 1}", "[[a]]", "[{a: 1}]", "~", "conv*", "[a, [b]]"],
}
EXTREME = {
    "int": ["9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
            "4294967296", "-1", "99999999999999999999999"],
    "float": [".inf", "-.inf", ".nan", "1e308", "-1e308", "5e-324", "1e400", "-0.0"],
}
WHY_TYPED = "the value may still be valid for the key (a number is a string too): the printed config must match"


def yaml_for(key, value):
    section, _, name = key.rpartition(".")
    return f"{section}:\n  {name}: {value}\n" if section else f"{key}: {value}\n"


def per_key(schema, family, table, count):
    """`count` values for each key from its kind's list, rotated so that every
    value of a list is used across the keys."""
    out = []
    for i, (key, kind) in enumerate(sorted(schema.kinds.items())):
        values = table.get(kind, [])
        for j in range(min(count, len(values))):
            v = values[(i + j) % len(values)]
            out.append(print_case(schema, family, f"{key}={v}", f"a config setting {key} to {v}",
                                  writer(yaml_for(key, v)), WHY_TYPED, names=None))
    return out


SETS = [
    # (--set argument, expected: REFUSE or the values it sets)
    ("optimizer.lr", REFUSE), ("=0.1", REFUSE), ("optimizer.=0.1", REFUSE), (".lr=0.1", REFUSE),
    ("optimizer.lr=", REFUSE), ("optimizer.lr=[1", REFUSE), ("optimizer.lr={a: 1}", REFUSE),
    ("optimizer=5", REFUSE), ("optimizer.lr.x=1", REFUSE), ("a.b.c.d=1", REFUSE), ("OPTIMIZER.LR=0.1", REFUSE),
    ("optimizer.lr==0.1", REFUSE), ("optimizer.lr=0.1=2", REFUSE), ("optimizer.lr=0.1 # c", {"optimizer.lr": 0.1}),
    ("optimizer.lr= 0.1", {"optimizer.lr": 0.1}), ("optimizer.lr=.nan", REFUSE), ("optimizer.lr=1e400", REFUSE),
    ("model.hidden=[1,2", REFUSE), ("model.hidden=[[1]]", REFUSE), ("model.hidden=1", REFUSE),
    ("run_dir=", REFUSE), ("seed=0x10", {"seed": 16}), ("seed=1e3", REFUSE), ("seed= ", REFUSE),
    ("train.batch_size=-0", REFUSE), ("optimizer.name=SGD", REFUSE), ("optimizer.name=sgd ", {}),
    ("data.path=" + "p" * 100000, {"data.path": "p" * 100000}), ("seed=1\nseed=2", REFUSE),
    ("optimizer.lr=0.1\n  momentum: 0.5", REFUSE), ("model.hidden=[1, 2]", {"model.hidden": [1, 2]}),
]


def set_cases(schema):
    out = []
    for i, (arg, expect) in enumerate(SETS):
        key = arg.split("=", 1)[0]
        def prepare(where, arg=arg, key=key, expect=expect):
            return Prepared(["train", "--set", arg, "--print-config"], [key or "--set", "--set"],
                            check=oracle_check(schema, "", expect))
        accept = None if expect == REFUSE else "the value is valid for the key; the printed config must match"
        out.append(Case("config/set", f"{i}", f"--set {arg[:60]!r}", prepare, accept))
    return out


# Tiny runs with values in range but extreme: (name, --set values, keys the error may name)
TRAIN = [
    ("seed-config", [], []),
    ("lr-1e300", ["optimizer.lr=1e300"], ["optimizer.lr"]),
    ("weight-decay-1e300", ["optimizer.weight_decay=1e300"], ["optimizer.weight_decay"]),
    ("momentum-0.9999999999", ["optimizer.momentum=0.9999999999"], ["optimizer.momentum"]),
    ("clip-1e-300", ["optimizer.clip_grad_norm=1e-300"], ["optimizer.clip_grad_norm"]),
    ("init-scale-1e38", ["amp.init_scale=1e38", "amp.dtype=fp16"], ["amp.init_scale", "amp.dtype"]),
    ("fp16-on-cpu", ["amp.dtype=fp16"], ["amp.dtype"]),
    ("init-scale-5e-324", ["amp.init_scale=5e-324", "amp.dtype=fp16"], ["amp.init_scale", "amp.dtype"]),
    ("lr-5e-324", ["optimizer.lr=5e-324"], ["optimizer.lr"]),
    ("classes-2", ["model.num_classes=2"], ["model.num_classes", "train-labels-idx1-ubyte.gz"]),
    ("classes-1000000", ["model.num_classes=1000000"], ["model.num_classes"]),
    ("hidden-1000000", ["model.hidden=[1000000]"], ["model.hidden"]),
    ("workers-64", ["data.workers=64"], ["data.workers"]),
    ("prefetch-1000000", ["data.prefetch_factor=1000000"], ["data.prefetch_factor"]),
    ("accumulation-16", ["train.grad_accumulation=16"], ["train.grad_accumulation", "train.batch_size"]),
    ("batch-1000000", ["train.batch_size=1000000"], ["train.batch_size", "data.train_limit"]),
    ("warmup-1e9", ["schedule.warmup_steps=1000000000"], ["schedule.warmup_steps"]),
    ("pipeline-2-on-1-rank", ["parallel.pipeline=2"], ["parallel.pipeline", "parallel:"]),
    ("zero-3", ["zero.stage=3"], ["zero.stage"]),
    ("keep-last-0", ["checkpoint.keep_last=0", "checkpoint.every_steps=1"], ["checkpoint.keep_last"]),
    ("seed-max", ["seed=9223372036854775807"], ["seed"]),
    ("seed-negative", ["seed=-9223372036854775808"], ["seed"]),
    ("train-limit-max", ["data.train_limit=9223372036854775807"], ["data.train_limit"]),
    ("trace-1000000-steps", ["profiler.trace_start_step=0", "profiler.trace_steps=1000000", "profiler.enabled=true"],
     ["profiler.trace_steps"]),
    ("bucket-1e-300", ["distributed.bucket_cap_mb=1e-300"], ["distributed.bucket_cap_mb"]),
    ("eval-every-step", ["eval.every_steps=1", "data.eval_limit=9223372036854775807"],
     ["eval.every_steps", "data.eval_limit"]),
    ("target-100-stop", ["eval.target_accuracy=100", "eval.stop_at_target=true"], ["eval.target_accuracy"]),
    ("log-every-max", ["train.log_every=9223372036854775807"], ["train.log_every"]),
    ("max-steps-huge-epochs", ["train.epochs=1000000000", "train.max_steps=3"], ["train.epochs"]),
]
LOSS = re.compile(r"\bloss ([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf))\b")
DONE = re.compile(r"done: (\d+) steps")


def finite(text):
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def trained_finite(run):
    """An exit-0 check: at least one step trained, and every loss printed is finite."""
    text = decoded(run.out) + decoded(run.err)
    done = DONE.search(text)
    if not done or int(done.group(1)) == 0:
        return "it reports no finished training step"
    bad = [v for v in LOSS.findall(text) if not finite(v)]
    return f"it printed non-finite losses {bad[:3]}" if bad else None


def train_cases(seeds):
    out = []
    for name, values, names in TRAIN:
        def prepare(where, values=values, names=names):
            path = where / "config.yaml"
            path.write_text(SEED_CONFIG)
            (where / "idx").symlink_to(seeds.idx)
            return Prepared(["train", "--config", path, "--nproc", "1", *sets(*values)], names + [str(path)],
                            check=trained_finite)
        out.append(Case("config/train-extreme", name, "the campaign's config with " + (", ".join(values) or "nothing"),
                        prepare, "the values are in range: a run that trains on finite losses is right", 180))
    return out


def cases(seeds):
    schema = Schema(seeds.defaults_text())
    return (per_key(schema, "config/wrong-type", WRONG, 2) + per_key(schema, "config/extreme-number", EXTREME, 3)
            + set_cases(schema) + train_cases(seeds))
