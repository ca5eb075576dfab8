"""Python's side of the safetensors compatibility test, in plain json + struct +
torch (Debian ships no `safetensors` package); it follows the format's spec.

  safetensors_peer.py read FILE OUT.json   -> every tensor's dtype, shape and
                                              values as float64, the metadata,
                                              and zlib's CRC-32 of the data
  safetensors_peer.py write FILE           -> a file as Python writes it
"""
import json
import struct
import sys
import zlib

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
          "U8": torch.uint8, "BOOL": torch.bool}


def read(path, out):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    result = {"__metadata__": header.pop("__metadata__", {}), "header_bytes": n,
              "crc32": "%08x" % zlib.crc32(data), "tensors": {}}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = DTYPES[info["dtype"]]
        raw = bytearray(data[begin:end])
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        t = t.reshape(info["shape"])
        result["tensors"][name] = {"dtype": info["dtype"], "shape": info["shape"],
                                   "values": t.to(torch.float64).flatten().tolist()}
    with open(out, "w") as f:
        json.dump(result, f)


def write(path):
    tensors = {"weight": torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4,
               "half": torch.tensor([1.5, -2.25], dtype=torch.float16),
               "count": torch.tensor(7, dtype=torch.int64)}
    header, chunks, offset = {"__metadata__": {"written_by": "python"}}, [], 0
    for name in sorted(tensors, key=lambda k: (-tensors[k].element_size(), k)):
        raw = tensors[name].contiguous().numpy().tobytes()
        header[name] = {"dtype": {torch.float32: "F32", torch.float16: "F16", torch.int64: "I64"}[tensors[name].dtype],
                        "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


if __name__ == "__main__":
    if sys.argv[1] == "read":
        read(sys.argv[2], sys.argv[3])
    else:
        write(sys.argv[2])
