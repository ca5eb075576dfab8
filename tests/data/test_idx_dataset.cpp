// IdxDataset on Debian's Fashion-MNIST: the known counts and first labels, the
// normalisation against the formula, and the errors for mismatched files.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "paisoar/data/data_error.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/data/idx.h"
#include "paisoar/data/idx_dataset.h"
#include "tests/support/expect_error.h"

using namespace paisoar::data;
using paisoar::testing::expect_error_of;

namespace {

const std::string kDir = "/usr/share/datasets/fashion-mnist/";

bool have_fashion_mnist() { return std::filesystem::exists(kDir + "train-labels-idx1-ubyte.gz"); }

}  // namespace

TEST(IdxDataset, FashionMnistCountsLabelsAndNormalisation) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto train = std::make_shared<IdxDataset>(kDir + "train-images-idx3-ubyte.gz",
                                            kDir + "train-labels-idx1-ubyte.gz", fashion_mnist_pipeline());
  IdxDataset test(kDir + "t10k-images-idx3-ubyte.gz", kDir + "t10k-labels-idx1-ubyte.gz",
                  fashion_mnist_pipeline());
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  const int64_t first_train[] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  const int64_t first_test[] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  SampleRng rng(0);
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(train->get(i, rng).label, first_train[i]);
    EXPECT_EQ(test.get(i, rng).label, first_test[i]);
  }
  EXPECT_TRUE(torch::equal(train->labels().bincount(), torch::full({10}, 6000, torch::kLong)));
  EXPECT_EQ(train->images()[0].sum().item<int64_t>(), 76247);  // numpy's sum of image 0
  const auto x = train->get(0, rng).data;
  ASSERT_EQ(x.sizes(), (std::vector<int64_t>{1, 28, 28}));
  const auto expected =
      (train->images()[0].to(torch::kFloat) / 255.0 - kFashionMnistMean) / kFashionMnistStd;
  EXPECT_TRUE(torch::allclose(x[0], expected, 1e-5, 1e-5));

  // Through the loader, the same tensor lands in the batch.
  DataLoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  o.workers = 2;
  DataLoader loader(train, o);
  const auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_TRUE(torch::allclose(batch->data[0][0], expected, 1e-5, 1e-5));
  EXPECT_EQ(batch->labels[0].item<int64_t>(), 9);
}

TEST(IdxDataset, MismatchedFilesSayWhichAndWhy) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  expect_error_of<DataError>([] {
    IdxDataset(kDir + "train-images-idx3-ubyte.gz", kDir + "t10k-labels-idx1-ubyte.gz",
               fashion_mnist_pipeline());
  }, {"60000 images", "10000 labels", "t10k-labels"});
  expect_error_of<DataError>([] {
    IdxDataset(kDir + "train-labels-idx1-ubyte.gz", kDir + "train-labels-idx1-ubyte.gz",
               fashion_mnist_pipeline());
  }, {"expected uint8 images", "labels file"});
  expect_error_of<DataError>([] {
    IdxDataset("/nonexistent/images.gz", kDir + "train-labels-idx1-ubyte.gz", fashion_mnist_pipeline());
  }, {"/nonexistent/images.gz"});
}
