"""paisoar's data pipeline as iterables of torch tensors: image folders,
record shards and IDX files decoded and transformed in C++ (the crop fused
into the JPEG decode) by worker threads, batches collated in place and
delivered in order; DistributedSampler's order and padding per rank; exact
resume from state_dict(). A torch.utils.data.Dataset works too, its samples
fetched by threads in the same order.

    train = data.ImageFolder("/data/train", transform=data.Compose([
        data.RandomResizedCrop(224), data.RandomHorizontalFlip(),
        data.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]))
    loader = data.DataLoader(train, batch_size=64, shuffle=True, num_workers=4)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for images, labels in loader:
            ...

The batch order and content depend only on (seed, epoch, rank, world size),
never on num_workers."""
from __future__ import annotations

import collections
import concurrent.futures
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypedDict, Union

import torch
import torch.distributed as dist

from ._native import _C
from ._types import MapDataset

Dataset = _C.Dataset


# --- transforms: descriptions the C++ pipeline runs -------------------------

# A size: one number for a square (h = w), or (h, w).
_Size = Union[float, Sequence[float]]


def _pair(size: _Size) -> tuple[int, int]:
    return (int(size), int(size)) if isinstance(size, (int, float)) else (int(size[0]), int(size[1]))


class _Step:
    def __init__(self, name: str, *numbers: float) -> None:
        self.step = (name, [float(n) for n in numbers])

    def __repr__(self) -> str:
        return f"{type(self).__name__}{tuple(self.step[1])}"


class RandomResizedCrop(_Step):
    """torchvision's RandomResizedCrop (bilinear), fused into the decode."""
    def __init__(self, size: _Size, scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0)) -> None:
        h, w = _pair(size)
        super().__init__("random_resized_crop", h, w, scale[0], scale[1], ratio[0], ratio[1])


class Resize(_Step):
    """torchvision's Resize: an int sets the shorter side, (h, w) the exact size."""
    def __init__(self, size: _Size) -> None:
        h, w = (int(size), 0) if isinstance(size, (int, float)) else _pair(size)
        super().__init__("resize", h, w)


class CenterCrop(_Step):
    def __init__(self, size: _Size) -> None:
        super().__init__("center_crop", *_pair(size))


class RandomHorizontalFlip(_Step):
    def __init__(self, p: float = 0.5) -> None:
        super().__init__("horizontal_flip", p)


class RandomVerticalFlip(_Step):
    def __init__(self, p: float = 0.5) -> None:
        super().__init__("vertical_flip", p)


class RandomAffine(_Step):
    """Rotation and translation only (as for MNIST-like images), nearest-neighbour."""
    def __init__(self, degrees: float, translate: Sequence[float] = (0.0, 0.0), fill: int = 0) -> None:
        super().__init__("affine", degrees, translate[0], translate[1], fill)


class Normalize:
    """(x / 255 - mean) / std per channel, fused into the uint8 -> float conversion."""
    def __init__(self, mean: Iterable[float], std: Iterable[float]) -> None:
        self.mean, self.std = [float(m) for m in mean], [float(s) for s in std]


class ToTensor:
    """Accepted for torchvision compatibility: every pipeline ends in a float CHW tensor."""


# One transform of a paisoar pipeline.
Transform = Union[_Step, Normalize, ToTensor]


class Compose:
    def __init__(self, transforms: Iterable[Transform]) -> None:
        self.transforms = list(transforms)


# What the data sets' transform= takes.
TransformArg = Union[Transform, Compose, list[Transform], tuple[Transform, ...], None]


def _pipeline(transform: TransformArg) -> tuple[list[tuple[str, list[float]]], list[float], list[float]]:
    """(steps, mean, std) of a transform, a Compose, a list, or None."""
    items = transform.transforms if isinstance(transform, Compose) else \
        list(transform) if isinstance(transform, (list, tuple)) else [] if transform is None else [transform]
    steps: list[tuple[str, list[float]]] = []
    mean: list[float] = []
    std: list[float] = []
    for item in items:
        if isinstance(item, _Step):
            steps.append(item.step)
        elif isinstance(item, Normalize):
            mean, std = item.mean, item.std
        elif not isinstance(item, ToTensor):
            raise TypeError(f"paisoar.data: {item!r} is not a paisoar.data transform; use "
                            "RandomResizedCrop, Resize, CenterCrop, RandomHorizontalFlip, "
                            "RandomVerticalFlip, RandomAffine, Normalize, ToTensor (or pass a "
                            "torch Dataset that applies its own)")
    return steps, mean, std


# --- data sets ---------------------------------------------------------------

def ImageFolder(root: str | os.PathLike[str], transform: TransformArg = None, channels: int = 3) -> _C.ImageFolder:
    """root/<class>/<image>: classes are the sorted folder names (torchvision's ImageFolder)."""
    steps, mean, std = _pipeline(transform)
    return _C.ImageFolder(str(root), steps, channels=channels, mean=mean, std=std)


def RecordShards(directory: str | os.PathLike[str], transform: TransformArg = None,
                 channels: int = 3) -> _C.RecordShards:
    """Record shards written by `paisoar convert` (tar files and their index)."""
    steps, mean, std = _pipeline(transform)
    return _C.RecordShards(str(directory), steps, channels=channels, mean=mean, std=std)


def IdxDataset(images: str | os.PathLike[str], labels: str | os.PathLike[str], transform: TransformArg = None,
               num_classes: int = 10, limit: int = 0) -> _C.IdxDataset:
    """MNIST-style IDX files (gzipped or not): 1-channel images."""
    steps, mean, std = _pipeline(transform)
    return _C.IdxDataset(str(images), str(labels), steps, mean=mean, std=std,
                         num_classes=num_classes, limit=limit)


