// JSON that users' files hold (a data set manifest, checkpoint metadata),
// parsed and read field by field with errors in words: where the text stops
// being JSON (line and column), which field is missing or of which wrong type;
// never nlohmann's "[json.exception...]" text or the raw bytes it last read.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace paisoar::util {

class JsonTextError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The one JSON value `text` holds. Refuses a NUL byte (nlohmann's parser stops
// at it and keeps what came before), anything after the value, and a name
// given twice in one object (nlohmann keeps the last). `callback` sees every
// parse event as nlohmann's parser_callback_t does.
nlohmann::json parse_json_text(std::string_view text, const nlohmann::json::parser_callback_t& callback = nullptr);

// An nlohmann exception's message without its "[json.exception.<kind>.<id>] "
// prefix and without the bytes it last read.
std::string json_error_text(const nlohmann::json::exception& e);

// Typed reads of `object[key]`; `name` is how messages call the field (e.g.
// "\"records\" of shard 2"). Each throws JsonTextError naming the field and
// what it should be when it is missing or of another type.
const nlohmann::json& json_member(const nlohmann::json& object, const std::string& key, const std::string& name);
std::string json_string(const nlohmann::json& value, const std::string& name);
// An integer written without a fraction ("8.5", "true" and "8.0" are refused).
int64_t json_integer(const nlohmann::json& value, const std::string& name);
std::vector<std::string> json_strings(const nlohmann::json& value, const std::string& name);

// "a number", "a list", ... for messages.
std::string json_kind(const nlohmann::json& value);

}  // namespace paisoar::util
