// The scan ImageFolder and `paisoar convert folder` share: which files of an
// image folder (root/<class>/.../<image>) belong to the data set, in what order,
// with which label. It follows torchvision.datasets.ImageFolder: the classes
// are the sorted names of root's subfolders; each class folder is walked
// (subfolders included, symlinks followed) in sorted order, keeping files whose
// extension is .jpg, .jpeg or .png in any case. Plain C++ (no LibTorch).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace paisoar::data {

// (path, label) for every image, class by class; `classes`, when not null,
// receives the class names (label i is classes[i]). Throws DataError naming
// the folder if root is missing or not a directory, has no class folders, or
// a class folder holds no image.
std::vector<std::pair<std::string, int64_t>> scan_image_folder(const std::string& root,
                                                               std::vector<std::string>* classes);

}  // namespace paisoar::data
