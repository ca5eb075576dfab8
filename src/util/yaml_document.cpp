// The text is parsed with a document-end line ("...") appended: inside a
// quoted value yaml-cpp refuses that line, and an open bracket cannot close
// over it, so anything left open at the end fails at a line the user never
// wrote, which is how the error is recognised and worded.
#include "src/util/yaml_document.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <sstream>

#include "src/util/text_check.h"

namespace paisoar::util {
namespace {

// Parses a document and keeps nothing: only whether there is one is wanted.
struct IgnoreEvents : YAML::EventHandler {
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

YAML::Node parse_yaml_document(std::string_view text, const std::string& source) {
  if (const auto fault = find_non_text(text)) {
    throw YamlTextError(source + ":" + std::to_string(fault->line) + ":" + std::to_string(fault->column) + ": " +
                        fault->what + "; YAML is UTF-8 text: remove it, or save the file as UTF-8 text");
  }
  const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  const std::string sentinelled = std::string(text) + "\n...\n";
  YAML::Node document;
  bool more = false;
  try {
    document = YAML::Load(sentinelled);
    // A second document, looked for with at most two calls: YAML::LoadAll
    // loops forever on some malformed texts (found by fuzz_config), asking
    // for documents that never end.
    std::istringstream in(sentinelled);
    YAML::Parser parser(in);
    IgnoreEvents ignore;
    parser.HandleNextDocument(ignore);
    more = parser.HandleNextDocument(ignore);
  } catch (const YAML::Exception& e) {
    if (e.mark.line + 1 > lines) {
      throw YamlTextError(source + ": not valid YAML: the text ends inside something it opened (" + e.msg +
                          "): close the quote, [ or { that is left open");
    }
    throw YamlTextError(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                        ": not valid YAML: " + e.msg + "; fix the YAML at that place");
  }
  if (more) {
    throw YamlTextError(source + ": holds more than one YAML document (separated by ---); it must hold one: remove "
                        "the --- and what should not be there");
  }
  return document;
}

}  // namespace paisoar::util
