"""`paisoar train --config FILE` over damaged YAML: the campaign's config cut
at many offsets, bytes replaced by printable characters and by binary ones,
duplicated keys and sections, shapes that are not a config, and paths that
are not regular files. Each runs with --print-config; exit 0 is right only
when the printed config is what the text means (yaml_subset.py's oracle:
YAML has no length or checksum, so a cut or changed file can still be a
valid config), else the error must name the file."""
import os
import random
import string

from case import Case, Prepared
from mutate import cut_offsets, with_byte
from yaml_subset import Refuse, Schema, Unknown, differences

SEED_CONFIG = """\
# The bad-input campaign's config: a tiny run of the mlp on a few IDX images.
seed: 3
run_dir: run
model:
  name: mlp
  num_classes: 10
  hidden: [32, 16]
data:
  format: idx
  path: idx            # a link to the seed IDX set
  train_limit: 64
  eval_limit: 16
  on_error: raise
train:
  epochs: 1
  max_steps: 2
  batch_size: 8
  log_every: 1
optimizer:
  name: sgd
  lr: 0.05
  momentum: 0.9
  weight_decay: 0.0001
amp:
  dtype: auto
  fp32_modules: [head]
profiler:
  enabled: false
  memory: false
eval:
  target_accuracy: 50.0
"""
MAY_STILL_BE_VALID = ("YAML has no length or checksum, so the damaged text can still be a valid config: exit 0 is "
                      "right when the printed config is what the text means (yaml_subset.py)")
REFUSE = "refuse"


def decoded(data):
    return data.decode("utf-8", errors="replace")


def oracle_check(schema, text, expect):
    """An exit-0 check: the printed config equals what `text` means, or `expect`
    (a dict of values over the defaults; REFUSE: no config at all)."""
    def check(run):
        try:
            printed = schema.values(decoded(run.out))
        except (Refuse, Unknown) as e:
            return f"its printed config does not parse ({e})"
        if expect == REFUSE:
            return "the input must be refused"
        if expect is not None:
            wanted = {**schema.defaults, **expect}
        else:
            try:
                wanted = schema.config(text)
            except Refuse as e:
                return f"the text must be refused: {e}"
            except Unknown as e:
                return f"the text is outside the oracle's YAML subset ({e}); judge it by hand"
        problems = differences(wanted, {**schema.defaults, **printed})
        return "the printed config differs from the text: " + "; ".join(problems[:4]) if problems else None
    return check


def print_case(schema, family, name, what, write, accept=MAY_STILL_BE_VALID, expect=None, names=None):
    """A case that writes a config with `write(path)` and prints it; exit 0 is
    judged against the text (or `expect`)."""
    def prepare(where):
        path = where / "config.yaml"
        write(path)
        text = decoded(path.read_bytes()) if path.is_file() and path.stat().st_size < 4 << 20 else ""
        return Prepared(["train", "--config", path, "--print-config"], names or [str(path)],
                        check=oracle_check(schema, text, expect))
    return Case(family, name, what, prepare, accept if expect != REFUSE else None)


def writer(data):
    data = data.encode() if isinstance(data, str) else data
    return lambda path: path.write_bytes(data)


def cut_and_flip(schema):
    seed = SEED_CONFIG.encode()
    out = [print_case(schema, "config/cut", f"@{at}", f"the campaign's config cut to {at} bytes", writer(seed[:at]))
           for at in cut_offsets(len(seed), 32)]
    rng = random.Random(35)
    pool = string.ascii_letters + string.digits + string.punctuation + " \n"
    for i in range(60):
        at = rng.randrange(len(seed))
        new = rng.choice([c for c in pool if ord(c) != seed[at]])
        out.append(print_case(schema, "config/flip", f"{i}@{at}={new!r}",
                              f"the campaign's config with byte {at} ({chr(seed[at])!r}) replaced by {new!r}",
                              writer(with_byte(seed, at, ord(new)))))
    places = {"comment": SEED_CONFIG.index("campaign's"), "key": SEED_CONFIG.index("momentum"),
              "number": SEED_CONFIG.index("0.05") + 2, "path": SEED_CONFIG.index("path: idx") + 7,
              "first": 0, "list": SEED_CONFIG.index("[32") + 2}
    for place, at in places.items():
        for value in (0x00, 0x01, 0x7F, 0x80, 0xFF):
            out.append(print_case(schema, "config/binary", f"{place}={value:#04x}",
                                  f"the campaign's config with byte {at} (in a {place}) set to {value:#04x}",
                                  writer(with_byte(seed, at, value))))
    return out


