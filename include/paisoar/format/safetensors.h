// Reading and writing the safetensors format, byte-compatible with Python's
// `safetensors` library: an 8-byte little-endian header length N, N bytes of
// JSON (padded with spaces to a multiple of 8) describing each tensor's dtype,
// shape and byte range, then the raw little-endian tensor bytes. paisoar adds
// CRC-32s of the data and of the header to "__metadata__" and checks them on
// load; files without them (e.g. written by Python) load unchecked.
#pragma once

#include "paisoar/format/file_system.h"
#include "paisoar/format/tensor_file.h"

#include <string>

namespace paisoar::format {

// Metadata keys paisoar reserves (callers' keys must not use them).
inline constexpr const char* kDataCrcKey = "paisoar.crc32";           // CRC-32 of the data section, 8 hex digits
inline constexpr const char* kHeaderCrcKey = "paisoar.header_crc32";  // CRC-32 of the header without both keys

// Writes `tensors` and `metadata` to `path` atomically: readers see the old
// file or the complete new one, never a partial write (temporary file in the
// same directory, fsync, rename, fsync of the directory). Tensors may live on
// any device and be non-contiguous; they are written as contiguous CPU data,
// largest element size first (then by name), so every tensor is aligned.
// Supported dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
// Throws c10::Error naming the tensor (unsupported dtype), the metadata key
// (reserved) or the path (cannot write).
void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata = {});

// Reads a safetensors file into CPU tensors that own their memory; `source`
// of the result is `path`. Throws c10::Error naming the file if it cannot be
// read, is truncated, has a malformed header, or fails its CRC check.
TensorFile load_safetensors(const std::string& path);

// The same through `fs` (the two above use local_file_system()).
void save_safetensors(FileSystem& fs, const std::string& path, const TensorMap& tensors,
                      const Metadata& metadata = {});
TensorFile load_safetensors(FileSystem& fs, const std::string& path);

}  // namespace paisoar::format
