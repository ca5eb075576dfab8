// One YAML document from user text, checked more strictly than yaml-cpp's
// Load: the text must be printable UTF-8, hold one document (Load silently
// keeps the first of several), and close every quote and bracket it opens
// (Load takes a quote left open at the end of the text as closed there).
// Errors read "<source>:<line>:<column>: ..." with what to fix, no library names.
#pragma once

#include <yaml-cpp/yaml.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace paisoar::util {

class YamlTextError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The document `text` holds (a null node for an empty text or only comments).
// `source` names the text in errors: a file's path, or "--set key".
YAML::Node parse_yaml_document(std::string_view text, const std::string& source);

}  // namespace paisoar::util
