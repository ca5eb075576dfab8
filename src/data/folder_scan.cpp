// scan_image_folder with std::filesystem. The order matches torchvision's
// sorted(os.walk(class_dir)) then sorted(file names): by directory path first,
// then by file name (byte order, as Python compares str).
#include "paisoar/data/folder_scan.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "paisoar/data/data_error.h"

namespace paisoar::data {
namespace fs = std::filesystem;
namespace {

bool is_image_name(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "jpg" || ext == "jpeg" || ext == "png";
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> scan_image_folder(const std::string& root,
                                                               std::vector<std::string>* classes) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw DataError("image folder '" + root + "' " + (fs::exists(root, ec) ? "is not a directory" : "does not exist") +
                    "; give the directory that holds one subfolder per class");
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root, fs::directory_options::follow_directory_symlink)) {
    if (entry.is_directory(ec)) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    throw DataError("image folder '" + root + "' has no class folders; put each class's images in "
                    "a subfolder named after the class (root/<class>/<image>.jpg)");
  }
  std::vector<std::pair<std::string, int64_t>> files;
  for (size_t label = 0; label < names.size(); ++label) {
    const fs::path dir = fs::path(root) / names[label];
    std::vector<std::pair<std::string, std::string>> found;  // (directory, file name)
    const auto options = fs::directory_options::follow_directory_symlink;
    for (auto it = fs::recursive_directory_iterator(dir, options); it != fs::recursive_directory_iterator();
         ++it) {
      const std::string name = it->path().filename().string();
      if (!it->is_directory(ec) && is_image_name(name)) {
        found.emplace_back(it->path().parent_path().string(), name);
      }
    }
    if (found.empty()) {
      throw DataError("class folder '" + dir.string() +
                      "' holds no .jpg, .jpeg or .png file; add its images or remove the folder");
    }
    std::sort(found.begin(), found.end());
    for (const auto& [directory, name] : found) {
      files.emplace_back(directory + "/" + name, static_cast<int64_t>(label));
    }
  }
  if (classes != nullptr) *classes = std::move(names);
  return files;
}

}  // namespace paisoar::data