# --- the loader --------------------------------------------------------------

class _Order(TypedDict):
    """The sampler's options, the same for both kinds of data set."""
    shuffle: bool
    seed: int
    drop_last: bool


def _default_rank_and_world(rank: int | None, world_size: int | None) -> tuple[int, int]:
    if rank is not None and world_size is not None:
        return int(rank), int(world_size)
    if dist.is_available() and dist.is_initialized():
        found = dist.get_rank(), dist.get_world_size()
    else:
        found = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    return (found[0] if rank is None else int(rank)), (found[1] if world_size is None else int(world_size))


class DataLoader:
    """Batches of this rank's share of `dataset`, DistributedSampler style:
    the epoch's permutation (seed + epoch) padded to a multiple of
    world_size, rank r taking every world_size-th index from r. rank and
    world_size default to torch.distributed's group, else RANK/WORLD_SIZE.

    A paisoar data set yields (images, labels) tensors built in C++; a torch
    Dataset yields collate_fn(samples) (default_collate), its samples fetched
    by num_workers threads. Call set_epoch(e) before each epoch, as with
    DistributedSampler; state_dict()/load_state_dict() resume mid-epoch."""

    def __init__(self, dataset: _C.Dataset | MapDataset, batch_size: int = 1, shuffle: bool = False,
                 num_workers: int = 0, prefetch_factor: int = 2, drop_last: bool = False, seed: int = 0,
                 rank: int | None = None, world_size: int | None = None, on_error: str = "raise",
                 pin_memory: bool = False, collate_fn: Callable[[list[Any]], Any] | None = None) -> None:
        if int(batch_size) < 1:
            raise ValueError(f"paisoar.data.DataLoader: batch_size={batch_size}; use 1 or more")
        if int(num_workers) < 0:
            raise ValueError(f"paisoar.data.DataLoader: num_workers={num_workers}; use 0 or more")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.num_workers = int(num_workers)
        self.rank, self.world_size = _default_rank_and_world(rank, world_size)
        self._epoch, self._first_batch = 0, 0
        self._native = isinstance(dataset, _C.Dataset)
        options = _Order(shuffle=bool(shuffle), seed=int(seed), drop_last=bool(drop_last))
        if isinstance(dataset, _C.Dataset):
            if collate_fn is not None:
                raise ValueError("paisoar.data.DataLoader: collate_fn applies to torch Datasets; a "
                                 "paisoar data set collates in C++")
            self._loader = _C.DataLoader(dataset, batch_size=self.batch_size, workers=self.num_workers,
                                         prefetch_factor=int(prefetch_factor), rank=self.rank,
                                         world_size=self.world_size, on_error=on_error,
                                         pin_memory=bool(pin_memory), **options)
        else:
            if not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")):
                raise TypeError("paisoar.data.DataLoader takes a paisoar data set or a map-style "
                                f"torch Dataset (with __getitem__ and __len__), got {type(dataset).__name__}")
            if len(dataset) == 0:
                raise ValueError("paisoar.data.DataLoader: the data set is empty")
            self._samples = dataset  # self.dataset, as the map-style data set it is here
            self._options = options
            self._prefetch = max(1, int(prefetch_factor)) * max(1, self.num_workers)
            self._collate: Callable[[list[Any]], Any] = collate_fn or torch.utils.data.default_collate

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration runs (its shuffle order)."""
        self._epoch, self._first_batch = int(epoch), 0

    def __len__(self) -> int:
        if self._native:
            return self._loader.batches_per_epoch()
        per_rank = len(self._indices(0))
        return per_rank // self.batch_size if self._options["drop_last"] else -(-per_rank // self.batch_size)

    def state_dict(self) -> dict[str, int]:
        """Where the running epoch is: the next batch to deliver."""
        return {"epoch": self._epoch, "batch": self._first_batch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self._epoch, self._first_batch = int(state["epoch"]), int(state["batch"])

    def __iter__(self) -> Iterator[Any]:
        return self._native_batches() if self._native else self._python_batches()

    def _native_batches(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        self._loader.start_epoch(self._epoch, self._first_batch)
        while True:
            batch = self._loader.next()
            if batch is None:
                break
            self._first_batch = batch[4] + 1
            yield batch[0], batch[1]
        self._first_batch = 0

    def _indices(self, epoch: int) -> list[int]:
        # Padded like the C++ loader's sampler; drop_last drops a partial batch only.
        return _C.sampler_indices(len(self.dataset), epoch, self.rank, self.world_size,
                                  shuffle=self._options["shuffle"], seed=self._options["seed"],
                                  drop_last=False)

    def _python_batches(self) -> Iterator[Any]:
        indices = self._indices(self._epoch)
        batches = [indices[i:i + self.batch_size] for i in range(0, len(indices), self.batch_size)]
        if self._options["drop_last"] and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        def fetch(batch: list[int]) -> Any:
            return self._collate([self._samples[i] for i in batch])

        todo = list(enumerate(batches))[self._first_batch:]
        if self.num_workers == 0:
            for number, batch in todo:
                self._first_batch = number + 1
                yield fetch(batch)
        else:
            with concurrent.futures.ThreadPoolExecutor(self.num_workers) as pool:
                pending: collections.deque[tuple[int, concurrent.futures.Future[Any]]] = collections.deque()
                for number, batch in todo:
                    pending.append((number, pool.submit(fetch, batch)))
                    if len(pending) >= self._prefetch:
                        done, future = pending.popleft()
                        self._first_batch = done + 1
                        yield future.result()
                while pending:
                    done, future = pending.popleft()
                    self._first_batch = done + 1
                    yield future.result()
        self._first_batch = 0
