"""Small data sets for the CLI tests, written by hand in their formats: IDX
files (gzipped, as Fashion-MNIST ships), an image folder of PNGs, and a PNG
that announces 20000x20000 pixels in a few hundred KB."""
import gzip
import struct
import zlib
from pathlib import Path


def write_idx(path, array_bytes, dims, type_code=0x08):
    header = bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)
    with gzip.open(path, "wb") as f:
        f.write(header + bytes(array_bytes))


def idx_set(root, count=64, height=28, width=28, label=lambda i: i % 10):
    """Fashion-MNIST's four file names under `root`, with `count` images of
    height x width and labels from `label`."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for prefix in ("train", "t10k"):
        pixels = bytes((i * 7 + j) % 256 for i in range(count) for j in range(height * width))
        write_idx(root / f"{prefix}-images-idx3-ubyte.gz", pixels, [count, height, width])
        write_idx(root / f"{prefix}-labels-idx1-ubyte.gz", bytes(label(i) for i in range(count)), [count], 0x08)
    return root


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(width, height, row=None):
    """An 8-bit gray PNG whose rows are all `row` (zeros by default), compressed
    as it streams, so a huge image costs little memory to write."""
    row = row if row is not None else bytes(width)
    compressor = zlib.compressobj(9)
    parts = []
    line = b"\x00" + row  # filter type 0
    for _ in range(height):
        parts.append(compressor.compress(line))
    parts.append(compressor.flush())
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", b"".join(parts)) + _chunk(b"IEND", b"")


def image_folder(root, classes=("a", "b"), per_class=4, side=32):
    root = Path(root)
    for c, name in enumerate(classes):
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            row = bytes((x * 8 + c * 64 + i) % 256 for x in range(side))
            (root / name / f"{i:03d}.png").write_bytes(png_bytes(side, side, row))
    return root
