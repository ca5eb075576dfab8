"""The classes a case's run falls into. CLEAR: refused (non-zero exit) with
printable text that names the input and shows no internals. SAFE: exit 0
where the family says why that is right and its oracle, if any, agrees. The
rest are failures: CRASH (a signal), HANG (the timeout), WRONGLY_ACCEPTED
(exit 0 for input that must be refused, or an oracle that disagrees), UNCLEAR
(refused, but the words fail CLEAR's rules)."""
import re

CLEAR, SAFE = "CLEAR", "SAFE"
CRASH, HANG, WRONGLY_ACCEPTED, UNCLEAR = "CRASH", "HANG", "WRONGLY_ACCEPTED", "UNCLEAR"
FAILURES = (CRASH, HANG, WRONGLY_ACCEPTED, UNCLEAR)
CLASSES = (CLEAR, SAFE) + FAILURES

# Raw internals: text meant for developers, not users.
INTERNALS = [
    ("terminate called", "an uncaught exception (terminate called)"),
    ("what():", "an uncaught exception's what()"),
    ("std::", "a C++ type name (std::)"),
    ("basic_string", "a C++ type name (basic_string)"),
    ("c10::", "a LibTorch type name (c10::)"),
    ("json.exception", "a raw nlohmann::json exception"),
    ("yaml-cpp", "a raw yaml-cpp exception"),
    ("Exception raised from", "a LibTorch exception with its source location"),
    ("most recent call first", "a C++ backtrace"),
]
# A library's own words passed through (its message is not paisoar's).
LIBRARY_WORDS = [
    (re.compile(r"cannot use value\(\)"), "nlohmann::json's words (cannot use value())"),
    (re.compile(r"type must be (string|number|boolean|array|object|null)"), "nlohmann::json's words (type must be ...)"),
    (re.compile(r"Target -?\d+ is out of bounds"), "torch's words (Target ... is out of bounds)"),
    (re.compile(r"\bbad file\b"), "yaml-cpp's words (bad file)"),
]
INTERNAL_PATTERNS = LIBRARY_WORDS + [
    (re.compile(r"^\s*frame #\d+", re.M), "a C++ backtrace frame"),
    (re.compile(r"\.(cpp|cc|h|hpp):\d+"), "a source file and line"),
    (re.compile(r"^\s*#\d+\s+0x[0-9a-f]+", re.M), "a backtrace address"),
]
SIGNAL_DEATH = re.compile(r"killed by signal \d+|Segmentation fault|core dumped|stack smashing|double free|"
                          r"AddressSanitizer|munmap_chunk|free\(\): invalid")
CRASH_CODES = {128 + 4, 128 + 6, 128 + 7, 128 + 8, 128 + 11}  # SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV as 128+N


def printable(text):
    return all(c.isprintable() or c in "\n\t\r" for c in text)


def decode(data):
    try:
        return data.decode(), True
    except UnicodeDecodeError:
        return data.decode(errors="replace"), False


def unclear_reasons(text, text_ok, names):
    reasons = []
    if not text_ok or not printable(text):
        reasons.append("prints bytes that are not text")
    for needle, why in INTERNALS:
        if needle in text:
            reasons.append(why)
    for pattern, why in INTERNAL_PATTERNS:
        if pattern.search(text):
            reasons.append(why)
    if names and not any(n in text for n in names):
        reasons.append("does not name the input (expected one of: " + ", ".join(repr(n) for n in names) + ")")
    if not text.strip():
        reasons.append("prints nothing")
    return reasons


def classify(case, run, prepared):
    """(class, reason) for one run of `case`."""
    out, out_ok = decode(run.out)
    err, err_ok = decode(run.err)
    text = out + "\n" + err
    if run.timed_out:
        return HANG, f"no answer after {case.timeout:.0f} s"
    if run.code < 0:
        return CRASH, f"killed by signal {-run.code}"
    death = SIGNAL_DEATH.search(text)
    if run.code in CRASH_CODES or death:
        return CRASH, f"exit {run.code}" + (f": {death.group(0)}" if death else "")
    if run.code == 0:
        if case.accept is None:
            return WRONGLY_ACCEPTED, "exit 0 for input that must be refused"
        leaked = [why for pattern, why in LIBRARY_WORDS if pattern.search(text)]
        if leaked:  # a warning in a library's words is as unclear as a refusal in them
            return UNCLEAR, "exit 0 but prints " + "; ".join(leaked)
        problem = prepared.check(run) if prepared.check else None
        if problem:
            return WRONGLY_ACCEPTED, "exit 0 but " + problem
        return SAFE, case.accept
    reasons = unclear_reasons(text, out_ok and err_ok, prepared.names)
    if reasons:
        return UNCLEAR, f"exit {run.code}: " + "; ".join(reasons)
    return CLEAR, f"exit {run.code}"
