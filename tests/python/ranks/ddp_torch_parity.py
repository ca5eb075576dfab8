"""One torch DDP behaviour per mode, run the same way with
torch.nn.parallel.DistributedDataParallel and with paisoar's on the same
gloo group and the same seeds; every rank compares what the two left
(gradients, parameters, buffers: bit-equal, 2 ranks averaging exactly; None
where torch leaves None; the same exception type at the same step):

  grad_sync_flag    accumulation by require_backward_grad_sync = (micro_step == last)
  pickle            torch.save / torch.load of the wrapper on every rank, then training on
  deepcopy          copy.deepcopy of the wrapper trains like the original
  reassigned_buffer rank 0 reassigns a buffer (module.buffer = module.buffer + 1) before forward
  forward_sync_off  forward_sync_buffers=False: buffers synced at init only
  undefined_grad    a backward that hands the parameters no gradient leaves .grad None
  unused_output     an output left out of the loss (find_unused_parameters): .grad stays None
  user_hook         a user's hook named allreduce_hook that returns zeros
  powersgd_hook     torch's powerSGD_hook through register_comm_hook
  post_localsgd     torch's post_localSGD_hook through register_comm_hook
  join              uneven inputs under join(), divide_by_initial_world_size True and False
  ignored           _set_params_and_buffers_to_ignore_for_model: left out of averaging
  static_graph      static_graph=True with two forwards before one backward
  unused_error      a parameter without gradient: the error comes at the next forward

Prints "DDP-PARITY <mode> OK rank R". Usage: ddp_torch_parity.py MODE
"""
import copy
import io
import sys

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook, powerSGD_hook

import paisoar

from common import finish

MODE = sys.argv[1]
nn = torch.nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(10, 16)
        self.bn = nn.BatchNorm1d(16)
        self.b = nn.Linear(16, 4)
        self.register_buffer("buffer", torch.randn(2))

    def forward(self, x):
        return self.b(torch.relu(self.bn(self.a(x)))) + self.buffer.sum()


class TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(10, 10, bias=False)
        self.b = nn.Linear(10, 10, bias=False)

    def forward(self, x):
        return self.a(x), self.b(x)


def inputs(rank, n=6):
    g = torch.Generator().manual_seed(50 + rank)
    return [torch.randn(8, 10, generator=g) for _ in range(n)]


def fresh(cls=Net):
    torch.manual_seed(0)
    return cls()


def state(model):
    """Everything a run leaves, to compare."""
    out = {f"param {n}": p.detach().clone() for n, p in model.module.named_parameters()}
    out.update({f"grad {n}": None if p.grad is None else p.grad.clone() for n, p in model.module.named_parameters()})
    out.update({f"buffer {n}": b.clone() for n, b in model.module.named_buffers()})
    return out


def train(model, xs, accumulate=1, flag=False):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(0, len(xs), accumulate):
        for micro, x in enumerate(xs[step:step + accumulate]):
            if flag:
                model.require_backward_grad_sync = micro == accumulate - 1
            model(x).square().mean().div(accumulate).backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
    return state(model)


def zeros_hook(state, bucket):
    fut = torch.futures.Future()
    fut.set_result(torch.zeros_like(bucket.buffer()))
    return fut


zeros_hook.__name__ = "allreduce_hook"  # a user's own hook, named like torch's


