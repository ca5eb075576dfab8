// ConfigSchema over yaml-cpp. Sections are walked recursively; a key is valid
// if it is a bound path or a prefix of one (a section).
#include "paisoar/train/config_schema.h"
#include "paisoar/error.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "src/util/input_file.h"
#include "src/util/text_check.h"
#include "src/util/yaml_document.h"

namespace paisoar::train {
namespace {

// A config is a page of keys; a larger file is not one.
constexpr uint64_t kMaxConfigBytes = 1 << 20;

// yaml-cpp converts "1.5" to int64 by failing, "1" to double by succeeding;
// each type gets its own strict reader.
template <typename T>
T scalar_as(const YAML::Node& node, const char* type) {
  if (!node.IsScalar()) throw ConfigError(std::string("expected ") + type + ", got a " +
                                          (node.IsSequence() ? "list" : node.IsMap() ? "section" : "null"));
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw ConfigError(std::string("expected ") + type + ", got " + util::shown(node.Scalar()));
  }
}

std::string format_double(double v) {
  std::ostringstream s;
  s.precision(std::numeric_limits<double>::max_digits10);
  s << v;
  std::string out = s.str();
  if (out.find_first_of(".eE") == std::string::npos && out.find("inf") == std::string::npos &&
      out.find("nan") == std::string::npos) {
    out += ".0";
  }
  return out;
}

std::string yaml_quoted(const std::string& s) {
  YAML::Emitter e;
  e << s;
  return e.c_str();
}

// A number as a user wrote it: integers without a fraction.
std::string format_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream s;
  s << v;
  return s.str();
}

// Throws ConfigError (without the key) unless `v` is in `range`.
void require_in(const Range& range, double v) {
  if (!std::isfinite(v)) throw ConfigError("must be a finite number (" + range.describe() + "), got " + format_number(v));
  if (!range.contains(v)) throw ConfigError("must be " + range.describe() + ", got " + format_number(v));
}

}  // namespace

bool Range::contains(double v) const {
  if (!std::isfinite(v)) return false;
  const bool above = min_open ? v > min : v >= min;
  const bool below = max_open ? v < max : v <= max;
  return above && below;
}

std::string Range::describe() const {
  if (!words.empty()) return words;
  const bool has_min = min > -std::numeric_limits<double>::max();
  const bool has_max = max < std::numeric_limits<double>::max();
  if (has_min && has_max) {
    if (!min_open && !max_open) return "between " + format_number(min) + " and " + format_number(max);
    return std::string("in ") + (min_open ? "(" : "[") + format_number(min) + ", " + format_number(max) +
           (max_open ? ")" : "]");
  }
  if (has_min) {
    if (min_open) return min == 0 ? "positive" : "more than " + format_number(min);
    return "at least " + format_number(min);
  }
  if (has_max) return (max_open ? "less than " : "at most ") + format_number(max);
  return "a finite number";
}

Range at_least(double min, double max, std::string words) {
  Range r;
  r.min = min;
  r.max = max;
  r.words = std::move(words);
  return r;
}

Range positive(double max) {
  Range r;
  r.min = 0;
  r.min_open = true;
  r.max = max;
  return r;
}

Range any_number() { return Range{}; }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

void ConfigSchema::add(Field field) {
  if (find(field.path)) C10_THROW_ERROR(Error, "ConfigSchema: " + field.path + " is bound twice");
  fields_.push_back(std::move(field));
}

void ConfigSchema::bind(const std::string& path, int64_t* f, std::string help, Range range) {
  add({path, "integer", std::move(help), {},
       [f, range](const YAML::Node& n) {
         const auto v = scalar_as<int64_t>(n, "an integer");
         require_in(range, static_cast<double>(v));
         *f = v;
       },
       [f] { return std::to_string(*f); }, [f, range] { require_in(range, static_cast<double>(*f)); }});
}

void ConfigSchema::bind(const std::string& path, double* f, std::string help, Range range) {
  add({path, "number", std::move(help), {},
       [f, range](const YAML::Node& n) {
         const auto v = scalar_as<double>(n, "a number");
         require_in(range, v);
         *f = v;
       },
       [f] { return format_double(*f); }, [f, range] { require_in(range, *f); }});
}

void ConfigSchema::bind(const std::string& path, bool* f, std::string help) {
  add({path, "boolean", std::move(help), {},
       [f](const YAML::Node& n) { *f = scalar_as<bool>(n, "true or false"); },
       [f] { return std::string(*f ? "true" : "false"); }, {}});
}

