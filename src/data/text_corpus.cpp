// TextCorpus: the file's bytes read once; a window and its shifted targets per sample.
#include "paisoar/data/text_corpus.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "paisoar/data/data_error.h"
#include "paisoar/error.h"
#include "src/util/input_file.h"

namespace paisoar::data {

TextCorpus::TextCorpus(const std::string& path, int64_t block_size) : path_(path), block_size_(block_size) {
  TORCH_CHECK_VALUE(block_size >= 1, "TextCorpus: block_size must be at least 1, got ", block_size);
  try {
    bytes_ = util::InputFile(path, "text corpus").read_all_bytes();
  } catch (const std::exception& e) {
    throw DataError(error_text(e));
  }
  const auto n = static_cast<int64_t>(bytes_.size());
  windows_ = n > 0 ? (n - 1) / block_size : 0;
  if (windows_ < 1) {
    throw DataError(path + ": holds " + std::to_string(n) + " bytes, fewer than one window of " +
                    std::to_string(block_size) + " tokens and its next byte; give a longer text or a smaller "
                    "model.block_size");
  }
}

Example TextCorpus::get(int64_t index, SampleRng&) const {
  TORCH_CHECK_INDEX(index >= 0 && index < windows_, "TextCorpus: sample ", index, " of ", windows_);
  const uint8_t* start = bytes_.data() + index * block_size_;
  // The window and the bytes after it, as int64 token ids.
  torch::Tensor tokens =
      torch::from_blob(const_cast<uint8_t*>(start), {block_size_ + 1}, torch::kUInt8).to(torch::kLong);
  Example ex;
  ex.data = tokens.narrow(0, 0, block_size_);
  ex.target = tokens.narrow(0, 1, block_size_);
  return ex;
}

std::string TextCorpus::describe(int64_t index) const {
  return path_ + " bytes " + std::to_string(index * block_size_) + "-" + std::to_string((index + 1) * block_size_);
}

}  // namespace paisoar::data
