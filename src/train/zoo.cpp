// make_task: model.name -> a reference model, data.format -> train and
// evaluation data sets with the matching pipelines.
#include "paisoar/train/zoo.h"

#include <torch/torch.h>

#include "paisoar/data/idx_dataset.h"
#include "paisoar/data/image_folder.h"
#include "paisoar/data/shard_dataset.h"
#include "paisoar/models.h"
#include "src/train/range_view.h"

namespace paisoar::train {
namespace {

using data::ImagePipeline;

struct Data {
  std::shared_ptr<const data::Dataset> train, eval;
  int64_t channels = 1;
};

ImagePipeline image_pipeline(const DataConfig& c, bool train) {
  data::ToTensorOptions to_tensor;
  to_tensor.mean = {0.485f, 0.456f, 0.406f};
  to_tensor.std = {0.229f, 0.224f, 0.225f};
  data::TransformList t;
  if (train && c.augment) {
    t.push_back(std::make_shared<data::RandomResizedCrop>(c.image_size, c.image_size));
    t.push_back(std::make_shared<data::RandomHorizontalFlip>());
  } else {
    t.push_back(std::make_shared<data::Resize>(c.image_size * 8 / 7));
    t.push_back(std::make_shared<data::CenterCrop>(c.image_size, c.image_size));
  }
  return ImagePipeline(std::move(t), to_tensor);
}

std::shared_ptr<const data::Dataset> open_images(const DataConfig& c, const std::string& path,
                                                 bool train) {
  if (c.format == "folder") return std::make_shared<data::ImageFolder>(path, image_pipeline(c, train));
  return std::make_shared<data::ShardDataset>(path, image_pipeline(c, train));
}

Data open_data(const DataConfig& c, int64_t num_classes) {
  Data d;
  if (c.format == "idx") {
    data::IdxDatasetOptions train_options, eval_options;
    train_options.limit = c.train_limit;
    train_options.num_classes = eval_options.num_classes = num_classes;
    data::TransformList augment;
    if (c.augment) {
      augment.push_back(std::make_shared<data::RandomAffine>(10.0, std::array<double, 2>{0.1, 0.1}));
    }
    d.train = std::make_shared<data::IdxDataset>(c.path + "/train-images-idx3-ubyte.gz",
                                                 c.path + "/train-labels-idx1-ubyte.gz",
                                                 data::fashion_mnist_pipeline(std::move(augment)), train_options);
    d.eval = std::make_shared<data::IdxDataset>(c.path + "/t10k-images-idx3-ubyte.gz",
                                                c.path + "/t10k-labels-idx1-ubyte.gz",
                                                data::fashion_mnist_pipeline(), eval_options);
    return d;
  }
  d.channels = 3;
  auto train = open_images(c, c.path, true);
  const int64_t n = c.train_limit > 0 ? std::min(c.train_limit, train->size()) : train->size();
  d.train = std::make_shared<RangeView>(std::move(train), 0, n);
  if (!c.eval_path.empty()) d.eval = open_images(c, c.eval_path, false);
  return d;
}

}  // namespace

TrainTask make_task(const TrainConfig& config) {
  const Data d = open_data(config.data, config.model.num_classes);
  torch::manual_seed(static_cast<uint64_t>(config.seed));
  const auto& name = config.model.name;
  const int64_t classes = config.model.num_classes;
  if (name == "fashion_cnn" || name == "fashion_cnn_bn") {
    if (d.channels != 1) {
      throw ConfigError("model.name: fashion_cnn takes 1x28x28 images (data.format: idx); "
                        "use resnet18 for RGB image data");
    }
    models::FashionCnnOptions o;
    o.batch_norm = name == "fashion_cnn_bn";
    o.num_classes = classes;
    return TrainTask::of(models::FashionCnn(o), d.train, d.eval);
  }
  if (name == "mlp") {
    if (d.channels != 1) {
      throw ConfigError("model.name: mlp takes 1x28x28 images (data.format: idx)");
    }
    models::MlpOptions o;
    o.num_classes = classes;
    return TrainTask::of(models::Mlp(o), d.train, d.eval);
  }
  if (name == "resnet18" || name == "resnet50" || name == "vgg16") {
    if (d.channels != 3) {
      throw ConfigError("model.name: " + name + " takes RGB images (data.format: folder or shards); "
                        "use fashion_cnn or mlp for Fashion-MNIST");
    }
    if (name == "resnet18") return TrainTask::of(models::resnet18(classes), d.train, d.eval);
    if (name == "resnet50") return TrainTask::of(models::resnet50(classes), d.train, d.eval);
    return TrainTask::of(models::vgg16(classes), d.train, d.eval);
  }
  throw ConfigError("model.name: '" + name + "' is not a reference model");
}

}  // namespace paisoar::train