def run(DDP, rank):
    xs = inputs(rank)
    if MODE == "grad_sync_flag":
        return train(DDP(fresh()), xs, accumulate=3, flag=True)
    if MODE == "pickle":
        model = DDP(fresh())
        train(model, xs[:2])
        buf = io.BytesIO()
        torch.save(model, buf)
        buf.seek(0)
        loaded = torch.load(buf, weights_only=False)
        assert type(loaded) is DDP, type(loaded)
        return train(loaded, xs[2:])
    if MODE == "deepcopy":
        model = DDP(fresh())
        train(model, xs[:2])
        return train(copy.deepcopy(model), xs[2:])
    if MODE == "reassigned_buffer":
        model = DDP(fresh())
        for x in xs[:3]:
            if rank == 0:
                model.module.buffer = model.module.buffer + 1
            model(x).sum().backward()
        return state(model)
    if MODE == "forward_sync_off":
        model = DDP(fresh(), forward_sync_buffers=False)
        if rank == 0:
            model.module.buffer += 1
        return train(model, xs[:3])
    if MODE == "undefined_grad":
        model = DDP(fresh(), find_unused_parameters=True)
        torch._C._functions.UndefinedGrad()(model(xs[0]).sum()).backward()
        return state(model)
    if MODE == "unused_output":
        model = DDP(fresh(TwoOutputs), find_unused_parameters=True)
        for i, x in enumerate(xs[:4]):
            a, b = model(x)
            (a @ b.T if i < 2 else b).sum().backward()
        return state(model)
    if MODE == "user_hook":
        model = DDP(fresh())
        model.register_comm_hook(None, zeros_hook)
        model(xs[0]).sum().backward()
        return state(model)
    if MODE == "powersgd_hook":
        model = DDP(fresh())
        model.register_comm_hook(powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=2,
                                                             start_powerSGD_iter=2, random_seed=7),
                                 powerSGD_hook.powerSGD_hook)
        return train(model, xs)
    if MODE == "post_localsgd":
        model = DDP(fresh())
        subgroup, _ = dist.new_subgroups(group_size=1)  # local SGD from iteration 3: each rank alone
        model.register_comm_hook(post_localSGD_hook.PostLocalSGDState(process_group=None, subgroup=subgroup,
                                                                      start_localSGD_iter=3),
                                 post_localSGD_hook.post_localSGD_hook)
        return train(model, xs)
    if MODE == "join":
        out = {}
        for divide in (True, False):
            model = DDP(fresh())
            with model.join(divide_by_initial_world_size=divide):
                last = train(model, xs[:3 + 2 * rank])
            out.update({f"{divide} {k}": v for k, v in last.items() if not k.startswith("grad")})
            out.update({f"{divide} after join {k}": v for k, v in state(model).items() if k.startswith("param")})
        return out
    if MODE == "ignored":
        net = fresh()
        DDP._set_params_and_buffers_to_ignore_for_model(net, ["b.weight", "buffer"])
        if rank == 1:
            with torch.no_grad():
                net.b.weight.add_(1.0)
                net.buffer.add_(1.0)
        return train(DDP(net), xs[:3])
    if MODE == "static_graph":
        model = DDP(fresh(), static_graph=True)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in xs[:4]:
            (model(x).sum() + model(x * 2).square().mean()).backward()
            opt.step()
            opt.zero_grad()
        return state(model)
    if MODE == "unused_error":
        model = DDP(fresh(TwoOutputs))
        for step, x in enumerate(xs[:3]):
            try:
                model(x)[1].sum().backward()
            except RuntimeError as error:
                text = str(error)
                assert "find_unused_parameters=True" in text, text
                assert "a.weight" in text or "did not receive grad" in text, text
                return {"raised at step": torch.tensor(step)}
        return {"raised at step": torch.tensor(-1)}
    raise SystemExit(f"unknown mode {MODE}")


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    theirs = run(torch.nn.parallel.DistributedDataParallel, rank)
    ours = run(paisoar.DistributedDataParallel, rank)
    assert theirs, "the mode left nothing to compare"
    for key, expected in theirs.items():
        got = ours.get(key, "missing")
        if expected is None or got is None or isinstance(got, str):
            ok = got is expected
        else:
            ok = torch.equal(got, expected)
        if not ok:
            sys.exit(f"DDP-PARITY {MODE} FAILED rank {rank}: {key}: paisoar {got} torch {expected}")
    print(f"DDP-PARITY {MODE} OK rank {rank} ({len(theirs)} values equal)", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    finish()


main()
