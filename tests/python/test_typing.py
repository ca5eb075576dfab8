"""The typed API (issue 34): `mypy --strict` over python/paisoar passes with
pyproject.toml's [tool.mypy]; the installed package carries py.typed and the
stub of its extension; and that stub (python/paisoar/_C.pyi) declares what
paisoar._C has: the same classes, functions, methods and properties, each
with the parameters its pybind11 binding declares (names, order, defaults)."""
import ast
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import paisoar
from paisoar import _C

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "python" / "paisoar" / "_C.pyi"


def test_mypy_strict_passes_over_the_package():
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict"], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200)
    output = done.stdout + done.stderr
    if "No module named mypy" in output:
        pytest.fail(f"mypy is not installed in {sys.executable}'s environment: run scripts/setup.sh")
    assert done.returncode == 0 and "Success: no issues found" in done.stdout, output


def test_the_installed_package_is_typed():
    installed = Path(paisoar.__file__).parent
    assert (installed / "py.typed").is_file(), f"no py.typed in {installed}: check pyproject's package-data"
    assert (installed / "_C.pyi").read_text() == STUB.read_text(), f"{installed / '_C.pyi'} is not {STUB}"


# --- the stub against the extension ------------------------------------------

def _split_top_level(text):
    """Splits "a: list[int, str], b: int = 3" at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return parts + [tail] if tail else parts


def _runtime_signatures(name, obj, is_method):
    """[(parameter name, default text or None), ...] per overload, from the
    signatures pybind11 writes at the top of each docstring; self left out."""
    doc = obj.__doc__ or ""
    lines = re.findall(rf"^\d+\. {re.escape(name)}\((.*)\) -> .*$", doc, re.M) or \
        re.findall(rf"^{re.escape(name)}\((.*)\) -> .*$", doc, re.M)[:1]
    assert lines, f"{name}: no pybind11 signature in its docstring {doc!r}"
    signatures = []
    for line in lines:
        params = []
        for part in _split_top_level(line):
            head, _, default = part.partition(" = ")
            params.append((head.split(":")[0].strip(), default or None))
        signatures.append(params[1:] if is_method and params and params[0][0] == "self" else params)
    return signatures


def _stub_signature(node, is_method):
    args = node.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + [ast.unparse(d) for d in args.defaults]
    params = [(a.arg, default, a in args.posonlyargs) for a, default in zip(positional, defaults)]
    return params[1:] if is_method and not _decorated(node, "staticmethod") else params


def _decorated(node, name):
    return any(ast.unparse(d) == name for d in node.decorator_list)


def _same_default(runtime, stub):
    if runtime is None or stub is None:
        return runtime is None and stub is None
    try:
        return ast.literal_eval(runtime) == ast.literal_eval(stub)
    except ValueError:
        return True  # not a literal (an object's repr): its presence is what can be compared


def _compare(where, runtime_obj, stub_defs, is_method):
    """Problems between a bound callable and its stub definitions (overloads in order)."""
    name = stub_defs[0].name
    runtime = _runtime_signatures(name, runtime_obj, is_method)
    stub = [_stub_signature(d, is_method) for d in stub_defs if not _decorated(d, "overload")] \
        if len(stub_defs) == 1 else [_stub_signature(d, is_method) for d in stub_defs if _decorated(d, "overload")]
    if len(runtime) != len(stub):
        return [f"{where}: {len(runtime)} overloads bound, {len(stub)} in the stub"]
    problems = []
    for bound, declared in zip(runtime, stub):
        bound_names = [n for n, _ in bound]
        declared_names = [f"arg{i}" if positional_only else n for i, (n, _, positional_only) in enumerate(declared)]
        if bound_names != declared_names:
            problems.append(f"{where}: bound ({', '.join(bound_names)}), stub ({', '.join(declared_names)}) "
                            "(arguments without py::arg are positional-only in the stub)")
        elif not all(_same_default(b[1], d[1]) for b, d in zip(bound, declared)):
            problems.append(f"{where}: defaults bound {[b[1] for b in bound]}, stub {[d[1] for d in declared]}")
    return problems


def _public(members):
    """Public names, __init__ and __len__; not the __init__ of a class bound
    without py::init (a slot wrapper that raises "No constructor defined")."""
    return {n for n, member in members.items() if not n.startswith("_") or n == "__len__"
            or n == "__init__" and not isinstance(member, types.WrapperDescriptorType)}


def _check_class(node, cls):
    problems = []
    members = {}
    for item in node.body:
        if isinstance(item, ast.FunctionDef):
            members.setdefault(item.name, []).append(item)
    stub_names = _public(members)
    bound_names = _public(vars(cls))
    if stub_names != bound_names:
        problems.append(f"{node.name}: bound but not in the stub {sorted(bound_names - stub_names)}; in the stub "
                        f"but not bound {sorted(stub_names - bound_names)}")
    for name in sorted(stub_names & bound_names):
        bound = vars(cls)[name]
        where = f"{node.name}.{name}"
        if isinstance(bound, property):
            declared = members[name]
            if not _decorated(declared[0], "property"):
                problems.append(f"{where}: a property bound, a method in the stub")
            has_setter = any(_decorated(d, f"{name}.setter") for d in declared)
            if has_setter != (bound.fset is not None):
                problems.append(f"{where}: setter bound {bound.fset is not None}, in the stub {has_setter}")
            continue
        function = bound.__func__ if isinstance(bound, staticmethod) else bound
        problems += _compare(where, function, members[name], is_method=True)
    return problems


def test_the_stub_declares_what_the_extension_binds():
    tree = ast.parse(STUB.read_text())
    problems = []
    declared = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            declared.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.AnnAssign):
            declared[node.target.id] = [node]
    bound = {n for n in vars(_C) if not n.startswith("_")}
    stub_public = {n for n in declared if not n.startswith("_")}
    assert stub_public == bound, (f"bound but not in {STUB.name}: {sorted(bound - stub_public)}; in the stub but "
                                  f"not bound: {sorted(stub_public - bound)}")
    for name in sorted(bound):
        runtime, nodes = getattr(_C, name), declared[name]
        if isinstance(nodes[0], ast.ClassDef):
            bases = [ast.unparse(b) for b in nodes[0].bases]
            runtime_bases = [b.__name__ for b in runtime.__bases__ if b.__name__ != "pybind11_object"]
            if bases != runtime_bases:
                problems.append(f"{name}: bases bound {runtime_bases}, stub {bases}")
            if not issubclass(runtime, BaseException):
                problems += _check_class(nodes[0], runtime)
        elif isinstance(nodes[0], ast.FunctionDef):
            problems += _compare(name, runtime, nodes, is_method=False)
        else:
            annotation = ast.unparse(nodes[0].annotation)
            if type(runtime).__name__ != annotation:
                problems.append(f"{name}: a {type(runtime).__name__} bound, {annotation} in the stub")
    assert not problems, "\n".join(problems)
