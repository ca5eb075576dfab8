"""The config oracle: what a config file means, for the block-style subset of
YAML that paisoar's configs use (sections of `key: value` lines, comments,
plain and quoted scalars, flat [a, b] lists), and yaml-cpp's rules for
turning a scalar into an integer, a number or a boolean. `parse` raises
Refuse for text a correct reader must refuse (not YAML, or not a config's
shape) and Unknown for YAML outside the subset, which the campaign then
reports instead of guessing."""
import math
import re


class Refuse(Exception):
    """Text a correct config reader refuses."""


class Unknown(Exception):
    """Valid-looking YAML outside the subset this oracle understands."""


SECTION_NAMES = {"logging", "model", "data", "train", "optimizer", "schedule", "amp", "distributed", "zero", "memory",
                 "parallel", "checkpoint", "profiler", "eval"}
NULLS = {"", "~", "null", "Null", "NULL"}
INDICATORS_REFUSED = "&*!|>%@`"  # anchors, aliases, tags, block scalars, reserved: none yields a value here
INT_RE = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
BOOLS = {"y": True, "yes": True, "true": True, "on": True, "n": False, "no": False, "false": False, "off": False}


def strip_comment(line):
    """The line without its comment: '#' at the start or after a space, outside quotes."""
    quote, escaped = None, False
    for i, c in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif c == "\\" and quote == '"':
                escaped = True
            elif c == quote:
                quote = None
        elif c in "\"'" and (i == 0 or line[i - 1] in " :[,"):
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] == " "):
            return line[:i]
    return line


ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
           "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
           "P": "\u2029"}
HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def double_quoted(text):
    """(content, end) of the double-quoted scalar at text[0], YAML escapes decoded."""
    out, i = [], 1
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), i
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = text[i + 1:i + 2]
        if e in ESCAPES:
            out.append(ESCAPES[e])
            i += 2
        elif e in HEX_ESCAPES and re.fullmatch(r"[0-9a-fA-F]+", text[i + 2:i + 2 + HEX_ESCAPES[e]] or "-"):
            out.append(chr(int(text[i + 2:i + 2 + HEX_ESCAPES[e]], 16)))
            i += 2 + HEX_ESCAPES[e]
        else:
            raise Refuse(f"a bad escape in {text!r}")
    raise Refuse(f"an unclosed quote in {text!r}")


def quoted(text):
    """The content of a quoted scalar that is the whole of `text`."""
    if text[0] == '"':
        content, end = double_quoted(text)
    else:
        end = text.find("'", 1)
        if end < 0:
            raise Refuse(f"an unclosed quote in {text!r}")
        if text[end + 1:end + 2] == "'":
            raise Unknown(f"an escaped quote in {text!r}")
        content = text[1:end]
    if text[end + 1:].strip():
        raise Refuse(f"text after a quoted scalar: {text!r}")
    return content


def scalar(text):
    """('scalar', text) or ('null',) for a value in block or flow context."""
    text = text.strip()
    if not text:
        return ("null",)
    if text[0] in "\"'":
        return ("scalar", quoted(text))
    if text[0] in INDICATORS_REFUSED or text[0] in "]}," or text.startswith("- ") or text == "-":
        raise Refuse(f"a value starting with an indicator: {text!r}")
    if "\t" in text:
        raise Unknown(f"a tab inside a scalar: {text!r}")
    if ": " in text or text.endswith(":"):
        raise Refuse(f"a mapping inside a scalar: {text!r}")
    return ("null",) if text in NULLS else ("scalar", text)


def value(text):
    """('scalar', text), ('null',), ('list', [texts]), or ('map',) / ('nested-list',)
    for collections that are no key's value here (valid YAML or not)."""
    text = text.strip()
    if text.startswith("{"):
        return ("map",)
    if not text.startswith("["):
        return scalar(text)
    if not text.endswith("]"):
        raise Refuse(f"a flow list that does not end with ']': {text!r}")
    inner = text[1:-1]
    if any(c in inner for c in "[]{}"):
        return ("nested-list",)
    if any(c in inner for c in "\"'"):
        raise Unknown(f"a quoted flow list: {text!r}")
    if not inner.strip():
        return ("list", [])
    items = inner.split(",")
    if any(not i.strip() for i in items):
        raise Unknown(f"an empty entry in a flow list: {text!r}")
    out = []
    for item in items:
        if ":" in item:
            raise Refuse(f"a mapping inside a list: {text!r}")
        s = scalar(item)
        if s[0] == "null":
            raise Refuse(f"a null inside a list: {text!r}")
        out.append(s[1])
    return ("list", out)


def check_key(key, line):
    if not key or key[0] in "-?:,[]{}#&*!|>'\"%@`" or key != key.strip():
        if key.startswith(("\"", "'")):
            raise Unknown(f"a quoted key: {line!r}")
        raise Refuse(f"not a plain key: {line!r}")
    if "#" in key or ":" in key:
        raise Unknown(f"a key holding '#' or ':': {line!r}")


