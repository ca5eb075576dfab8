"""What the article's snippets take from their surroundings: MyCNN, a
criterion and a small synthetic image set (a fixed seed, so every rank and
every run sees the same data), and the device the snippets' `.cuda()` means
here (cuda when there is a GPU, else cpu)."""
import torch
from torch.utils.data import TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
dist_backend = "nccl" if torch.cuda.is_available() else "gloo"


class MyCNN(torch.nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.head = torch.nn.Linear(16 * 4 * 4, classes)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


def image_set(samples=256, classes=4, on=device):
    """16x16 one-channel images whose class is the quadrant holding a bright blob,
    on `on` (so the snippets' batches are where their model is, as on a GPU)."""
    g = torch.Generator().manual_seed(7)
    labels = torch.randint(0, classes, (samples,), generator=g)
    images = 0.1 * torch.randn(samples, 1, 16, 16, generator=g)
    for i, label in enumerate(labels.tolist()):
        r, c = divmod(label, 2)
        images[i, 0, r * 8 + 2:r * 8 + 6, c * 8 + 2:c * 8 + 6] += 1.0
    return TensorDataset(images.to(on), labels.to(on))


def parameter_digest(model):
    """One float per rank to compare: the sum of all parameters, in float64."""
    return sum(p.detach().double().sum().item() for p in model.parameters())


def finish():
    """Ends a rank program that used a torch.distributed group, after its
    checks passed and its output is flushed, without interpreter shutdown.

    torch's bug, not paisoar's (the mechanism of pytorch/pytorch PR #179291,
    the abort of issue #190489): a Gloo worker thread can drop the last
    reference to a finished collective's Python-owned tensors
    (all_gather_object's) only once interpreter shutdown has begun, and its
    GIL acquire there aborts the process ("terminate called without an
    active exception"). Seen in 4 of 40 runs of a script without paisoar:
    init_process_group("gloo"), one backward and SGD step of a Linear,
    all_gather_object, destroy_process_group. The test programs skip the
    shutdown instead of failing on it at random."""
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
