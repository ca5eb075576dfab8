// scan_image_folder: torchvision's classes, order and extensions, and the
// errors for a missing root, no class folders and an empty class folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "paisoar/data/data_error.h"
#include "paisoar/data/folder_scan.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using paisoar::data::DataError;
using paisoar::data::scan_image_folder;
using paisoar::testing::expect_error_of;
using paisoar::testing::TempDir;

namespace {

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "x";
}

TEST(FolderScan, ClassesOrderAndExtensionsFollowTorchvision) {
  TempDir root("scan");
  touch(root / "dog/b.png");
  touch(root / "dog/a.JPG");
  touch(root / "dog/notes.txt");     // not an image
  touch(root / "dog/z/c.jpeg");      // subfolders count, after the folder's own files
  touch(root / "cat/01.jpg");
  touch(root / "README.md");         // a file at the top is not a class
  std::vector<std::string> classes;
  const auto files = scan_image_folder(root.path(), &classes);
  EXPECT_EQ(classes, (std::vector<std::string>{"cat", "dog"}));
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {root / "cat/01.jpg", 0}, {root / "dog/a.JPG", 1}, {root / "dog/b.png", 1}, {root / "dog/z/c.jpeg", 1}};
  EXPECT_EQ(files, expected);
  EXPECT_EQ(scan_image_folder(root.path(), nullptr).size(), 4u);
}

TEST(FolderScan, ErrorsNameTheFolder) {
  TempDir root("scan");
  expect_error_of<DataError>([&] { scan_image_folder(root / "nope", nullptr); },
                             {(root / "nope").c_str(), "does not exist"});
  expect_error_of<DataError>([&] { scan_image_folder(root.path(), nullptr); },
                             {root.path().c_str(), "no class folders"});
  touch(root / "cat/1.png");
  touch(root / "dog/readme.txt");
  expect_error_of<DataError>([&] { scan_image_folder(root.path(), nullptr); },
                             {(root / "dog").c_str(), "holds no image"});
}

}  // namespace
