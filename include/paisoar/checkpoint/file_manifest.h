// FileManifest: the files a checkpoint consists of besides its step file (ZeRO
// shards, model-parallel parts), each with its size and CRC-32, kept in the
// step file's metadata ("checkpoint.files"). The step file is written last
// and atomically, so a checkpoint counts only when it exists, and then the
// manifest says exactly which bytes belong to it: a missing, extra, truncated
// or altered file is named, never loaded silently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/format/file_system.h"

namespace paisoar::checkpoint {

inline constexpr const char* kFilesKey = "checkpoint.files";

struct FileEntry {
  std::string path;  // relative to the checkpoint directory, '/'-separated
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

// Every regular file under <root>/<subdir>, recursively, sorted by path, with
// its size and CRC-32 (read in full through `fs`). Throws c10::Error naming a
// file that cannot be read or is not a regular file.
std::vector<FileEntry> describe_files(format::FileSystem& fs, const std::string& root, const std::string& subdir);

// As JSON text {"<path>": {"bytes": N, "crc32": "8 hex digits"}, ...}, and back.
// parse_file_manifest throws c10::Error naming `source` and the key when the
// text is not such an object (or a path leaves the directory).
std::string file_manifest_json(const std::vector<FileEntry>& files);
std::vector<FileEntry> parse_file_manifest(const std::string& text, const std::string& source);

// What differs between the manifest and the files under <root>/<subdir>: each
// listed file missing or of another size (and, with `checksums`, another
// CRC-32), each file present but not listed. Empty: the files are the ones
// written. Without `checksums` it reads no file's bytes.
std::vector<std::string> check_files(format::FileSystem& fs, const std::string& root, const std::string& subdir,
                                     const std::vector<FileEntry>& files, bool checksums);

}  // namespace paisoar::checkpoint
