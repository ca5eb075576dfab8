"""One campaign case: a damaged input, the paisoar command that reads it, and
what counts as a correct answer. `prepare` writes the input into the case's
own directory and returns the command; `accept` says why exit 0 can be right
for this family (None: the input must be refused), and `check`, when given,
verifies an exit-0 result against an oracle (None when it is right)."""
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional


@dataclass
class Prepared:
    args: list                      # after the binary, e.g. ["train", "--config", path]
    names: list                     # the error must contain at least one (a path, key or flag)
    check: Optional[Callable] = None  # (Run) -> problem or None, for exit 0
    env: dict = field(default_factory=dict)


@dataclass
class Case:
    family: str                     # "<reader>/<kind of damage>", e.g. "idx/truncate"
    name: str                       # unique within the family
    what: str                       # the input in words, for the report
    prepare: Callable[[Path], Prepared]
    accept: Optional[str] = None    # why exit 0 can be correct; None: must be refused
    timeout: float = 90.0

    @property
    def id(self):
        return f"{self.family}:{self.name}"


def select_quick(cases, per_family):
    """A deterministic subset: up to `per_family` cases of each family, evenly
    spaced over its list (one: its middle case)."""
    by_family = {}
    for c in cases:
        by_family.setdefault(c.family, []).append(c)
    chosen = []
    for group in by_family.values():
        n = min(per_family, len(group))
        picks = sorted({round(i * (len(group) - 1) / (n - 1)) for i in range(n)} if n > 1 else {len(group) // 2})
        chosen += [group[i] for i in picks]
    return chosen
