// ImageFolder over a temporary tree: classes, order and labels as torchvision
// finds them, samples through the pipeline, and the errors for a missing root,
// no class folders, an empty class folder and a corrupt file (each named).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "paisoar/data/image_codec.h"
#include "paisoar/data/image_folder.h"
#include "paisoar/data/transforms.h"
#include "tests/data/image_test_util.h"

namespace paisoar::data {
namespace {

namespace fs = std::filesystem;

class ImageFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("paisoar_image_folder_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& relative, const std::vector<uint8_t>& bytes) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream out(root_ / relative, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  static std::vector<uint8_t> image_bytes(ImageFormat format, uint8_t value) {
    Image image(6, 10, 3);
    std::fill(image.pixels.begin(), image.pixels.end(), value);
    if (format == ImageFormat::Jpeg) return encode_jpeg(image, 95);
    if (format == ImageFormat::Png) return encode_png(image);
    return encode_pnm(image);
  }
  static ImagePipeline pipeline() {
    ToTensorOptions o;
    o.keep_uint8 = true;
    return ImagePipeline({std::make_shared<Resize>(4, 5)}, o);
  }
  std::string path(const std::string& relative) const { return (root_ / relative).string(); }

  fs::path root_;
};

TEST_F(ImageFolderTest, FindsClassesFilesAndLabelsInTorchvisionOrder) {
  write("dog/x.ppm", image_bytes(ImageFormat::Pnm, 200));
  write("cat/b.jpg", image_bytes(ImageFormat::Jpeg, 100));
  write("cat/a.PNG", image_bytes(ImageFormat::Png, 50));
  write("cat/sub/c.jpeg", image_bytes(ImageFormat::Jpeg, 150));
  write("cat/z.pgm", encode_pnm(Image(3, 3, 1)));
  write("cat/.hidden.jpg", {1, 2, 3});
  write("cat/notes.txt", {1, 2, 3});
  write(".cache/skip.jpg", {1, 2, 3});
  write("readme.txt", {1});
  const ImageFolder folder(root_.string(), pipeline());
  EXPECT_EQ(folder.classes(), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(folder.num_classes(), 2);
  ASSERT_EQ(folder.size(), 5);
  // os.walk order: the folder's own files (sorted), then its sub-folders.
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {path("cat/a.PNG"), 0}, {path("cat/b.jpg"), 0}, {path("cat/z.pgm"), 0},
      {path("cat/sub/c.jpeg"), 0}, {path("dog/x.ppm"), 1}};
  EXPECT_EQ(folder.files(), expected);
  EXPECT_EQ(folder.describe(4), path("dog/x.ppm"));

  SampleRng rng(1);
  const Example dog = folder.get(4, rng);
  EXPECT_EQ(dog.label, 1);
  ASSERT_EQ(dog.data.sizes(), torch::IntArrayRef({3, 4, 5}));
  EXPECT_TRUE(torch::all(dog.data == 200).item<bool>());  // a flat image stays flat
  const Example cat = folder.get(0, rng);
  EXPECT_EQ(cat.label, 0);
  EXPECT_TRUE(torch::all(cat.data == 50).item<bool>());
  EXPECT_EQ(folder.get(2, rng).data.size(0), 3);  // gray PGM expanded to RGB
}

TEST_F(ImageFolderTest, NamesAMissingRoot) {
  testing::expect_data_error([&] { ImageFolder(path("nope"), pipeline()); },
                             {"nope", "does not exist"});
}

TEST_F(ImageFolderTest, RefusesARootWithoutClassFolders) {
  write("a.jpg", image_bytes(ImageFormat::Jpeg, 1));
  testing::expect_data_error([&] { ImageFolder(root_.string(), pipeline()); },
                             {"no class folders", "root/<class>/"});
}

TEST_F(ImageFolderTest, NamesAnEmptyClassFolder) {
  write("cat/a.jpg", image_bytes(ImageFormat::Jpeg, 1));
  write("dog/notes.txt", {1});
  testing::expect_data_error([&] { ImageFolder(root_.string(), pipeline()); },
                             {path("dog").c_str(), "put at least one image in it or remove the folder"});
}

TEST_F(ImageFolderTest, AFifoWithAnImageNameIsRefusedAtTheScan) {
  write("cat/a.jpg", image_bytes(ImageFormat::Jpeg, 1));
  ASSERT_EQ(::mkfifo(path("cat/x.jpg").c_str(), 0600), 0);
  testing::expect_data_error([&] { ImageFolder(root_.string(), pipeline()); },
                             {path("cat/x.jpg").c_str(), "a FIFO", "remove it or move it out of the image folder"});
  fs::remove(root_ / "cat/x.jpg");
  fs::create_symlink(root_ / "cat/gone.jpg", root_ / "cat/link.jpg");
  testing::expect_data_error([&] { ImageFolder(root_.string(), pipeline()); },
                             {path("cat/link.jpg").c_str(), "a dangling symbolic link"});
}

TEST_F(ImageFolderTest, AFileThatBecameAFifoAfterTheScanIsRefusedNotWaitedOn) {
  write("cat/a.jpg", image_bytes(ImageFormat::Jpeg, 1));
  const ImageFolder folder(root_.string(), pipeline());
  fs::remove(root_ / "cat/a.jpg");
  ASSERT_EQ(::mkfifo(path("cat/a.jpg").c_str(), 0600), 0);
  SampleRng rng(1);
  testing::expect_data_error([&] { folder.get(0, rng); }, {path("cat/a.jpg").c_str(), "not a regular file"});
}

TEST_F(ImageFolderTest, AnImageOverThePixelLimitIsRefusedBeforeDecoding) {
  write("cat/a.png", image_bytes(ImageFormat::Png, 1));  // 10x6
  ToTensorOptions o;
  o.keep_uint8 = true;
  const ImageFolder folder(root_.string(), ImagePipeline({std::make_shared<Resize>(4, 5)}, o, /*max_pixels=*/59));
  SampleRng rng(1);
  testing::expect_data_error([&] { folder.get(0, rng); },
                             {path("cat/a.png").c_str(), "10x6 = 60 pixels, over the limit of 59", "data.max_image_pixels"});
  const ImageFolder unlimited(root_.string(), ImagePipeline({std::make_shared<Resize>(4, 5)}, o, 0));
  EXPECT_NO_THROW(unlimited.get(0, rng));
}

TEST_F(ImageFolderTest, ACorruptFileIsADataErrorNamingIt) {
  auto jpeg = image_bytes(ImageFormat::Jpeg, 1);
  jpeg.resize(jpeg.size() / 2);
  write("cat/bad.jpg", jpeg);
  write("cat/good.jpg", image_bytes(ImageFormat::Jpeg, 1));
  const ImageFolder folder(root_.string(), pipeline());
  SampleRng rng(1);
  EXPECT_NO_THROW(folder.get(1, rng));
  testing::expect_data_error([&] { folder.get(0, rng); }, {path("cat/bad.jpg").c_str(), "JPEG"});
  fs::remove(root_ / "cat/good.jpg");
  testing::expect_data_error([&] { folder.get(1, rng); }, {path("cat/good.jpg").c_str(), "cannot open"});
}

}  // namespace
}  // namespace paisoar::data
