"""Deterministic damage to a valid file's bytes: where to cut it (offsets
spread over the whole file, with every byte of a short header), which bytes
to flip (from a seeded generator), and a few named edits. The same seed gives
the same cases on every machine, so a failure can be replayed by its name."""
import random


def cut_offsets(size, count, header=0):
    """`count` offsets in [0, size) spread evenly (0 and size-1 included),
    plus every offset below `header`: a reader's header is where lengths and
    counts live, so each of its bytes is a cut of its own."""
    spread = {round(i * (size - 1) / max(count - 1, 1)) for i in range(count)} if size else set()
    return sorted(spread | set(range(min(header, size))))


def flips(data, count, seed, start=0, end=None):
    """`count` (offset, new byte) pairs in data[start:end], each the old byte
    with one bit flipped or replaced by a value readers trip on; seeded."""
    rng = random.Random(seed)
    end = len(data) if end is None else end
    out = []
    for _ in range(count):
        at = rng.randrange(start, end)
        kind = rng.randrange(3)
        if kind == 0:
            new = data[at] ^ (1 << rng.randrange(8))
        elif kind == 1:
            new = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF])
        else:
            new = rng.randrange(256)
        if new == data[at]:
            new = data[at] ^ 0x80
        out.append((at, new))
    return out


def with_byte(data, at, value):
    return data[:at] + bytes([value]) + data[at + 1:]


def with_bytes(data, at, values):
    return data[:at] + bytes(values) + data[at + len(values):]


def junk(size, seed):
    """`size` random bytes from a seeded generator."""
    return random.Random(seed).randbytes(size)
