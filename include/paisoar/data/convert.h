// `paisoar convert`: IDX files or an image folder into record shards, with
// worker threads (each writes whole shards, so the output does not depend on
// their number) and a progress bar.
#pragma once

#include <cstdint>
#include <string>

namespace paisoar::data {

struct ConvertOptions {
  int64_t records_per_shard = 10000;
  int64_t workers = 4;
  bool progress = true;  // a bar on a terminal, a few plain lines otherwise
};

struct ConvertResult {
  int64_t records = 0;
  int64_t shards = 0;
  uint64_t bytes = 0;
};

// IDX images (uint8 [N, H, W]) and labels (uint8 [N]) -> PGM records.
ConvertResult convert_idx(const std::string& images, const std::string& labels,
                          const std::string& out_dir, const ConvertOptions& options = {});

// root/<class>/<image>: the encoded bytes are stored as they are (no re-encode);
// each is checked to decode its header.
ConvertResult convert_image_folder(const std::string& root, const std::string& out_dir,
                                   const ConvertOptions& options = {});

}  // namespace paisoar::data
