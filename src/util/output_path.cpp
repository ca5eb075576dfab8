// require_not_an_input: the same file by path (weakly canonical) or by inode.
#include "src/util/output_path.h"

#include <c10/util/Exception.h>

#include <filesystem>
#include <system_error>

namespace paisoar::util {
namespace fs = std::filesystem;
namespace {

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::equivalent(a, b, ec)) return true;  // hard links and symlinks, when both exist
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

}  // namespace

void require_not_an_input(const std::string& output, const std::vector<std::string>& inputs,
                          const std::string& role) {
  for (const auto& input : inputs) {
    if (same_file(output, input)) {
      C10_THROW_ERROR(ValueError, role + " '" + output + "' is " + (output == input ? "" : "the same file as ") +
                                      "'" + input + "', which this command reads: writing it would destroy " +
                                      "that input. Choose another path");
    }
  }
}

}  // namespace paisoar::util
