"""Types shared by the package's hints: what paisoar accepts as a map-style
torch Dataset (paisoar.data.DataLoader, paisoar.train), checked by shape as
torch's DataLoader does, so any class with __len__ and __getitem__ fits."""
from typing import Any, Protocol


class MapDataset(Protocol):
    """A map-style data set: len(d) samples, d[i] for i in [0, len(d))."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> Any: ...
