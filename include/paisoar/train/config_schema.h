// ConfigSchema: binds dotted YAML keys ("optimizer.lr") to the fields of an
// options struct, then reads a YAML document, `--set key=value` overrides, and
// prints the effective config. Errors name the key: an unknown key with the
// closest valid one, a wrong type with the type expected, a value outside its
// choices with the choices.
#pragma once

#include <c10/util/Exception.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace YAML {
class Node;
}

namespace paisoar::train {

// Thrown for every config problem; what() says which key and what to do.
class ConfigError : public c10::ValueError {
 public:
  explicit ConfigError(std::string message) : c10::ValueError(std::move(message)) {}
};

// The values a number may take, inclusive unless open; every number must
// also be finite. `words` is what the user is told ("0 (off) or more"); empty:
// derived from the bounds.
struct Range {
  double min = -std::numeric_limits<double>::max();
  double max = std::numeric_limits<double>::max();
  bool min_open = false;
  bool max_open = false;
  std::string words;

  bool contains(double v) const;
  std::string describe() const;  // "at least 1", "between 1 and 64", or `words`
};
// The common ranges, each with a cap where a larger value cannot be meant.
Range at_least(double min, double max = std::numeric_limits<double>::max(), std::string words = "");
Range positive(double max = std::numeric_limits<double>::max());  // > 0
Range any_number();

class ConfigSchema {
 public:
  // Binds `path` to `*field`, which must outlive the schema. `help` is printed
  // next to the key by dump(). `choices`, when given, are the allowed strings;
  // `range`, the values a number (or each number of a list) may take.
  void bind(const std::string& path, int64_t* field, std::string help, Range range = any_number());
  void bind(const std::string& path, double* field, std::string help, Range range = any_number());
  void bind(const std::string& path, bool* field, std::string help);
  void bind(const std::string& path, std::string* field, std::string help,
            std::vector<std::string> choices = {});
  // An enum read and written as one of `names`' strings (errors list them,
  // as for a string with choices). Every value the field can hold is named.
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void bind(const std::string& path, E* field, std::string help, std::vector<std::pair<std::string, E>> names) {
    std::vector<std::string> choices;
    for (const auto& n : names) choices.push_back(n.first);
    bind_choice(
        path, std::move(help), std::move(choices), [field, names](size_t i) { *field = names[i].second; },
        [field, names] {
          size_t i = 0;
          while (i + 1 < names.size() && names[i].second != *field) ++i;
          return i;
        });
  }
  // A list of integers, e.g. "[1, 2, 4]".
  void bind(const std::string& path, std::vector<int64_t>* field, std::string help, Range range = any_number());
  // A list of strings, e.g. "[fc2, \"*.norm\"]".
  void bind(const std::string& path, std::vector<std::string>* field, std::string help);

  // Applies a YAML document (a mapping of sections). `source` names it in errors.
  void load_yaml(const std::string& text, const std::string& source);
  void load_file(const std::string& path);
  // "key=value", the value parsed as YAML ("0.1", "true", "[1,2]", "name").
  void set(const std::string& assignment);
  // Throws ConfigError naming the first bound field whose value is outside its
  // range: for a config built in code, which load_yaml/set never saw.
  void check_ranges() const;

  // The effective configuration as YAML, every key, with its help as a comment.
  std::string dump() const;
  std::vector<std::string> keys() const;

 private:
  struct Field {
    std::string path;
    std::string type;  // "integer", "number", "boolean", "string", "list of integers", "list of strings"
    std::string help;
    std::vector<std::string> choices;
    std::function<void(const YAML::Node&)> assign;  // throws ConfigError (message without the key)
    std::function<std::string()> show;
    std::function<void()> check;  // throws ConfigError when the value is outside its range
  };
  void add(Field field);
  // The field is choices[get()]; set(i) stores choices[i].
  void bind_choice(const std::string& path, std::string help, std::vector<std::string> choices,
                   std::function<void(size_t)> set, std::function<size_t()> get);
  template <typename T>
  void bind_list(const std::string& path, std::vector<T>* field, std::string help, const std::string& item,
                 std::function<std::string(const T&)> show_item);
  void apply(const YAML::Node& node, const std::string& prefix, const std::string& source);
  // The mapping's keys as names; throws ConfigError for a key that is not a
  // name or appears twice (YAML would keep only one of them, silently).
  static std::vector<std::string> key_names(const YAML::Node& map, const std::string& prefix,
                                            const std::string& source);
  const Field* find(const std::string& path) const;
  // The bound path or section nearest to `path`, and how far it is.
  std::string closest(const std::string& path, size_t* distance = nullptr) const;
  // "unknown key 'x'", with the nearest key when it is near enough to help.
  std::string unknown_key(const std::string& path) const;

  std::vector<Field> fields_;  // in binding order, which dump() keeps
};

// The edit distance between two strings (insertions, deletions, substitutions).
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace paisoar::train
