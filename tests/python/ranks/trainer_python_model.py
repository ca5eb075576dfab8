"""paisoar.train with a Python model: the C++ Trainer (DDP, amp auto, the
loader, checkpoints, the report) trains a torch.nn.Module defined here on a
Fashion-MNIST slice; then the same run again resumes from its checkpoint and
takes no step. Checks the accuracy beat chance by far and every rank ends
with the same weights. Prints "TRAINER-PYTHON OK".

Usage: trainer_python_model.py RUN_DIR
"""
import sys

import torch

import torch.distributed as dist

import paisoar

from common import finish


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc = torch.nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


run_dir = sys.argv[1]
overrides = {"run_dir": run_dir, "data.train_limit": 2048, "data.eval_limit": 1000, "train.epochs": 2,
             "profiler.memory": False}
torch.manual_seed(0)
model = Cnn()
result = paisoar.train("configs/fashion_mnist.yaml", model=model, overrides=overrides)
if not result["accuracy"] > 60:
    sys.exit(f"TRAINER-PYTHON FAILED: accuracy {result['accuracy']:.1f}% after {result['steps']} steps")
again = paisoar.train("configs/fashion_mnist.yaml", model=Cnn(), overrides=overrides)
if again["steps"] != 0 or again["global_step"] != result["global_step"] or not again["resumed_from"]:
    sys.exit(f"TRAINER-PYTHON FAILED: the second run did not resume the finished one: {again}")
dist.init_process_group("gloo")
digests = [None] * dist.get_world_size()
dist.all_gather_object(digests, sum(p.double().sum().item() for p in model.parameters()))
if len(set(digests)) != 1:
    sys.exit(f"TRAINER-PYTHON FAILED: the ranks' weights differ: {digests}")
print(f"TRAINER-PYTHON OK rank {dist.get_rank()} accuracy {result['accuracy']:.1f}% "
      f"{result['samples_per_s']:.0f} samples/s")
dist.destroy_process_group()
finish()
