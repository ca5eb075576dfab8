#!/usr/bin/env python3
"""On paper, past this machine: step time and memory per GPU predicted for ResNet-50
(data parallel) and GPT (data x pipeline x tensor x ZeRO x checkpointing) on 8..1024
H200s, with the cost model of paisoar's planner. Standard library only; prints the
markdown of docs/PLANNER_PAPER_DRAFT.md:  python3 bench/plan_paper.py
Every input is cited or marked ASSUMPTION. Nothing here was measured on an H200."""
import itertools

# ---- Hardware: one H200 SXM, 8 per node ----------------------------------------------
# https://www.nvidia.com/en-us/data-center/h200/ (datasheet): BF16 1,979 and TF32 989
# TFLOPS are "with sparsity", dense is half; 141 GB HBM3e at 4.8 TB/s.
PEAK_BF16, PEAK_TF32 = 989.5e12, 494.7e12
HBM_BYTES, HBM_BW = 141e9, 4.8e12
MEM_USABLE = 0.90        # ASSUMPTION: 10% for CUDA context, NCCL buffers, allocator fragmentation
GPUS_PER_NODE = 8
# NVLink 4: 900 GB/s bidirectional = 450 GB/s per direction (datasheet); NCCL's ring gets
# ~370 GB/s bus bandwidth out of it (NCCL maintainer, github.com/NVIDIA/nccl-tests/issues/212).
BW_NVL = 370e9
# InfiniBand NDR 400 Gb/s = 50 GB/s per GPU (a ConnectX-7 per GPU); NCCL gets 46-48 GB/s
# per NIC (NCCL maintainer, github.com/NVIDIA/nccl-tests/issues/290).
BW_IB = 46e9
ALPHA_NVL = 1e-6         # ASSUMPTION: latency per ring step inside a node (no cited figure)
ALPHA_IB = 5e-6          # ASSUMPTION: latency per ring step between nodes (no cited figure)

# ---- Compute rate ----------------------------------------------------------------------
# A100 dense peaks (https://www.nvidia.com/en-us/data-center/a100/): BF16/FP16 312, TF32 156
# TFLOPS. ResNet-50 v1.5, PyTorch, batch 256, one A100 80GB: 2470 img/s mixed precision,
# 938 img/s TF32; 8 GPUs: 16621 img/s mixed (NVIDIA DeepLearningExamples, PyTorch/
# Classification/ConvNets/resnet50v1.5/README.md, "Training performance: NVIDIA DGX A100").
# MFU = img/s x 3 x forward FLOPs / peak. ASSUMPTION: the same MFU on an H200.
A100_BF16, A100_TF32 = 312e12, 156e12
DLE_A100_AMP_IMG_S, DLE_A100_TF32_IMG_S, DLE_A100_AMP_8GPU_IMG_S = 2470, 938, 16621
# GPT: Korthikanti et al. 2022 (arXiv:2205.05198, abstract): MFU 54.2% (selective recompute)
# and 42.1% (full recompute), 530B on 2240 A100s. ASSUMPTION: 0.45 on H200 for 13B (smaller
# GEMMs, faster chip); for 1.3B (d=2048) likely optimistic. Used for recompute FLOPs too.
MFU_GPT = 0.45
# paisoar's loader (JPEG decode, RandomResizedCrop(224), flip, normalise), one worker thread
# on this project's 2-vCPU VM: docs/BENCHMARKS.md, `bench data` against SPDL. Measured, but
# on a CPU unlike a GPU node's.
LOADER_IMG_S_PER_WORKER = 943

# ---- Training state ----------------------------------------------------------------------
GRAD_BYTES = 4           # fp32 gradients, reduced in fp32 (PyTorch AMP; Megatron's bf16 default)
STATE_BYTES = 12         # fp32 master copy + Adam m + v
PARAM_BYTES = 2          # bf16 working copy
OPT_TRAFFIC = 16         # HBM bytes per parameter for an AdamW step (the planner's constant)
BUCKET_CAP, FIRST_BUCKET = 25 * 2**20, 2**20   # PyTorch DDP defaults (bucket_cap_mb=25, first 1 MiB)


# ---- Collectives: alpha-beta rings, hierarchical across nodes ----------------------------
def ring(kind, nbytes, n, bw, alpha):
    k = 2 if kind == "allreduce" else 1         # reduce-scatter or all-gather: k = 1
    return k * ((n - 1) / n * nbytes / bw + (n - 1) * alpha) if n > 1 else 0.0


