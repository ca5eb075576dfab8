"""Edits of paisoar's safetensors files that keep its integrity check right,
so a lie reaches the reader's layout and meaning checks instead of the CRC:
the header as JSON, the data section as bytes, and the two CRC-32 fields
recomputed as src/format/safetensors.cpp does (the header's over its compact
sorted JSON without the two CRC keys; the data's over the data section)."""
import json
import struct
import zlib

HEADER_CRC, DATA_CRC = "paisoar.header_crc32", "paisoar.crc32"


def split(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def canonical(header):
    """nlohmann::json's dump(): compact, keys sorted, UTF-8 unescaped."""
    return json.dumps(header, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def join(header, body, crc=True):
    """The file for `header` and `body`, with both CRCs made right (or, with
    crc=False, removed: files from other tools carry none)."""
    header = json.loads(json.dumps(header))
    meta = header.setdefault("__metadata__", {})
    meta.pop(HEADER_CRC, None)
    meta.pop(DATA_CRC, None)
    if crc:
        meta[HEADER_CRC] = f"{zlib.crc32(canonical(header).encode()):08x}"
        meta[DATA_CRC] = f"{zlib.crc32(body):08x}"
    text = canonical(header).encode()
    text += b" " * (-(8 + len(text)) % 8)  # the writer aligns the data to 8 bytes
    return struct.pack("<Q", len(text)) + text + body


def with_raw_header(data, text):
    """The file with its header replaced by `text` as it is (no CRC fix-up)."""
    _, body = split(data)
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw + body


def tensors(header):
    return {k: v for k, v in header.items() if k != "__metadata__"}