// The index of `v` in `choices`; a ConfigError listing them when it is none.
static size_t choice_index(const std::string& v, const std::vector<std::string>& choices) {
  const auto it = std::find(choices.begin(), choices.end(), v);
  if (it == choices.end()) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    throw ConfigError(util::shown(v) + " is not one of: " + list);
  }
  return static_cast<size_t>(it - choices.begin());
}

void ConfigSchema::bind(const std::string& path, std::string* f, std::string help,
                        std::vector<std::string> choices) {
  Field field;
  field.path = path;
  field.type = "string";
  field.help = std::move(help);
  field.choices = choices;
  field.assign = [f, choices](const YAML::Node& n) {
    auto v = scalar_as<std::string>(n, "a string");
    if (!choices.empty()) choice_index(v, choices);
    *f = v;
  };
  field.show = [f] { return yaml_quoted(*f); };
  field.check = [f, choices] {
    if (!choices.empty()) choice_index(*f, choices);
  };
  add(std::move(field));
}

void ConfigSchema::bind_choice(const std::string& path, std::string help, std::vector<std::string> choices,
                               std::function<void(size_t)> set, std::function<size_t()> get) {
  Field field;
  field.path = path;
  field.type = "string";
  field.help = std::move(help);
  field.choices = choices;
  field.assign = [set, choices](const YAML::Node& n) { set(choice_index(scalar_as<std::string>(n, "a string"), choices)); };
  field.show = [get, choices] { return yaml_quoted(choices.at(get())); };
  add(std::move(field));
}

void ConfigSchema::bind(const std::string& path, std::vector<int64_t>* f, std::string help, Range range) {
  bind_list<int64_t>(path, f, std::move(help), "integer", [](const int64_t& v) { return std::to_string(v); });
  Field& field = fields_.back();
  const auto read = field.assign;
  auto check = [f, range] {
    for (int64_t v : *f) require_in(range, static_cast<double>(v));
  };
  field.assign = [f, read, check](const YAML::Node& n) {
    const std::vector<int64_t> before = *f;
    read(n);
    try {
      check();
    } catch (const ConfigError&) {
      *f = before;
      throw;
    }
  };
  field.check = check;
}

void ConfigSchema::bind(const std::string& path, std::vector<std::string>* f, std::string help) {
  bind_list<std::string>(path, f, std::move(help), "string", yaml_quoted);
}

template <typename T>
void ConfigSchema::bind_list(const std::string& path, std::vector<T>* f, std::string help, const std::string& item,
                             std::function<std::string(const T&)> show_item) {
  add({path, "list of " + item + "s", std::move(help), {},
       [f, item](const YAML::Node& n) {
         if (!n.IsSequence()) throw ConfigError("expected a list of " + item + "s, written [x, y]");
         const std::string what = (item[0] == 'i' ? "an " : "a ") + item + " in the list";
         std::vector<T> v;
         for (const auto& element : n) v.push_back(scalar_as<T>(element, what.c_str()));
         *f = v;
       },
       [f, show_item] {
         std::string s = "[";
         for (size_t i = 0; i < f->size(); ++i) s += (i ? ", " : "") + show_item((*f)[i]);
         return s + "]";
       },
       {}});
}

const ConfigSchema::Field* ConfigSchema::find(const std::string& path) const {
  for (const auto& f : fields_) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::vector<std::string> ConfigSchema::keys() const {
  std::vector<std::string> out;
  for (const auto& f : fields_) out.push_back(f.path);
  return out;
}

std::string ConfigSchema::closest(const std::string& path, size_t* distance) const {
  // Candidates: every bound path and every section prefix.
  std::vector<std::string> candidates;
  for (const auto& f : fields_) {
    candidates.push_back(f.path);
    for (size_t dot = f.path.find('.'); dot != std::string::npos; dot = f.path.find('.', dot + 1)) {
      candidates.push_back(f.path.substr(0, dot));
    }
  }
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const auto& c : candidates) {
    // A key typed only in part ("checkpoint.every") means the longer one.
    const size_t d = c.compare(0, path.size(), path) == 0 ? 1 : edit_distance(path, c);
    if (d < best_distance) best = c, best_distance = d;
  }
  if (distance) *distance = best_distance;
  return best;
}

std::string ConfigSchema::unknown_key(const std::string& path) const {
  size_t distance = 0;
  const std::string best = closest(path, &distance);
  // A suggestion far from what was typed (a garbled line) helps nobody.
  const bool near = distance <= std::max<size_t>(2, path.size() / 3);
  return "unknown key " + util::shown(path) + (near ? "; did you mean '" + best + "'?" : "");
}

