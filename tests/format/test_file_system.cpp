// The FileSystem contract, run against both implementations (the local disk
// in a temporary directory, and memory): an atomic write is invisible until
// its commit and leaves nothing when dropped; reads, status, listing,
// directories, removal and the exclusive lock behave alike; errors name the
// path. Then the safetensors codec through each, and the local one's refusal
// of a FIFO (never waited on).
#include "paisoar/format/file_system.h"
#include "paisoar/format/safetensors.h"

#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace paisoar::format {
namespace {

using testing::expect_error;
using testing::expect_error_of;

struct Backend {
  const char* name;
  bool local;
};

class FileSystemContract : public ::testing::TestWithParam<Backend> {
 protected:
  FileSystemContract()
      : fs_(GetParam().local ? local_file_system() : memory_file_system()),
        root_(GetParam().local ? dir_.path() : "/mem/root") {
    fs_->create_directories(root_);
  }

  void write(const std::string& path, const std::string& bytes) {
    auto file = fs_->create_atomically(path);
    file->append(bytes);
    file->commit();
  }

  testing::TempDir dir_{"file_system"};
  std::shared_ptr<FileSystem> fs_;
  std::string root_;
};

TEST_P(FileSystemContract, AnAtomicWriteIsInvisibleUntilItsCommit) {
  const std::string path = root_ + "/a.bin";
  write(path, "old");
  auto file = fs_->create_atomically(path);
  file->append("new bytes");
  EXPECT_EQ(read_file(*fs_, path, "test file"), "old");
  const auto names = fs_->list(root_);
  ASSERT_EQ(names.size(), 2u);  // a.bin and its temporary
  EXPECT_EQ(names[1].rfind("a.bin.tmp.", 0), 0u) << names[1];
  file->commit();
  EXPECT_EQ(read_file(*fs_, path, "test file"), "new bytes");
  EXPECT_EQ(fs_->list(root_), std::vector<std::string>{"a.bin"});
}

TEST_P(FileSystemContract, ADroppedWriteLeavesNothing) {
  { fs_->create_atomically(root_ + "/b.bin")->append("partial"); }
  EXPECT_TRUE(fs_->list(root_).empty());
  EXPECT_EQ(fs_->status(root_ + "/b.bin").kind, FileKind::Missing);
}

TEST_P(FileSystemContract, AWriteNeedsItsDirectory) {
  expect_error([&] { fs_->create_atomically(root_ + "/missing/c.bin"); }, {"missing", "cannot create a file"});
}

TEST_P(FileSystemContract, ReadsFromTheStartInPieces) {
  write(root_ + "/d.bin", "0123456789");
  auto in = fs_->open(root_ + "/d.bin", "test file");
  EXPECT_EQ(in->size(), 10u);
  char piece[4];
  EXPECT_TRUE(read_exactly(*in, piece, 4));
  EXPECT_EQ(std::string(piece, 4), "0123");
  EXPECT_EQ(in->read(piece, 4), 4u);
  EXPECT_EQ(in->read(piece, 4), 2u);
  EXPECT_EQ(std::string(piece, 2), "89");
  EXPECT_EQ(in->read(piece, 4), 0u);
  EXPECT_FALSE(read_exactly(*in, piece, 1));
}

TEST_P(FileSystemContract, OpeningWhatIsNotAFileIsNamed) {
  expect_error([&] { fs_->open(root_ + "/nothing", "checkpoint file"); },
               {"checkpoint file", "/nothing", "No such file"});
  fs_->create_directories(root_ + "/sub");
  expect_error_of<c10::ValueError>([&] { fs_->open(root_ + "/sub", "checkpoint file"); },
                                   {"/sub", "a directory", "regular file"});
  write(root_ + "/big", std::string(100, 'x'));
  expect_error_of<c10::ValueError>([&] { read_file(*fs_, root_ + "/big", "config file", 99); },
                                   {"/big", "100 bytes", "99"});
}

TEST_P(FileSystemContract, StatusListsAndDirectories) {
  fs_->create_directories(root_ + "/x/y/z");
  fs_->create_directories(root_ + "/x/y/z");  // again: nothing to do
  write(root_ + "/x/y/f", "12345");
  write(root_ + "/x/a", "1");
  EXPECT_EQ(fs_->status(root_ + "/x/y").kind, FileKind::Directory);
  EXPECT_EQ(fs_->status(root_ + "/x/y/f").kind, FileKind::Regular);
  EXPECT_EQ(fs_->status(root_ + "/x/y/f").size, 5u);
  EXPECT_EQ(fs_->status(root_ + "/x/none").kind, FileKind::Missing);
  EXPECT_EQ(fs_->list(root_ + "/x"), (std::vector<std::string>{"a", "y"}));
  EXPECT_EQ(fs_->list(root_ + "/x/y"), (std::vector<std::string>{"f", "z"}));
  EXPECT_TRUE(fs_->list(root_ + "/none").empty());
  EXPECT_EQ(regular_files_under(*fs_, root_, "x", nullptr), (std::vector<std::string>{"x/a", "x/y/f"}));
  expect_error([&] { fs_->create_directories(root_ + "/x/a/b"); }, {"x/a/b", "cannot create directory"});
}

TEST_P(FileSystemContract, RemoveAllTakesEverythingUnder) {
  fs_->create_directories(root_ + "/t/u");
  write(root_ + "/t/u/f", "1");
  write(root_ + "/t2", "2");  // shares the prefix, stays
  fs_->remove_all(root_ + "/t");
  fs_->remove_all(root_ + "/t");  // missing: nothing
  EXPECT_EQ(fs_->status(root_ + "/t").kind, FileKind::Missing);
  EXPECT_EQ(fs_->status(root_ + "/t/u/f").kind, FileKind::Missing);
  EXPECT_EQ(fs_->list(root_), std::vector<std::string>{"t2"});
}

TEST_P(FileSystemContract, TheLockIsExclusiveUntilReleased) {
  const std::string path = root_ + "/.lock";
  auto first = fs_->try_lock(path, nullptr);
  ASSERT_NE(first, nullptr);
  std::string holder;
  EXPECT_EQ(fs_->try_lock(path, &holder), nullptr);
  EXPECT_FALSE(holder.empty());
  if (GetParam().local) EXPECT_EQ(std::stoi(holder), ::getpid());
  first.reset();
  EXPECT_NE(fs_->try_lock(path, nullptr), nullptr);
}

TEST_P(FileSystemContract, SafetensorsGoThroughIt) {
  const std::string path = root_ + "/model.safetensors";
  save_safetensors(*fs_, path, {{"w", torch::arange(6, torch::kFloat).reshape({2, 3})}}, {{"k", "v"}});
  const TensorFile back = load_safetensors(*fs_, path);
  EXPECT_TRUE(torch::equal(back.tensors.at("w"), torch::arange(6, torch::kFloat).reshape({2, 3})));
  EXPECT_EQ(back.metadata.at("k"), "v");
  EXPECT_EQ(back.source, path);
  // One flipped byte in the data is named by its CRC.
  std::string bytes = read_file(*fs_, path, "test file");
  bytes[bytes.size() - 1] ^= 1;
  write(path, bytes);
  expect_error([&] { load_safetensors(*fs_, path); }, {"model.safetensors", "CRC-32"});
}

INSTANTIATE_TEST_SUITE_P(Both, FileSystemContract, ::testing::Values(Backend{"local", true}, Backend{"memory", false}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MemoryFileSystem, TouchesNoDisk) {
  const std::string root = "/paisoar-memory-file-system-test";
  auto fs = memory_file_system();
  fs->create_directories(root + "/d");
  save_safetensors(*fs, root + "/d/x.safetensors", {{"w", torch::ones({2})}});
  EXPECT_FALSE(std::filesystem::exists(root));
  EXPECT_EQ(memory_file_system()->status(root).kind, FileKind::Missing);  // each one is its own
}

TEST(LocalFileSystem, AFifoIsRefusedNotWaitedOn) {
  testing::TempDir dir("file_system");
  const std::string fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(local_file_system()->status(fifo).kind, FileKind::Other);
  expect_error_of<c10::ValueError>([&] { local_file_system()->open(fifo, "checkpoint file"); },
                                   {"pipe", "FIFO"});
  std::vector<std::string> other;
  EXPECT_TRUE(regular_files_under(*local_file_system(), dir.path(), "", &other).empty());
  EXPECT_EQ(other, std::vector<std::string>{"pipe"});
}

}  // namespace
}  // namespace paisoar::format
