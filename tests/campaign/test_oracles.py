"""The campaign's own judges, checked on inputs whose answers are known: the
config oracle (yaml_subset.py) must read what YAML and yaml-cpp read, refuse
what they refuse, and admit what it does not understand; the classifier
(verdict.py) must tell a crash, a hang, an unclear message and a clear one."""
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from case import Case, Prepared  # noqa: E402
from execute import Run  # noqa: E402
from verdict import CLEAR, CRASH, HANG, SAFE, UNCLEAR, WRONGLY_ACCEPTED, classify  # noqa: E402
from yaml_subset import Refuse, Unknown, as_bool, as_float, as_int, parse  # noqa: E402


def test_parse_reads_sections_comments_quotes_and_lists():
    text = 'seed: 3  # c\nmodel:\n  name: "m # x"\n  hidden: [1, 2]\noptimizer:\n  lr: 0.1\n'
    assert parse(text) == {"seed": ("scalar", "3"), "model": ("section",), "model.name": ("scalar", "m # x"),
                           "model.hidden": ("list", ["1", "2"]), "optimizer": ("section",),
                           "optimizer.lr": ("scalar", "0.1")}


@pytest.mark.parametrize("text", ["a: 1\na: 2\n", "a:\n  b: 1\n   c: 2\n", "a: b: c\n", "a: [1, 2\n", 'a: "x\n',
                                  "a:\n\tb: 1\n", "- a\n", "a: *x\n"])
def test_parse_refuses_what_yaml_refuses(text):
    with pytest.raises(Refuse):
        parse(text)


@pytest.mark.parametrize("text", ["a: {b: 1}\n".replace("a", "model"), "a: 'it''s'\n", "---\na: 1\n", "a: 1\r\n"])
def test_parse_admits_what_it_does_not_understand(text):
    with pytest.raises(Unknown):
        parse(text)


def test_scalars_convert_as_yaml_cpp_does():
    assert [as_int(t) for t in ("8", "010", "0x10", "-0x10", "+5")] == [8, 8, 16, -16, 5]
    for bad in ("08", "1e3", "1.0", "9223372036854775808", ""):
        with pytest.raises(Refuse):
            as_int(bad)
    assert as_float("1.") == 1.0 and as_float(".5") == 0.5 and math.isinf(as_float("-.Inf"))
    for bad in ("0x10", "1e400", "1,5", "inf"):
        with pytest.raises(Refuse):
            as_float(bad)
    assert as_bool("Yes") and not as_bool("OFF")
    with pytest.raises(Refuse):
        as_bool("tRue")


def judged(code, err=b"", out=b"", timed_out=False, accept=None, names=("cfg.yaml",)):
    case = Case("f", "n", "w", lambda where: None, accept)
    run = Run("cmd", code, out, err, timed_out, 0.1, Path("."))
    return classify(case, run, Prepared([], list(names)))[0]


def test_classify_tells_the_classes_apart():
    assert judged(2, b"paisoar train: cfg.yaml: bad\n") == CLEAR
    assert judged(2, b"paisoar train: bad\n") == UNCLEAR
    assert judged(2, b"cfg.yaml: yaml-cpp: error\n") == UNCLEAR
    assert judged(1, b"cfg.yaml \xff\n") == UNCLEAR
    assert judged(1, b"cfg.yaml: [json.exception.parse_error.101] x\n") == UNCLEAR
    assert judged(-11) == CRASH and judged(1, b"rank 0 was killed by signal 11 (SIGSEGV)") == CRASH
    assert judged(0, timed_out=True) == HANG
    assert judged(0) == WRONGLY_ACCEPTED and judged(0, accept="still valid") == SAFE
