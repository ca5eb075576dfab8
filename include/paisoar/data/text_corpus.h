// TextCorpus: any local text file as a byte-level language-modelling data set
// (every byte is a token; vocabulary 256), the data the Trainer's gpt reads
// (data.format: text). Sample i is the window of block_size bytes starting at
// byte i * block_size, as int64 token ids, with the byte after each position
// as its target (Example::target): windows do not overlap, so an epoch reads
// the file once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/data/dataset.h"

namespace paisoar::data {

class TextCorpus : public Dataset {
 public:
  // Reads the whole file. Throws DataError naming the path when it cannot be
  // read, is not a regular file, or holds fewer than block_size + 1 bytes (not
  // one window); c10::ValueError for block_size < 1.
  TextCorpus(const std::string& path, int64_t block_size);

  int64_t size() const override { return windows_; }
  Example get(int64_t index, SampleRng& rng) const override;
  std::string describe(int64_t index) const override;
  int64_t block_size() const { return block_size_; }

 private:
  std::string path_;
  int64_t block_size_;
  int64_t windows_ = 0;
  std::vector<uint8_t> bytes_;
};

}  // namespace paisoar::data