def structure(schema):
    """Texts whose meaning is given here, not by the oracle (some are outside its subset)."""
    lr = {"optimizer.lr": 0.1}
    texts = [
        ("empty", "", {}), ("comments-only", "# nothing\n# at all\n", {}), ("blank-lines", "\n\n\n", {}),
        ("crlf", "optimizer:\r\n  lr: 0.1\r\n", lr), ("bom", "\ufeffoptimizer:\n  lr: 0.1\n", lr),
        ("flow-section", "optimizer: {lr: 0.1}\n", lr), ("space-before-colon", "optimizer:\n  lr : 0.1\n", lr),
        ("document-marker", "---\noptimizer:\n  lr: 0.1\n", lr),
        ("anchor-alias", "seed: &s 5\ntrain:\n  epochs: *s\n", {"seed": 5, "train.epochs": 5}),
        ("top-level-list", "- optimizer\n- lr\n", REFUSE), ("top-level-scalar", "just words\n", REFUSE),
        ("top-level-number", "42\n", REFUSE), ("section-scalar", "optimizer: 5\n", REFUSE),
        ("section-list", "optimizer: [lr, 0.1]\n", REFUSE), ("leaf-map", "optimizer:\n  lr:\n    x: 1\n", REFUSE),
        ("leaf-flow-map", "optimizer:\n  lr: {x: 1}\n", REFUSE), ("deep-key", "optimizer:\n  lr.x: 1\n", REFUSE),
        ("tab-indent", "optimizer:\n\tlr: 0.1\n", REFUSE), ("unclosed-quote", 'run_dir: "runs/x\n', REFUSE),
        ("unclosed-list", "model:\n  hidden: [1, 2\n", REFUSE), ("alias-undefined", "seed: *nope\n", REFUSE),
        ("two-documents", "seed: 1\n---\nseed: 2\n", REFUSE), ("merge-key", "model: {<<: {name: mlp}}\n", REFUSE),
        ("tagged-int", "seed: !!str 5\n", {"seed": 5}), ("binary-tag", "seed: !!binary AAAA\n", REFUSE),
        ("complex-key", "? [a, b]\n: 1\n", REFUSE), ("null-key", "~: 1\n", REFUSE), ("int-key", "1: 2\n", REFUSE),
        ("unicode-key", "optimiser:\n  lr: 0.1\n", REFUSE), ("case-key", "Optimizer:\n  LR: 0.1\n", REFUSE),
        ("deep-flow-100k", "model:\n  hidden: " + "[" * 100000 + "]" * 100000 + "\n", REFUSE),
        ("deep-block-2k", "".join(" " * i + f"k{i}:\n" for i in range(2000)), REFUSE),
        ("long-line-2MiB", "run_dir: " + "r" * (2 << 20) + "\n", REFUSE),
        ("long-comment-900KiB", "# " + "c" * (900 << 10) + "\noptimizer:\n  lr: 0.1\n", lr),
        ("many-keys", "".join(f"k{i}: {i}\n" for i in range(20000)), REFUSE),
        ("dup-key", "optimizer:\n  lr: 0.1\n  lr: 0.2\n", REFUSE),
        ("dup-section", "optimizer:\n  lr: 0.1\ntrain:\n  epochs: 1\noptimizer:\n  momentum: 0.5\n", REFUSE),
        ("dup-top-level", "seed: 1\nseed: 2\n", REFUSE),
        ("dup-flow", "optimizer: {lr: 0.1, lr: 0.2}\n", REFUSE),
        ("dup-same-value", "seed: 1\nseed: 1\n", REFUSE),
        ("dup-quoted", 'optimizer:\n  lr: 0.1\n  "lr": 0.2\n', REFUSE),
    ]
    out = []
    for name, text, expect in texts:
        family = "config/duplicate" if name.startswith("dup-") else "config/structure"
        accept = None if expect == REFUSE else "the text is a valid config; the printed one must match it"
        out.append(print_case(schema, family, name, f"a config: {text[:60]!r}", writer(text), accept, expect))
    return out


def not_regular(schema):
    kinds = {
        "directory": lambda p: p.mkdir(), "fifo": lambda p: os.mkfifo(p),
        "dangling-symlink": lambda p: p.symlink_to(p.parent / "nowhere"),
        "dev-zero": lambda p: p.symlink_to("/dev/zero"), "dev-urandom": lambda p: p.symlink_to("/dev/urandom"),
        "dev-null": lambda p: p.symlink_to("/dev/null"), "sparse-6GiB": lambda p: sparse(p, 6 << 30),
        "symlink-loop": lambda p: p.symlink_to(p), "trailing-slash": None,
    }
    out = []
    for kind, make in kinds.items():
        if kind == "trailing-slash":
            def prepare(where):
                path = where / "config.yaml"
                path.write_text(SEED_CONFIG)
                return Prepared(["train", "--config", str(path) + "/", "--print-config"], [str(path)])
            out.append(Case("config/not-regular", kind, "the config path with a trailing slash", prepare))
            continue
        out.append(print_case(schema, "config/not-regular", kind, f"the config path: {kind.replace('-', ' ')}", make,
                              None, REFUSE))
    return out


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)


def cases(seeds):
    schema = Schema(seeds.defaults_text())
    return cut_and_flip(schema) + structure(schema) + not_regular(schema)
