"""Python's side of the safetensors compatibility test: Hugging Face's own
`safetensors` package (the format's reference implementation) reads our files
and writes the file we read, and a plain json + struct reader reports the
header and the CRC-32 of the data as the spec lays them out.

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
from safetensors import safe_open
from safetensors.torch import save_file

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
    # The reference reader must see the same tensors and metadata.
    with safe_open(path, framework="pt") as f:
        if f.metadata() != result["__metadata__"]:
            sys.exit("safetensors reads other metadata: %r" % (f.metadata(),))
        if sorted(f.keys()) != sorted(result["tensors"]):
            sys.exit("safetensors reads other names: %r" % (sorted(f.keys()),))
        for name in f.keys():
            t = f.get_tensor(name)
            info = result["tensors"][name]
            if list(t.shape) != info["shape"] or t.to(torch.float64).flatten().tolist() != info["values"]:
                sys.exit("safetensors reads another %s: %r" % (name, t))
    with open(out, "w") as f:
        json.dump(result, f)


def write(path):
    tensors = {"weight": torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4,
               "half": torch.tensor([1.5, -2.25], dtype=torch.float16),
               "count": torch.tensor(7, dtype=torch.int64)}
    save_file(tensors, path, metadata={"written_by": "python"})


if __name__ == "__main__":
    if sys.argv[1] == "read":
        read(sys.argv[2], sys.argv[3])
    else:
        write(sys.argv[2])
