// The step file's metadata read for a resume, a check or an inspection:
// texts, integers and numbers refused with the file, the key and what to do
// when they are missing or not what the Trainer wrote.
#pragma once

#include <cstdint>
#include <string>

#include "paisoar/format/tensor_file.h"

namespace paisoar::train::detail {

// Throw c10::Error naming the file and the key.
const std::string& metadata_text(const format::TensorFile& c, const std::string& key);
[[noreturn]] void damaged_metadata(const format::TensorFile& c, const std::string& key, const std::string& why);
int64_t metadata_int(const format::TensorFile& c, const std::string& key, int64_t minimum);
double metadata_double(const format::TensorFile& c, const std::string& key);

// The step directory the checkpoint names under `key`, checked to be one of
// ours ("<kind>-<12 digits>"), or "" when it names none.
std::string named_step_dir(const format::TensorFile& c, const char* key, const std::string& kind);

}  // namespace paisoar::train::detail
