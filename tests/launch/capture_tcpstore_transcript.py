"""Records what torch's own TCPStore client and server say to each other, for
the launcher's store tests (tests/launch/data/tcpstore_2_14_transcript.txt).

A real torch TCPStore server runs behind a recording proxy in a child process
(the client's blocking calls hold the GIL, so the proxy cannot share its
process); the parent drives a real TCPStore client through every query.
Each line of the output is

    <connection> <label> <C>S|S>C> <hex bytes | EOF>

in the order the proxy saw the bytes. The first request after the handshake
is the launcher's job-token check (compare_set of paisoar/auth with "tok" as
both values), which a plain server answers with "tok" as the launcher's
store does for the token "tok", so the same transcript replays against it.

Usage: python capture_tcpstore_transcript.py OUT.txt   (torch 2.x)
Rerun it after a torch upgrade and compare; the tests read the committed file.
"""
import datetime
import os
import socket
import subprocess
import sys
import threading
import time

td = datetime.timedelta


def proxy_main(out_path: str) -> None:
    import torch.distributed as dist

    log, lock = [], threading.Lock()
    label = ["connect"]
    server = dist.TCPStore("127.0.0.1", 0, None, True, td(seconds=30), wait_for_workers=False)
    listener = socket.create_server(("127.0.0.1", 0))
    control = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], control.getsockname()[1], flush=True)

    def pump(conn_id, src, dst, direction):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            with lock:
                log.append((conn_id, label[0], direction, data.hex() if data else "EOF"))
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            dst.sendall(data)

    def accept():
        conn_id = 0
        while True:
            client, _ = listener.accept()
            conn_id += 1
            upstream = socket.create_connection(("127.0.0.1", server.port))
            for args in ((conn_id, client, upstream, "C>S"), (conn_id, upstream, client, "S>C")):
                threading.Thread(target=pump, args=args, daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    ctl, _ = control.accept()
    for line in ctl.makefile("r"):
        if line.strip() == "DUMP":
            break
        with lock:
            label[0] = line.strip()
    time.sleep(0.5)
    with lock, open(out_path, "w") as out:
        out.write("# torch %s: written by tests/launch/capture_tcpstore_transcript.py\n"
                  % __import__("torch").__version__)
        for conn_id, name, direction, data in log:
            if data == "EOF" and direction == "C>S":
                continue  # the client closing at the end of the capture
            out.write(f"{conn_id} {name} {direction} {data}\n")


def driver_main(out_path: str) -> None:
    import torch.distributed as dist

    proxy = subprocess.Popen([sys.executable, __file__, "--proxy", out_path],
                             stdout=subprocess.PIPE, text=True)
    port, control_port = map(int, proxy.stdout.readline().split())
    ctl = socket.create_connection(("127.0.0.1", control_port))

    def label(name):  # the proxy files what follows under `name`
        ctl.sendall((name + "\n").encode())
        time.sleep(0.2)

    def step(name, call):
        label(name)
        try:
            result = call()
        except Exception as e:  # timeouts and closed connections are part of the record
            result = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        time.sleep(0.3)  # every byte of this step reached the proxy
        print(f"{name}: {result!r}")

    label("connect")
    c = dist.TCPStore("127.0.0.1", port, None, False, td(seconds=5))
    time.sleep(0.3)
    step("token_check", lambda: c.compare_set("paisoar/auth", b"tok", b"tok"))
    step("set", lambda: c.set("k", b"v"))
    step("compare_set_created", lambda: c.compare_set("cas", b"", b"first"))
    step("compare_set_swapped", lambda: c.compare_set("cas", b"first", b"second"))
    step("compare_set_kept", lambda: c.compare_set("cas", b"zz", b"third"))
    step("compare_set_missing", lambda: c.compare_set("none", b"e", b"d"))
    step("get", lambda: c.get("k"))
    step("add", lambda: c.add("n", 5))
    step("add_negative", lambda: c.add("n", -7))
    step("check_ready", lambda: c.check(["k", "n"]))
    step("check_not_ready", lambda: c.check(["k", "missing"]))
    step("wait_present", lambda: c.wait(["k", "n"]))
    step("wait_timeout", lambda: c.wait(["never"], td(milliseconds=300)))
    step("num_keys", lambda: c.num_keys())
    step("delete_key", lambda: c.delete_key("k"))
    step("delete_key_missing", lambda: c.delete_key("k"))
    step("append_new", lambda: c.append("ap", b"ab"))
    step("append_more", lambda: c.append("ap", b"cd"))
    step("get_appended", lambda: c.get("ap"))
    step("multi_set", lambda: c.multi_set(["m1", "m2"], [b"x", b"yz"]))
    step("multi_get", lambda: c.multi_get(["m1", "m2"]))
    step("queue_push", lambda: c.queue_push("q", b"item1"))
    step("queue_push_more", lambda: c.queue_push("q", b"item2"))
    step("queue_len", lambda: c.queue_len("q"))
    step("queue_pop", lambda: c.queue_pop("q"))
    step("queue_pop_nonblocking", lambda: c.queue_pop("q", False))
    step("queue_pop_empty", lambda: c.queue_pop("q", False))
    step("queue_len_missing", lambda: c.queue_len("nq"))
    step("check_queue", lambda: (c.queue_push("q2", b"z"), c.check(["q2"]))[1])
    step("list_keys", lambda: c.list_keys())
    step("barrier", lambda: c.barrier("bar", 1))
    step("barrier_again", lambda: c.barrier("bar", 1))
    step("get_barrier_count", lambda: c.get("bar"))
    step("barrier_timeout", lambda: c.barrier("bar2", 2, td(milliseconds=300)))
    step("num_keys_end", lambda: c.num_keys())
    step("get_timeout", lambda: (c.set_timeout(td(milliseconds=300)), c.get("nokey"))[1])
    step("add_to_text_closes", lambda: (c.set("txt", b"abc"), c.add("txt", 1))[1])
    # A client given a world size (as torch.distributed's env:// makes them)
    # ADDs to "init/" before anything else: no job-token check first.
    label("world_size_client")
    dist.TCPStore("127.0.0.1", port, 1, False, td(seconds=5))
    time.sleep(0.3)
    label("DUMP")
    proxy.wait(timeout=30)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--proxy":
        proxy_main(sys.argv[2])
    elif len(sys.argv) == 2:
        driver_main(sys.argv[1])
    else:
        sys.exit(__doc__)
