"""paisoar.data: batches equal to the same samples decoded one by one in the
sampler's order, the same for any number of workers, DistributedSampler's
order per rank, exact mid-epoch resume, torch Datasets batched like torch's
DataLoader with a DistributedSampler, and bad input named."""
import random

import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader as TorchLoader, DistributedSampler, TensorDataset

import paisoar
from paisoar import _C, data

CLASSES = ("ant", "bee", "cat")


@pytest.fixture(scope="module")
def image_root(tmp_path_factory):
    """30 JPEGs of assorted sizes in three class folders."""
    root = tmp_path_factory.mktemp("images")
    rng = random.Random(3)
    for c, name in enumerate(CLASSES):
        (root / name).mkdir()
        for i in range(10):
            w, h = rng.randint(40, 90), rng.randint(40, 90)
            pixels = bytes(rng.randrange(256) for _ in range(w * h * 3))
            Image.frombytes("RGB", (w, h), pixels).save(root / name / f"{i:02d}.jpg", quality=90)
    return root


def train_set(root):
    return data.ImageFolder(root, transform=data.Compose([
        data.RandomResizedCrop(32), data.RandomHorizontalFlip(), data.ToTensor(),
        data.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]))


def epoch_batches(loader, epoch):
    loader.set_epoch(epoch)
    return [(x.clone(), y.clone()) for x, y in loader]


def test_batches_equal_the_samples_decoded_one_by_one(image_root):
    ds = train_set(image_root)
    assert len(ds) == 30 and ds.classes == list(CLASSES) and ds.num_classes == 3
    loader = data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=2, seed=5, rank=1, world_size=2)
    batches = epoch_batches(loader, epoch=2)
    order = _C.sampler_indices(len(ds), 2, 1, 2, shuffle=True, seed=5, drop_last=False)
    assert len(batches) == len(loader) == 2 and sum(len(y) for _, y in batches) == len(order) == 15
    images = torch.cat([x for x, _ in batches])
    labels = torch.cat([y for _, y in batches])
    for row, index in enumerate(order):
        x, y = ds.get(index, seed=5, epoch=2)
        assert torch.equal(images[row], x) and labels[row].item() == y == index // 10


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_any_worker_count_gives_the_same_batches(image_root, workers):
    reference = epoch_batches(data.DataLoader(train_set(image_root), batch_size=7, shuffle=True, seed=1), 0)
    got = epoch_batches(data.DataLoader(train_set(image_root), batch_size=7, shuffle=True, seed=1,
                                        num_workers=workers), 0)
    assert len(got) == len(reference) == 5
    for (a, b), (c, d) in zip(got, reference):
        assert torch.equal(a, c) and torch.equal(b, d)


def test_each_rank_takes_distributed_samplers_indices(image_root):
    ds = train_set(image_root)
    for rank in range(4):
        sampler = DistributedSampler(range(len(ds)), num_replicas=4, rank=rank, shuffle=True, seed=9)
        sampler.set_epoch(3)
        assert _C.sampler_indices(len(ds), 3, rank, 4, shuffle=True, seed=9, drop_last=False) == list(sampler)


def test_a_saved_position_resumes_exactly(image_root):
    loader = data.DataLoader(train_set(image_root), batch_size=4, shuffle=True, seed=2, num_workers=2)
    full = epoch_batches(loader, 1)
    loader.set_epoch(1)
    it = iter(loader)
    for _ in range(3):
        next(it)
    state = loader.state_dict()
    assert state == {"epoch": 1, "batch": 3}
    resumed = data.DataLoader(train_set(image_root), batch_size=4, shuffle=True, seed=2, num_workers=1)
    resumed.load_state_dict(state)
    rest = [(x.clone(), y.clone()) for x, y in resumed]
    assert len(rest) == len(full) - 3
    for (a, b), (c, d) in zip(rest, full[3:]):
        assert torch.equal(a, c) and torch.equal(b, d)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_torch_dataset_is_batched_as_torchs_loader_with_a_distributed_sampler(workers):
    ds = TensorDataset(torch.arange(50.0).view(25, 2), torch.arange(25))
    ours = data.DataLoader(ds, batch_size=4, shuffle=True, seed=4, rank=1, world_size=3, num_workers=workers,
                           drop_last=True)
    sampler = DistributedSampler(ds, num_replicas=3, rank=1, shuffle=True, seed=4)
    theirs = TorchLoader(ds, batch_size=4, sampler=sampler, drop_last=True)
    for epoch in (0, 1):
        ours.set_epoch(epoch)
        sampler.set_epoch(epoch)
        a, b = list(ours), list(theirs)
        assert len(a) == len(b) == len(ours) == 2
        for (x, y), (u, v) in zip(a, b):
            assert torch.equal(x, u) and torch.equal(y, v)


def test_idx_files_load_as_the_main_job_reads_them():
    root = "/usr/share/datasets/fashion-mnist"
    ds = data.IdxDataset(f"{root}/t10k-images-idx3-ubyte.gz", f"{root}/t10k-labels-idx1-ubyte.gz",
                         transform=data.Normalize([0.2860], [0.3530]), limit=64)
    x, y = next(iter(data.DataLoader(ds, batch_size=64)))
    assert x.shape == (64, 1, 28, 28) and y.shape == (64,)
    first, label = ds.get(0)
    assert torch.equal(x[0], first) and y[0].item() == label


def test_bad_input_is_named(image_root, tmp_path):
    with pytest.raises(paisoar.DataError, match=str(tmp_path / "missing")):
        data.ImageFolder(tmp_path / "missing")
    with pytest.raises(TypeError, match="not a paisoar.data transform"):
        data.ImageFolder(image_root, transform=[lambda img: img])
    with pytest.raises(ValueError, match="on_error"):
        data.DataLoader(train_set(image_root), on_error="ignore")
    with pytest.raises(ValueError, match="batch_size"):
        data.DataLoader(train_set(image_root), batch_size=0)
    broken = tmp_path / "broken"
    (broken / "only").mkdir(parents=True)
    for i in range(3):
        Image.new("RGB", (20, 20)).save(broken / "only" / f"{i}.jpg")
    (broken / "only" / "1.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    with pytest.raises(paisoar.DataError, match="1.jpg"):
        list(data.DataLoader(data.ImageFolder(broken, transform=data.Resize((8, 8))), batch_size=3))
    skipping = data.DataLoader(data.ImageFolder(broken, transform=data.Resize((8, 8))), batch_size=3,
                               on_error="skip")
    (x, y), = list(skipping)
    assert x.shape[0] == 2
