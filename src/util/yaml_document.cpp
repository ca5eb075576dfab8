// The text is parsed with a document-end line ("...") appended: inside a
// quoted value yaml-cpp refuses that line, and an open bracket cannot close
// over it, so anything left open at the end fails at a line the user never
// wrote, which is how the error is recognised and worded.
#include "src/util/yaml_document.h"

#include <algorithm>

#include "src/util/text_check.h"

namespace paisoar::util {

YAML::Node parse_yaml_document(std::string_view text, const std::string& source) {
  if (const auto fault = find_non_text(text)) {
    throw YamlTextError(source + ":" + std::to_string(fault->line) + ":" + std::to_string(fault->column) + ": " +
                        fault->what + "; YAML is UTF-8 text: remove it, or save the file as UTF-8 text");
  }
  const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(text) + "\n...\n");
  } catch (const YAML::Exception& e) {
    if (e.mark.line + 1 > lines) {
      throw YamlTextError(source + ": not valid YAML: the text ends inside something it opened (" + e.msg +
                          "): close the quote, [ or { that is left open");
    }
    throw YamlTextError(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                        ": not valid YAML: " + e.msg + "; fix the YAML at that place");
  }
  if (documents.size() > 1) {
    throw YamlTextError(source + ": holds " + std::to_string(documents.size()) +
                        " YAML documents (separated by ---); it must hold one: remove the --- and what should not "
                        "be there");
  }
  return documents.empty() ? YAML::Node() : documents.front();
}

}  // namespace paisoar::util