std::vector<std::string> ConfigSchema::key_names(const YAML::Node& map, const std::string& prefix,
                                                 const std::string& source) {
  std::map<std::string, int> first_line;
  std::vector<std::string> names;
  for (const auto& item : map) {
    const int line = item.first.Mark().line + 1;
    const std::string where = source + ":" + std::to_string(line) + ": ";
    if (!item.first.IsScalar()) {
      throw ConfigError(where + "a key must be a name, got a " +
                        (item.first.IsSequence() ? "list" : item.first.IsMap() ? "section" : "null") +
                        (prefix.empty() ? "" : " in section '" + prefix + "'") +
                        "; write key: value (`paisoar train --print-config` lists every key)");
    }
    const std::string& key = item.first.Scalar();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    const auto [seen, fresh] = first_line.emplace(key, line);
    if (!fresh) {
      throw ConfigError(where + util::shown(path) + " is given twice (first on line " + std::to_string(seen->second) +
                        "); YAML would keep only one of them: keep one");
    }
    names.push_back(key);
  }
  return names;
}

void ConfigSchema::apply(const YAML::Node& node, const std::string& prefix, const std::string& source) {
  const std::vector<std::string> names = key_names(node, prefix, source);
  size_t index = 0;
  for (const auto& item : node) {
    const std::string& key = names[index++];
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (const Field* f = find(path)) {
      try {
        f->assign(item.second);
      } catch (const ConfigError& e) {
        throw ConfigError(source + ": " + path + ": " + error_text(e));
      }
      continue;
    }
    const bool is_section = std::any_of(fields_.begin(), fields_.end(), [&](const Field& f) {
      return f.path.compare(0, path.size() + 1, path + ".") == 0;
    });
    if (!is_section) {
      throw ConfigError(source + ": " + unknown_key(path) + " (`paisoar train --print-config` lists every key)");
    }
    if (const Field* automatic = find(path + ".auto");
        automatic && item.second.IsScalar() && item.second.Scalar() == "auto") {
      automatic->assign(YAML::Node(true));  // `parallel: auto`: the section's auto key
      continue;
    }
    if (!item.second.IsMap()) {
      throw ConfigError(source + ": " + path + " is a section; give it keys such as '" +
                        closest(path + ".") + "'");
    }
    apply(item.second, path, source);
  }
}

void ConfigSchema::load_yaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = util::parse_yaml_document(text, source);
  } catch (const util::YamlTextError& e) {
    throw ConfigError(e.what());
  }
  if (root.IsNull()) return;
  if (!root.IsMap()) throw ConfigError(source + ": expected a mapping of sections (model:, data:, ...)");
  apply(root, "", source);
}

void ConfigSchema::load_file(const std::string& path) {
  std::string text;
  try {
    text = util::InputFile(path, "config file").read_all(kMaxConfigBytes);
  } catch (const c10::Error& e) {
    throw ConfigError(error_text(e));
  }
  load_yaml(text, path);
}

void ConfigSchema::set(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set " + util::shown(assignment) + ": expected key=value, e.g. optimizer.lr=0.1");
  }
  std::string path = assignment.substr(0, eq);
  if (!find(path) && find(path + ".auto") && assignment.substr(eq + 1) == "auto") {
    find(path + ".auto")->assign(YAML::Node(true));  // --set parallel=auto
    return;
  }
  const Field* f = find(path);
  if (!f) {
    throw ConfigError("--set: " + unknown_key(path) + " (`paisoar train --print-config` lists every key)");
  }
  YAML::Node value;
  try {
    value = util::parse_yaml_document(assignment.substr(eq + 1), "--set " + path);
  } catch (const util::YamlTextError& e) {
    throw ConfigError(e.what());
  }
  try {
    f->assign(value);
  } catch (const ConfigError& e) {
    throw ConfigError("--set " + path + ": " + error_text(e));
  }
}

void ConfigSchema::check_ranges() const {
  for (const auto& f : fields_) {
    if (!f.check) continue;
    try {
      f.check();
    } catch (const ConfigError& e) {
      throw ConfigError(f.path + ": " + error_text(e));
    }
  }
}

std::string ConfigSchema::dump() const {
  std::ostringstream out;
  std::vector<std::string> open;  // the sections of the previous key
  for (const auto& f : fields_) {
    std::vector<std::string> parts;
    std::stringstream ss(f.path);
    for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
    size_t common = 0;
    while (common < open.size() && common + 1 < parts.size() && open[common] == parts[common]) ++common;
    for (size_t i = common; i + 1 < parts.size(); ++i) {
      out << std::string(2 * i, ' ') << parts[i] << ":\n";
    }
    open.assign(parts.begin(), parts.end() - 1);
    out << std::string(2 * (parts.size() - 1), ' ') << parts.back() << ": " << f.show();
    if (!f.help.empty()) out << "  # " << f.help;
    out << "\n";
  }
  return out.str();
}

}  // namespace paisoar::train
