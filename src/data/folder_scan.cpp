// scan_image_folder with std::filesystem. The order matches torchvision's
// sorted(os.walk(class_dir)) then sorted(file names): by directory path first,
// then by file name (byte order, as Python compares str). Hidden entries
// (".name") are skipped, as editors and file managers leave them about.
#include "paisoar/data/folder_scan.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <system_error>

#include <sys/stat.h>

#include "paisoar/data/data_error.h"

namespace paisoar::data {
namespace fs = std::filesystem;
namespace {

bool hidden(const fs::path& p) { return p.filename().string().rfind('.', 0) == 0; }

bool is_image_name(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "jpg" || ext == "jpeg" || ext == "png" || ext == "pgm" || ext == "ppm";
}

DataError cannot_list(const fs::path& dir, const std::error_code& ec) {
  return DataError("cannot list '" + dir.string() + "': " + ec.message() +
                   "; check that it exists and is readable");
}

// An image name on a FIFO, socket or device would block or never end when
// read; a dangling link would fail at some later epoch. Both stop the scan.
void require_regular(const fs::directory_entry& entry) {
  std::error_code ec;
  const fs::file_status status = entry.status(ec);  // follows symlinks
  if (fs::is_regular_file(status)) return;
  std::string kind = "not a regular file";
  if (status.type() == fs::file_type::not_found) kind = "a dangling symbolic link";
  if (status.type() == fs::file_type::fifo) kind = "a FIFO (named pipe)";
  if (status.type() == fs::file_type::socket) kind = "a socket";
  if (status.type() == fs::file_type::character || status.type() == fs::file_type::block) kind = "a device";
  throw DataError("'" + entry.path().string() + "' is " + kind +
                  ", not an image file; remove it or move it out of the image folder");
}

// (directory, file name) of every image under the class folder `dir` of the
// image folder `root`, in torchvision's order.
std::vector<std::pair<std::string, std::string>> images_under(const fs::path& dir, const fs::path& root) {
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code ec;
  // Directory symlinks are followed, as torchvision's os.walk(followlinks=True)
  // does, but each directory is entered once: a link back to an ancestor would
  // otherwise list the same images again at every level of the loop.
  std::set<std::pair<dev_t, ino_t>> entered;
  const auto first_visit = [&entered](const fs::path& d) {
    struct stat st {};
    return ::stat(d.c_str(), &st) != 0 || entered.emplace(st.st_dev, st.st_ino).second;
  };
  first_visit(root);  // a link back to the root would reach the other classes
  first_visit(dir);
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (hidden(p)) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec) && !first_visit(p)) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory(ec) && is_image_name(p.filename().string())) {
      require_regular(*it);
      found.emplace_back(p.parent_path().string(), p.filename().string());
    }
  }
  if (ec) throw cannot_list(dir, ec);
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> scan_image_folder(const std::string& root,
                                                               std::vector<std::string>* classes) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw DataError("image folder '" + root + "' " +
                    (fs::exists(root, ec) ? "is not a directory" : "does not exist") +
                    "; give the directory that holds one subfolder per class");
  }
  std::vector<std::string> names;
  fs::directory_iterator it(root, fs::directory_options::follow_directory_symlink, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (!hidden(it->path()) && it->is_directory(ec)) names.push_back(it->path().filename().string());
  }
  if (ec) throw cannot_list(root, ec);
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    throw DataError("image folder '" + root + "' has no class folders; put each class's images in "
                    "a subfolder named after the class (root/<class>/<image>.jpg)");
  }
  std::vector<std::pair<std::string, int64_t>> files;
  for (size_t label = 0; label < names.size(); ++label) {
    const fs::path dir = fs::path(root) / names[label];
    const auto found = images_under(dir, root);
    if (found.empty()) {
      throw DataError("class folder '" + dir.string() +
                      "' holds no image (.jpg, .jpeg, .png, .pgm, .ppm); put at least one image in "
                      "it or remove the folder");
    }
    for (const auto& [directory, name] : found) {
      files.emplace_back(directory + "/" + name, static_cast<int64_t>(label));
    }
  }
  if (classes != nullptr) *classes = std::move(names);
  return files;
}

}  // namespace paisoar::data
