// Outputs that must not destroy inputs: a command that reads some files and
// writes others refuses an output path naming one of the files it reads (after
// resolving ".", "..", symlinks and hard links), before it writes anything.
#pragma once

#include <string>
#include <vector>

namespace paisoar::util {

// Throws c10::ValueError naming `role` (e.g. "--html"), the path and the input
// it would overwrite, when `output` is the same file as one of `inputs`.
// Paths that do not exist yet are compared as paths.
void require_not_an_input(const std::string& output, const std::vector<std::string>& inputs,
                          const std::string& role);

}  // namespace paisoar::util
