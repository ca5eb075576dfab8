"""A rank program for the launcher tests: torch's own TCPStore client
(torch.distributed.TCPStore, LibTorch 2.x) against the launcher's rendezvous
store, through every query the client has. Run by `paisoar launch
--nproc_per_node 2` (it reads PAISOAR_STORE_ADDR/PORT and PAISOAR_JOB_TOKEN).

Rank 0 first runs one sequence of calls twice, against the launcher's store
and against a store torch itself serves (the reference), and compares what
every call returned or raised. Then both ranks use the launcher's store
together: a get() waiting for the other rank's set(), a barrier, a blocking
queue_pop() fed by the other rank, counters, and a wrong token refused.
Prints "OK rank=R" and exits 0, or prints what differed and exits 1.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

td = datetime.timedelta
TIMEOUT = td(seconds=30)


def fail(rank, what):
    print(f"FAIL rank={rank}: {what}", flush=True)
    sys.exit(1)


def outcome(call):
    try:
        result = call()
    except Exception as e:  # what torch's client raised is part of the answer
        return f"raised {type(e).__name__}: {str(e).splitlines()[0]}"
    return sorted(result) if isinstance(result, list) and result and isinstance(result[0], str) else result


def every_query(store):
    """(name, result) of each call, in order; the store must be fresh but for
    the job-token check."""
    s = store
    calls = [
        ("set", lambda: s.set("k", b"v")),
        ("get", lambda: s.get("k")),
        ("compare_set_created", lambda: s.compare_set("cas", b"", b"first")),
        ("compare_set_swapped", lambda: s.compare_set("cas", b"first", b"second")),
        ("compare_set_kept", lambda: s.compare_set("cas", b"zz", b"third")),
        ("compare_set_missing", lambda: s.compare_set("none", b"e", b"d")),
        ("add", lambda: s.add("n", 5)),
        ("add_negative", lambda: s.add("n", -7)),
        ("get_counter", lambda: s.get("n")),
        ("check_ready", lambda: s.check(["k", "n"])),
        ("check_not_ready", lambda: s.check(["k", "missing"])),
        ("wait_present", lambda: s.wait(["k", "n"])),
        ("wait_with_timeout", lambda: s.wait(["never"], td(milliseconds=200))),
        ("num_keys", lambda: s.num_keys()),
        ("delete_key", lambda: s.delete_key("k")),
        ("delete_key_missing", lambda: s.delete_key("k")),
        ("append_new", lambda: s.append("ap", b"ab")),
        ("append_more", lambda: s.append("ap", b"cd")),
        ("get_appended", lambda: s.get("ap")),
        ("multi_set", lambda: s.multi_set(["m1", "m2"], [b"x", b"yz"])),
        ("multi_get", lambda: s.multi_get(["m2", "m1"])),
        ("queue_push", lambda: s.queue_push("q", b"item1")),
        ("queue_push_more", lambda: s.queue_push("q", b"item2")),
        ("queue_len", lambda: s.queue_len("q")),
        ("check_queue", lambda: s.check(["q"])),
        ("queue_pop", lambda: s.queue_pop("q")),
        ("queue_pop_nonblocking", lambda: s.queue_pop("q", False)),
        ("queue_pop_empty", lambda: s.queue_pop("q", False)),
        ("queue_len_missing", lambda: s.queue_len("nq")),
        ("list_keys", lambda: s.list_keys()),
        ("barrier", lambda: s.barrier("bar", 1)),
        ("barrier_again", lambda: s.barrier("bar", 1)),
        ("get_barrier_count", lambda: s.get("bar")),
        ("barrier_with_timeout", lambda: s.barrier("bar2", 2, td(milliseconds=200))),
        ("num_keys_end", lambda: s.num_keys()),
        ("has_extended_api", lambda: s.has_extended_api()),
        ("get_with_timeout", lambda: (s.set_timeout(td(milliseconds=200)), s.get("nokey"))[1]),
        ("add_to_text", lambda: (s.set("txt", b"abc"), s.add("txt", 1))[1]),
    ]
    return [(name, outcome(call)) for name, call in calls]


def join(addr, port, token):
    store = dist.TCPStore(addr, port, is_master=False, timeout=TIMEOUT, wait_for_workers=False)
    answer = store.compare_set("paisoar/auth", token, token)
    return store, answer


def main() -> int:
    rank = int(os.environ["RANK"])
    if int(torch.__version__.split(".")[0]) < 2:
        fail(rank, f"torch {torch.__version__} is not 2.x; the launcher's store speaks 2.x's TCPStore protocol")
    addr = os.environ["PAISOAR_STORE_ADDR"]
    port = int(os.environ["PAISOAR_STORE_PORT"])
    token = os.environ["PAISOAR_JOB_TOKEN"].encode()

    store, answer = join(addr, port, token)
    if answer != token:
        fail(rank, f"the job-token check was answered {answer!r}")

    if rank == 0:
        reference = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=TIMEOUT, wait_for_workers=False)
        reference.compare_set("paisoar/auth", token, token)  # the same first request
        probe, _ = join(addr, port, token)
        got, want = every_query(probe), every_query(reference)
        for (name, mine), (_, theirs) in zip(got, want):
            if mine != theirs:
                fail(rank, f"{name}: the launcher's store gave {mine!r}, torch's own {theirs!r}")
        print(f"rank 0: {len(got)} calls answered as torch's own store answers them", flush=True)
        store.set("sequence_done", b"1")
    else:
        store.get("sequence_done")  # waits until rank 0 is through

    other = 1 - rank
    # A get() waits for the other rank's set().
    store.set(f"hello_from_{rank}", f"rank {rank}".encode())
    if store.get(f"hello_from_{other}") != f"rank {other}".encode():
        fail(rank, "get() of the other rank's key")
    store.add("count", rank + 1)
    store.barrier("both_counted", 2)
    if store.get("count") != b"3":
        fail(rank, f"count after the barrier: {store.get('count')!r}")
    # A blocking queue_pop() on rank 0 is woken by rank 1's push.
    if rank == 0:
        if store.queue_pop("work") != b"job":
            fail(rank, "queue_pop")
    else:
        store.queue_push("work", b"job")
    if store.multi_get([f"hello_from_{other}", "count"]) != [f"rank {other}".encode(), b"3"]:
        fail(rank, "multi_get")
    store.barrier("both_done", 2)

    # A wrong token: an empty answer, and the store closes that connection.
    intruder, answer = join(addr, port, b"a-guessed-token")
    if answer != b"":
        fail(rank, f"a wrong token was answered {answer!r}")
    try:
        intruder.get("count")
        fail(rank, "the refused connection still served a get()")
    except dist.DistError:
        pass
    if store.get("count") != b"3":
        fail(rank, "the store stopped serving after the refusal")
    print(f"OK rank={rank}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
