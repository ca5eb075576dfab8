"""torch's own distributed test harness (distributed_test.py of the installed
wheel) on gloo, 2 ranks, the CPU, with the DDP that TORCH_DDP_SUITE_DDP names:
'torch' (torch's, the control) or 'paisoar' (paisoar.DistributedDataParallel
in torch.nn.parallel's place). The ranks are forked from a forkserver that
imported this module, so the substitution and the device shim happen here,
at import, before distributed_test binds the name."""
import os
import sys

os.environ["BACKEND"] = "gloo"
os.environ["WORLD_SIZE"] = "2"

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_shim  # noqa: E402

WORLD_SIZE = 2
IMPLEMENTATION = os.environ.get("TORCH_DDP_SUITE_DDP", "torch")
# Where a rank notes that its test built a DDP (a file per test name).
MARKS = os.environ.get("TORCH_DDP_SUITE_MARKS")

device_shim.install(WORLD_SIZE)

if IMPLEMENTATION == "torch":
    _Chosen = torch.nn.parallel.DistributedDataParallel
elif IMPLEMENTATION == "paisoar":
    import paisoar

    _Chosen = paisoar.DistributedDataParallel
else:
    raise SystemExit(f"TORCH_DDP_SUITE_DDP={IMPLEMENTATION!r}: use 'torch' or 'paisoar'")

_current_test = None


class DistributedDataParallel(_Chosen):
    """The chosen DDP as the tests call it: a module the device shim left on
    the CPU is wrapped as a CPU module (device_ids and output_device, which
    name the stand-in GPUs, dropped), and the rank notes that its test built
    a DDP."""

    def __init__(self, module, device_ids=None, output_device=None, *args, **kwargs):
        if MARKS and _current_test:
            open(os.path.join(MARKS, _current_test), "a").close()
        super().__init__(module, None, None, *args, **kwargs)


DistributedDataParallel.__qualname__ = "DistributedDataParallel"
torch.nn.parallel.DistributedDataParallel = DistributedDataParallel

from torch.testing._internal import common_distributed  # noqa: E402
from torch.testing._internal.distributed import distributed_test  # noqa: E402
from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402

# Per test: the parent waits this long for its ranks (torch's default is 300
# s, 400-500 s for its two longest tests: test_ddp_uneven_inputs takes over
# 400 s with torch's DDP on 2 busy cores, so it fails and is not counted); a
# rank's collectives give up after half of it (torch's 60 s at most).
TEST_TIMEOUT_S = int(os.environ.get("TORCH_DDP_SUITE_TIMEOUT", "120"))
common_distributed.TIMEOUT_DEFAULT = TEST_TIMEOUT_S
common_distributed.TIMEOUT_OVERRIDE.clear()
distributed_test.default_pg_timeout = min(distributed_test.default_pg_timeout, TEST_TIMEOUT_S // 2)


def _run_with_env(env, target, *args, **kwargs):
    """A rank forked from the forkserver: the parent's per-test environment
    (the harness's temporary directory) first, then the harness's entry."""
    os.environ.update(env)
    target(*args, **kwargs)


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    """torch's test_distributed_spawn.py class, its ranks forked from a
    forkserver that imported torch and this module once."""

    def setUp(self):
        super().setUp()
        self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    def _spawn_processes(self):
        context = torch.multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        env = {k: os.environ[k] for k in ("TEMP_DIR", "INIT_METHOD", "MASTER_ADDR") if k in os.environ}

        def process(target, name, args, kwargs):
            return context.Process(target=_run_with_env, name=name, args=(env, target, *args), kwargs=kwargs)

        self._start_processes(process)

    @classmethod
    def _run(cls, rank, test_name, file_name, pipe, **kwargs):
        global _current_test
        _current_test = test_name
        super()._run(rank, test_name, file_name, pipe, **kwargs)