def collective(kind, nbytes, group, stride):
    """A group of `group` ranks spaced `stride` apart in rank order (8 ranks per node)."""
    local = max(1, min(group, GPUS_PER_NODE // stride))   # members on one node
    nodes = group // local
    if nodes == 1:
        return ring(kind, nbytes, group, BW_NVL, ALPHA_NVL)
    inter = ring(kind, nbytes / local, nodes, BW_IB, ALPHA_IB)
    if kind == "allreduce":   # reduce-scatter in the node, allreduce between, all-gather in the node
        return 2 * ring("allgather", nbytes, local, BW_NVL, ALPHA_NVL) + inter
    return ring(kind, nbytes, local, BW_NVL, ALPHA_NVL) + inter


def overlapped(kind, buckets, group, stride, overlap=True):
    """buckets: [(bytes, backward seconds)] in reduction order. The planner's closed form:
    exposed = max(0, comm - backward of all but the last bucket) + the last bucket's comm."""
    comm = [collective(kind, b, group, stride) for b, _ in buckets]
    if not overlap:
        return sum(comm)
    return max(0.0, sum(comm[:-1]) - sum(t for _, t in buckets[:-1])) + comm[-1]


def state_bytes(params, zero, dp, grad_bytes=GRAD_BYTES):
    p, g, s = PARAM_BYTES, grad_bytes, STATE_BYTES
    return params * {0: p + g + s, 1: p + g + s / dp, 2: p + (g + s) / dp, 3: (p + g + s) / dp}[zero]


def plan(**kw):
    kw["step"] = kw["compute"] + kw["comm"] + kw["bubble"] + kw["opt"]
    return kw


# ---- ResNet-50 v1.5 at 224x224, counted layer by layer ------------------------------------
def resnet50():
    """[(multiply-adds, parameters, output elements)] per conv (+ its BN) and the fc."""
    layers = []

    def conv(cin, cout, k, hw):
        layers.append((cin * cout * k * k * hw * hw, cin * cout * k * k + 2 * cout, cout * hw * hw))
    conv(3, 64, 7, 112)
    cin, hw = 64, 56
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            out = hw // (stride if i == 0 else 1)
            conv(cin, width, 1, hw)              # v1.5: the stride is on the 3x3
            conv(width, width, 3, out)
            conv(width, 4 * width, 1, out)
            if i == 0:
                conv(cin, 4 * width, 1, out)     # projection shortcut
            cin, hw = 4 * width, out
    return layers + [(2048 * 1000, 2048 * 1000 + 1000, 1000)]


RN = resnet50()
RN_MACS = sum(l[0] for l in RN)                # He et al. 2016, Table 1: 3.8e9 for v1
RN_PARAMS = sum(l[1] for l in RN)              # torchvision resnet50: 25,557,032
MFU_RN_BF16 = DLE_A100_AMP_IMG_S * 3 * 2 * RN_MACS / A100_BF16
MFU_RN_TF32 = DLE_A100_TF32_IMG_S * 3 * 2 * RN_MACS / A100_TF32
# ASSUMPTION: per conv, its output (BN's input) and the in-place ReLU's output are kept for
# backward. Check: DeepLearningExamples (ConvNets/configs.yml) trains batch 256 with AMP on a
# 16 GB V100, so 16-bit activations are under ~60 MB per image.
RN_ACT_BYTES = 2 * 2 * sum(l[2] for l in RN)   # 2 tensors x 2 bytes, per image


def resnet_step(n, batch=256, zero=0, overlap=True, grad_bytes=GRAD_BYTES, bf16=True):
    rate = PEAK_BF16 * MFU_RN_BF16 if bf16 else PEAK_TF32 * MFU_RN_TF32
    fwd = [2 * l[0] * batch / rate for l in RN]
    buckets, cur, cap = [], [0, 0.0], FIRST_BUCKET  # reverse order: the last layers reduce first
    for (_, params, _), f in zip(reversed(RN), reversed(fwd)):
        cur = [cur[0] + params * grad_bytes, cur[1] + 2 * f]
        if cur[0] >= cap:
            buckets, cur, cap = buckets + [tuple(cur)], [0, 0.0], BUCKET_CAP
    buckets += [tuple(cur)] if cur[0] else []
    comm = 0.0
    if n > 1:
        comm = overlapped("allreduce" if zero == 0 else "reducescatter", buckets, n, 1, overlap)
        comm += collective("allgather", RN_PARAMS * PARAM_BYTES, n, 1) if zero else 0.0
    r = plan(compute=3 * sum(fwd), comm=comm, bubble=0.0, opt=RN_PARAMS / (n if zero else 1) * OPT_TRAFFIC / HBM_BW,
             mem=state_bytes(RN_PARAMS, zero, n, grad_bytes) + batch * RN_ACT_BYTES,
             layout=f"{'DDP' if zero == 0 else f'ZeRO-{zero}'}, b={batch}")
    r["thr"] = n * batch / r["step"]
    return r


# ---- GPT (Megatron-style layers) ------------------------------------------------------------
# Shapes from the GPT-3 paper (Brown et al. 2020, arXiv:2005.14165, Table 2.1): 13B has 40
# layers, 40 heads, d_model 5140 (5120 here, so it splits by 8), batch 2M tokens (1024 x 2048);
# XL (1.3B) has 24 layers, d 2048, 16 heads, batch 1M tokens. Vocabulary 50257, padded to 51200.
GPTS = [dict(name="GPT 13B", L=40, d=5120, a=40, s=2048, V=51200, B=1024),
        dict(name="GPT 1.3B", L=24, d=2048, a=16, s=2048, V=51200, B=512)]


def gpt_step(g, n, t, p, zero, ckpt, b):
    L, d, a, s, V = g["L"], g["d"], g["a"], g["s"], g["V"]
    dp, Lp = n // (t * p), L // p
    m = g["B"] // (dp * b)                                            # micro-batches per step
    rate = PEAK_BF16 * MFU_GPT
    f_layer = (24 * b * s * d * d + 4 * b * s * s * d) / t / rate     # Narayanan et al. 2021, Sec. 5.1
    f_head = 2 * b * s * d * V / t / rate                             # logits, on the last stage
    layer_params, embed_params = 12 * d * d + 13 * d, V * d + s * d
    per_mb = Lp * f_layer * (4 if ckpt else 3) + 3 * f_head           # fwd, bwd = 2 fwd, recompute = 1 fwd
    act = b * s * d * 2                                               # one bf16 activation, bytes
    tp = Lp * (6 if ckpt else 4) * collective("allreduce", act, t, 1)  # Shoeybi et al. 2019, Fig. 4
    bw, alpha = (BW_NVL, ALPHA_NVL) if t * p <= GPUS_PER_NODE else (BW_IB, ALPHA_IB)
    pp = 2 * (alpha + act / t / bw) if p > 1 else 0.0                 # activation out, gradient back
    bubble = (p - 1) / m * m * (per_mb + tp)                          # 1F1B: (p-1)/m of the ideal step
    # gradients: a bucket per layer (head/embedding first), overlapped with the backward of the last
    # micro-batch under DDP and ZeRO-1 (the ones before it accumulate), of every micro-batch under
    # ZeRO-2/3 (their gradients are sharded, so each micro-batch's are reduce-scattered)
    stage_params = (Lp * layer_params + embed_params) / t
    bwd_layer = f_layer * (3 if ckpt else 2)
    buckets = [(embed_params / t * GRAD_BYTES, 2 * f_head)] + [(layer_params / t * GRAD_BYTES, bwd_layer)] * Lp
    dpc = 0.0
    if dp > 1:
        dpc = overlapped("allreduce" if zero == 0 else "reducescatter", buckets, dp, t * p) * (m if zero >= 2 else 1)
        if zero in (1, 2):                                            # new parameters, after the step
            dpc += collective("allgather", stage_params * PARAM_BYTES, dp, t * p)
        if zero == 3:                      # each layer gathered in forward and in backward, one ahead
            gather = collective("allgather", layer_params / t * PARAM_BYTES, dp, t * p)
            dpc += m * Lp * (max(0.0, gather - f_layer) + max(0.0, gather - bwd_layer))
    # memory (Korthikanti et al. 2022, Sec. 4): sbd(34 + 5as/d)/t per layer under tensor + sequence
    # parallelism; full recompute keeps the layer input (2sbd) and rebuilds one layer at a time;
    # 1F1B keeps min(p, m) micro-batches on the first stage; the loss keeps fp32 logits (4sbV/t)
    full = s * b * d * (34 + 5 * a * s / d) / t
    per_layer, extra = (2 * s * b * d, full) if ckpt else (full, 0.0)
    states = state_bytes(stage_params, zero, dp) + (2 * layer_params / t * PARAM_BYTES if zero == 3 else 0)
    logits = 4 * s * b * V / t
    first = states + min(p, m) * Lp * per_layer + extra + (logits if p == 1 else 0.0)
    r = plan(compute=m * per_mb, comm=m * (tp + pp) + dpc, bubble=bubble,
             opt=stage_params / (dp if zero else 1) * OPT_TRAFFIC / HBM_BW,
             mem=max(first, states + Lp * per_layer + extra + logits), t=t, p=p, zero=zero, ckpt=ckpt,
             layout=f"d{dp} p{p} t{t}, b={b} m={m}, {'DDP' if zero == 0 else f'ZeRO-{zero}'}"
                    + (", ckpt" if ckpt else ""))
    r["thr"], r["fits"] = g["B"] * s / r["step"], r["mem"] <= MEM_USABLE * HBM_BYTES
    return r


def gpt_plans(g, n):
    """Every layout a planner would try (t x p dividing or filling whole nodes); fitting, fastest first."""
    out = []
    for t, p, zero, ckpt, b in itertools.product((1, 2, 4, 8), range(1, g["L"] + 1), (0, 1, 2, 3),
                                                 (False, True), (1, 2, 4, 8)):
        tp_ = t * p
        if g["L"] % p == 0 and n % tp_ == 0 and (GPUS_PER_NODE % tp_ == 0 or tp_ % GPUS_PER_NODE == 0) \
                and g["B"] % (n // tp_ * b) == 0:
            out.append(gpt_step(g, n, t, p, zero, ckpt, b))
    return sorted(out, key=lambda r: (not r["fits"], round(r["step"], 6), r["mem"]))


# ---- Output ----------------------------------------------------------------------------------
SIZES = (8, 64, 256, 1024)
FAMILIES = [("plain DDP (p1 t1, no ckpt)", lambda r: r["zero"] == 0 and r["p"] == r["t"] == 1 and not r["ckpt"]),
            ("data parallel only (p1 t1)", lambda r: r["p"] == r["t"] == 1),
            ("DDP, any p x t", lambda r: r["zero"] == 0), ("ZeRO-1", lambda r: r["zero"] == 1),
            ("ZeRO-2", lambda r: r["zero"] == 2), ("ZeRO-3", lambda r: r["zero"] == 3),
            ("pipeline (p > 1)", lambda r: r["p"] > 1), ("tensor (t > 1)", lambda r: r["t"] > 1),
            ("full checkpointing", lambda r: r["ckpt"])]


def ms(x):                                     # seconds, printed as milliseconds
    return f"{x * 1e3:.1f}"


def scaling(r, n, base):                       # throughput per GPU against base's on 8 GPUs
    return f"{r['thr'] / n / (base['thr'] / 8):.1%}"


def table(rows, unit, base=None, head="GPUs"):
    """rows: [(first column, plan, GPUs)]."""
    print(f"| {head} | layout | step ms | compute | exposed comm | bubble | optimizer | peak GB/GPU | {unit} | "
          + ("scaling vs 8 |" if base else "fits |") + "\n|---|---|" + "---:|" * 8)
    for first, r, n in rows:
        last = scaling(r, n, base) if base else ("yes" if r.get("fits", True) else "**no**")
        print(f"| {first} | {r['layout']} | {ms(r['step'])} | {ms(r['compute'])} | {ms(r['comm'])} | "
              f"{ms(r['bubble'])} | {ms(r['opt'])} | {r['mem'] / 1e9:.1f} | {r['thr']:,.0f} | {last} |")
    print()


def resnet_tables():
    print(f"ResNet-50 v1.5: {RN_MACS / 1e9:.2f} G multiply-adds per image and {RN_PARAMS / 1e6:.2f} M "
          f"parameters (counted); MFU from the A100 figures: bf16 {MFU_RN_BF16:.3f}, TF32 {MFU_RN_TF32:.3f}; "
          f"activations {RN_ACT_BYTES / 1e6:.0f} MB per image.\n")
    print("### ResNet-50, ImageNet 224x224, 256 images per GPU, bf16 (best of DDP, ZeRO-1, ZeRO-2)\n")
    best = {n: min((resnet_step(n, zero=z) for z in (0, 1, 2)), key=lambda r: r["step"]) for n in SIZES}
    table([(n, best[n], n) for n in SIZES], "img/s", best[8])
    print("### ResNet-50: the article's rungs, predicted on H200s\n")
    print("| rung | img/s | factor | kept | product |\n|---|---:|---:|---|---:|")
    rungs = [("1 GPU, TF32 (PyTorch's default for convolutions)", dict(n=1, bf16=False)),
             ("+ bf16 autocast", dict(bf16=True)), ("+ 8 GPUs (one node), DDP, no overlap", dict(n=8, overlap=False)),
             ("+ overlap of bucketed allreduce with backward", dict(overlap=True)),
             ("+ bf16 gradient compression", dict(grad_bytes=2))]
    rungs += [(f"+ {n} GPUs ({n // 8} nodes)", dict(n=n)) for n in SIZES[1:]]
    kept, prev = {}, None                      # as `paisoar bench ladder`: a rung that slows is not kept
    first = resnet_step(**rungs[0][1])["thr"]
    for name, change in rungs:
        r = resnet_step(**{**kept, **change})
        keep = prev is None or r["thr"] >= prev["thr"] or "n" in change
        print(f"| {name} | {r['thr']:,.0f} | {r['thr'] / (prev or r)['thr']:.2f}x | "
              f"{'yes' if keep else 'no'} | {(r if keep else prev)['thr'] / first:,.1f}x |")
        kept, prev = ({**kept, **change}, r) if keep else (kept, prev)
    hundred = next(n for n in range(8, 1025, 8) if resnet_step(n)["thr"] >= 100 * first)
    one = resnet_step(1)
    print(f"\nThe product passes 100x at {hundred} GPUs ({hundred // 8} nodes). A loader must deliver "
          f"{one['thr']:,.0f} img/s per GPU, {8 * one['thr']:,.0f} per node: "
          f"{one['thr'] / LOADER_IMG_S_PER_WORKER:.1f} loader threads per GPU at this project's measured rate.\n")
    print("| GPUs | exposed comm, no overlap | overlap | overlap + bf16 grads | scaling vs 1 GPU (overlap) |")
    print("|---:|---:|---:|---:|---:|")
    for n in SIZES:
        a, b, c = resnet_step(n, overlap=False), resnet_step(n), resnet_step(n, grad_bytes=2)
        print(f"| {n} | {ms(a['comm'])} ms | {ms(b['comm'])} ms | {ms(c['comm'])} ms | {b['thr'] / n / one['thr']:.1%} |")
    dle = DLE_A100_AMP_8GPU_IMG_S / DLE_A100_AMP_IMG_S
    print(f"\nMeasured for comparison (A100, DeepLearningExamples): 8 GPUs gave {dle:.2f}x of one "
          f"({dle / 8:.0%}); the model predicts {resnet_step(8)['thr'] / one['thr']:.2f}x on H200.\n")


def gpt_tables():
    for g in GPTS:
        params = g["L"] * (12 * g["d"] ** 2 + 13 * g["d"]) + g["V"] * g["d"] + g["s"] * g["d"]
        print(f"### {g['name']} ({params / 1e9:.2f} B parameters), seq {g['s']}, global batch "
              f"{g['B']} sequences, bf16, AdamW: the layout the planner picks\n")
        plans = {n: gpt_plans(g, n) for n in SIZES}
        table([(n, plans[n][0], n) for n in SIZES], "tokens/s", plans[8][0])
        for n in SIZES:
            print(f"#### {g['name']} on {n} GPUs: {len(plans[n])} layouts tried, "
                  f"{sum(r['fits'] for r in plans[n])} fit; the best of each kind\n")
            rows = []
            for name, pick in FAMILIES:        # the fastest that fits, else the smallest
                cands = [r for r in plans[n] if pick(r)]
                if cands:
                    rows.append((name, cands[0] if cands[0]["fits"] else min(cands, key=lambda r: r["mem"]), n))
            table(rows, "tokens/s", head="kind")


def sensitivity():
    """Inputs marked ASSUMPTION (and two cited ones) moved one at a time."""
    base = dict(ALPHA_IB=ALPHA_IB, BW_IB=BW_IB, BW_NVL=BW_NVL, MFU_GPT=MFU_GPT)
    cases = [("as above", {}), ("latency between nodes x4 (20 us)", dict(ALPHA_IB=4 * ALPHA_IB)),
             ("InfiniBand at half (23 GB/s)", dict(BW_IB=BW_IB / 2)),
             ("NVLink at half (185 GB/s)", dict(BW_NVL=BW_NVL / 2)), ("GPT MFU 0.35", dict(MFU_GPT=0.35))]
    print("### Sensitivity: 1024 GPUs, scaling against 8 GPUs under the same inputs\n")
    print("| inputs | ResNet-50 | " + " | ".join(g["name"] for g in GPTS) + " |\n|---|---:|---|---|")
    for name, change in cases:
        globals().update({**base, **change})
        cells = [scaling(resnet_step(1024), 1024, resnet_step(8))]
        for g in GPTS:
            big = gpt_plans(g, 1024)[0]
            cells.append(f"{big['layout']}: {ms(big['step'])} ms, {scaling(big, 1024, gpt_plans(g, 8)[0])}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    globals().update(base)


if __name__ == "__main__":
    resnet_tables()
    gpt_tables()
    sensitivity()