def parse(text):
    """{'section.key' or 'key': value} for a config text in the subset."""
    if "\r" in text or "\ufeff" in text:
        raise Unknown("a carriage return or byte-order mark")
    if text.lstrip().startswith(("---", "...", "%")):
        raise Unknown("a document marker or directive")
    entries, seen = {}, set()
    section, child_indent, last_was_section = None, None, False
    previous_indent, previous_plain = -1, False
    for number, raw in enumerate(text.split("\n"), 1):
        line = strip_comment(raw).rstrip(" ")
        if not line.strip():
            continue
        if "\0" in line:
            raise Unknown(f"a NUL byte on line {number}")
        if "\t" in line[:len(line) - len(line.lstrip(" \t"))]:
            raise Refuse(f"a tab in the indentation on line {number}")
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if body.startswith("- ") or body == "-":
            raise Refuse(f"a list entry where a key belongs on line {number}")
        m = re.match(r"^(.*?):(?: +(.*))?$", body)
        if m is None or (": " not in body + " " and not body.endswith(":")):
            if indent > previous_indent and previous_plain:
                raise Unknown(f"a plain scalar continued on line {number}")
            raise Refuse(f"no 'key: value' on line {number}: {raw!r}")
        key, rest = m.group(1), m.group(2) or ""
        check_key(key, raw)
        if indent == 0:
            section, child_indent = None, None
            name = key
        else:
            if section is None or not last_was_section and child_indent is None:
                raise Refuse(f"an indented line outside a section on line {number}")
            if child_indent is None:
                child_indent = indent
            if indent != child_indent:
                raise Refuse(f"inconsistent indentation on line {number}")
            name = f"{section}.{key}"
        if name in seen:
            raise Refuse(f"'{name}' given twice")
        seen.add(name)
        parsed = value(rest)
        if indent == 0 and parsed[0] in ("map", "nested-list") and key in SECTION_NAMES:
            raise Unknown(f"a section written in flow style on line {number}")
        previous_indent = indent
        previous_plain = parsed[0] == "scalar" and rest.strip()[:1] not in ("'", '"')
        if indent == 0 and parsed == ("null",):
            section, last_was_section = key, True
            entries[name] = ("section",)
            continue
        last_was_section = False
        entries[name] = parsed
        if indent == 0:
            section = None
    return entries


# yaml-cpp's conversions of a scalar's text (convert.h: a stream with the base
# taken from the prefix, then .inf/.nan; booleans in lower, UPPER or Title case).
def as_int(text):
    t = text.rstrip(" ")
    if not INT_RE.fullmatch(t):
        raise Refuse(f"not an integer: {text!r}")
    body = t.lstrip("+-")
    base = 16 if body[:2] in ("0x", "0X") else 8 if body.startswith("0") else 10
    v = int(body, base) * (-1 if t.startswith("-") else 1)
    if not -2**63 <= v < 2**63:
        raise Refuse(f"out of int64: {text!r}")
    return v


def as_float(text):
    t = text.rstrip(" ")
    if t in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"):
        return math.inf
    if t in ("-.inf", "-.Inf", "-.INF"):
        return -math.inf
    if t in (".nan", ".NaN", ".NAN"):
        return math.nan
    if not FLOAT_RE.fullmatch(t):
        raise Refuse(f"not a number: {text!r}")
    v = float(t)
    if math.isinf(v):
        raise Refuse(f"out of a double's range: {text!r}")
    return v


def as_bool(text):
    if not (text.islower() or text.isupper() or text[:1].isupper() and text[1:].islower()):
        raise Refuse(f"not a boolean: {text!r}")
    if text.lower() not in BOOLS:
        raise Refuse(f"not a boolean: {text!r}")
    return BOOLS[text.lower()]


CONVERT = {"int": as_int, "float": as_float, "bool": as_bool, "str": lambda t: t}


def typed(entry, kind):
    """The value of a parsed entry as a key of `kind` ('int', 'float', 'bool',
    'str', 'list-int', 'list-str') takes it; Refuse for the wrong shape."""
    if entry[0] == "null":
        raise Refuse("a null value")
    if entry[0] == "section":
        raise Refuse("a null or section where a value belongs")
    if entry[0] in ("map", "nested-list"):
        raise Refuse("a mapping or nested list where a value belongs")
    if kind.startswith("list-"):
        if entry[0] != "list":
            raise Refuse("a scalar where a list belongs")
        return [CONVERT[kind[5:]](t) for t in entry[1]]
    if entry[0] != "scalar":
        raise Refuse("a list where a scalar belongs")
    return CONVERT[kind](entry[1])


def kind_of(key, printed):
    """A key's kind, from its default as --print-config shows it."""
    if printed[0] == "list":
        return "list-int" if key == "model.hidden" else "list-str"
    text = printed[1] if printed[0] == "scalar" else ""
    if printed[0] == "scalar" and text in ("true", "false"):
        return "bool"
    if printed[0] == "scalar" and re.fullmatch(r"-?[0-9]+", text):
        return "int"
    if printed[0] == "scalar" and re.fullmatch(r"-?[0-9.]+(e[+-]?[0-9]+)?", text):
        return "float"
    return "str"


class Schema:
    """The keys, kinds and defaults, from `paisoar train --print-config`."""

    def __init__(self, printed_defaults):
        entries = parse(printed_defaults)
        self.sections = {k for k, v in entries.items() if v == ("section",)}
        assert self.sections == SECTION_NAMES, f"the config's sections changed: {sorted(self.sections)}"
        self.kinds = {k: kind_of(k, v) for k, v in entries.items() if v != ("section",)}
        self.defaults = self.values(printed_defaults)

    def config(self, text):
        """The typed config a text means: the defaults, then its values."""
        return {**self.defaults, **self.values(text)}

    def values(self, text):
        """{key: typed value} for the keys a text sets; Refuse or Unknown."""
        entries = parse(text)
        values = {}
        for key, entry in entries.items():
            if entry == ("section",):
                if key not in self.sections:
                    raise Refuse(f"unknown section '{key}'")
                continue
            if key in self.sections:
                raise Refuse(f"section '{key}' given a value")
            if key not in self.kinds:
                raise Refuse(f"unknown key '{key}'")
            values[key] = typed(entry, self.kinds[key])
        return values


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def differences(expected, actual):
    return [f"{k}: expected {expected.get(k)!r}, printed {actual.get(k)!r}"
            for k in sorted(set(expected) | set(actual)) if not same(expected.get(k), actual.get(k))]
