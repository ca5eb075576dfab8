#!/usr/bin/env python3
"""The PyTorch (Python) definition of models::Gpt (include/paisoar/models/gpt.h):
nanoGPT's layout and parameter names, written out for LibTorch 1.13's torch
(explicit masked attention, no scaled_dot_product_attention), so the C++ model
can be checked against it with the same weights (tests/models).

Run it to print the parameter count for a configuration, e.g.
    python3 bench/gpt_peer.py --n_layer 4 --n_embd 128
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm(nn.Module):
    """LayerNorm over the last dimension with an optional bias (models::GptLayerNorm)."""

    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout, bias):
        super().__init__()
        self.n_head = n_head
        self.dropout = dropout
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.n_head))
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = F.softmax(att.masked_fill(future, float("-inf")), dim=-1)
        att = F.dropout(att, self.dropout, self.training)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return F.dropout(self.c_proj(y), self.dropout, self.training)


class Mlp(nn.Module):
    def __init__(self, n_embd, dropout, bias):
        super().__init__()
        self.dropout = dropout
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x):
        return F.dropout(self.c_proj(F.gelu(self.c_fc(x))), self.dropout, self.training)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout, bias):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout, bias)
        self.ln_2 = LayerNorm(n_embd, bias)
        self.mlp = Mlp(n_embd, dropout, bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    """models::Gpt: token + position embeddings, pre-LN blocks, ln_f, lm_head tied to wte."""

    def __init__(self, vocab_size=256, block_size=128, n_layer=4, n_head=4, n_embd=128, dropout=0.0, bias=True):
        super().__init__()
        self.block_size = block_size
        self.dropout = dropout
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, dropout, bias) for _ in range(n_layer)]),
            ln_f=LayerNorm(n_embd, bias),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer))

    def forward(self, idx):
        T = idx.shape[1]
        assert T <= self.block_size, f"sequence of {T} tokens, block_size {self.block_size}"
        pos = torch.arange(T, device=idx.device)
        x = F.dropout(self.transformer.wte(idx) + self.transformer.wpe(pos), self.dropout, self.training)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    @staticmethod
    def loss(logits, targets):
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("vocab_size", 256), ("block_size", 128), ("n_layer", 4), ("n_head", 4), ("n_embd", 128)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--no_bias", action="store_true")
    a = p.parse_args()
    m = Gpt(a.vocab_size, a.block_size, a.n_layer, a.n_head, a.n_embd, bias=not a.no_bias)
    print(sum(q.numel() for q in m.parameters()))


if __name__ == "__main__":
    main()
