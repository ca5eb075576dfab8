// scan_image_folder: torchvision's classes, order and extensions, and the
// errors for a missing root, no class folders and an empty class folder.
#include <gtest/gtest.h>

#include <algorithm>
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

// Directory links are followed, but a link back to the class folder or to the
// root (a loop) lists nothing twice: each directory is entered once.
TEST(FolderScan, ALinkLoopListsEveryImageOnce) {
  TempDir root("folder_scan");
  std::filesystem::create_directories(root / "cat/deeper");
  std::filesystem::create_directories(root / "dog");
  touch(root / "cat/a.png");
  touch(root / "cat/deeper/b.png");
  touch(root / "dog/c.png");
  std::filesystem::create_directory_symlink(root / "cat", root / "cat/deeper/loop");
  std::filesystem::create_directory_symlink(root.path(), root / "cat/to_root");
  std::filesystem::create_directory_symlink(root / "dog", root / "cat/other");  // another class's folder, once
  std::vector<std::string> classes;
  const auto files = scan_image_folder(root.path(), &classes);
  ASSERT_EQ(classes, (std::vector<std::string>{"cat", "dog"}));
  std::vector<std::string> names;
  for (const auto& [path, label] : files) names.push_back(std::filesystem::path(path).filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a.png", "b.png", "c.png", "c.png"})) << "dog/c.png via cat/other, once";
}
