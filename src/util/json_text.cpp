// nlohmann's parse_error carries the byte where parsing failed; lines and
// columns are counted from the text so that they match an editor's.
#include "src/util/json_text.h"

#include <algorithm>
#include <set>
#include <vector>

#include "src/util/text_check.h"

namespace paisoar::util {

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string text = e.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const size_t close = text.find("] ");
    if (close != std::string::npos) text = text.substr(close + 2);
  }
  const size_t last_read = text.find("; last read: ");
  if (last_read != std::string::npos) text = text.substr(0, last_read);
  // What is left may still quote the text ("invalid string: ill-formed UTF-8 byte").
  const std::string printed = shown(text);
  return printed.substr(1, printed.size() - 2);
}

nlohmann::json parse_json_text(std::string_view text, const nlohmann::json::parser_callback_t& callback) {
  const auto place = [&](size_t at) {
    at = std::min(at, text.size());
    const size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1;
    const size_t column = at - (line_start == std::string_view::npos || at == 0 ? 0 : line_start + 1) + 1;
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  };
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw JsonTextError("not valid JSON: a NUL byte at " + place(nul));
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) throw JsonTextError("empty, not JSON");
  // A name twice in one object: nlohmann keeps the last silently.
  std::vector<std::set<std::string>> names;  // those seen in each open object, by depth
  std::string twice;
  const nlohmann::json::parser_callback_t check = [&](int depth, nlohmann::json::parse_event_t event,
                                                      nlohmann::json& parsed) {
    const auto at = static_cast<size_t>(depth);
    if (event == nlohmann::json::parse_event_t::object_start) {
      if (names.size() <= at + 1) names.resize(at + 2);
      names[at + 1].clear();
    } else if (event == nlohmann::json::parse_event_t::key && twice.empty()) {
      if (names.size() <= at) names.resize(at + 1);
      const auto& name = parsed.get_ref<const std::string&>();
      if (!names[at].insert(name).second) twice = name;
    }
    return callback ? callback(depth, event, parsed) : true;
  };
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text.begin(), text.end(), check);
  } catch (const nlohmann::json::parse_error& e) {
    std::string why = json_error_text(e);
    // "parse error at line 1, column 5: syntax error while parsing value - invalid literal"
    const size_t syntax = why.find("syntax error while parsing ");
    if (syntax != std::string::npos) why = why.substr(syntax + 27);
    throw JsonTextError("not valid JSON at " + place(e.byte == 0 ? 0 : e.byte - 1) + " (" + why + ")");
  } catch (const nlohmann::json::out_of_range& e) {  // a number past double's range, found while parsing
    throw JsonTextError("not valid JSON (" + json_error_text(e) + ")");
  }
  if (!twice.empty()) throw JsonTextError("the name " + shown(twice) + " appears twice in one object (JSON keeps one)");
  return value;
}

std::string json_kind(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::array: return "a list";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::number_float: return "a number with a fraction";
    default: return "a number";
  }
}

const nlohmann::json& json_member(const nlohmann::json& object, const std::string& key, const std::string& name) {
  if (!object.is_object()) throw JsonTextError(name + "'s parent must be an object, got " + json_kind(object));
  const auto it = object.find(key);
  if (it == object.end()) throw JsonTextError(name + " is missing");
  return *it;
}

std::string json_string(const nlohmann::json& value, const std::string& name) {
  if (!value.is_string()) throw JsonTextError(name + " must be a string, got " + json_kind(value));
  return value.get<std::string>();
}

int64_t json_integer(const nlohmann::json& value, const std::string& name) {
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    throw JsonTextError(name + " must be an integer below 2^63, got " + value.dump());
  }
  if (!value.is_number_integer()) throw JsonTextError(name + " must be an integer, got " + json_kind(value));
  return value.get<int64_t>();
}

std::vector<std::string> json_strings(const nlohmann::json& value, const std::string& name) {
  if (!value.is_array()) throw JsonTextError(name + " must be a list of strings, got " + json_kind(value));
  std::vector<std::string> out;
  out.reserve(value.size());
  for (const auto& item : value) {
    if (!item.is_string()) throw JsonTextError(name + " must be a list of strings, one item is " + json_kind(item));
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace paisoar::util
