// make_task: model.name -> a reference model (a zero::LayerList under ZeRO
// stage 3, a Sequential of layers for a pipeline, tensor-parallel layers for
// parallel.tensor > 1), data.format -> train and evaluation data sets with the matching
// pipelines.
#include "paisoar/train/zoo.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <tuple>

#include "paisoar/data/data_error.h"
#include "paisoar/data/idx_dataset.h"
#include "paisoar/data/image_folder.h"
#include "paisoar/data/shard_dataset.h"
#include "paisoar/models.h"
#include "paisoar/tensor_parallel/column_parallel_linear.h"
#include "paisoar/tensor_parallel/row_parallel_linear.h"
#include "paisoar/zero/layer_list.h"
#include "src/train/range_view.h"

namespace paisoar::train {
namespace {

using data::ImagePipeline;

struct Data {
  std::shared_ptr<const data::Dataset> train, eval;
  int64_t channels = 1;
};

// The mlp's options: model.num_classes, and model.hidden when given.
models::MlpOptions mlp_options(const ModelConfig& model) {
  models::MlpOptions o;
  o.num_classes = model.num_classes;
  if (!model.hidden.empty()) o.hidden = model.hidden;
  return o;
}

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
  return ImagePipeline(std::move(t), to_tensor, c.max_image_pixels);
}

std::shared_ptr<const data::Dataset> open_images(const DataConfig& c, const std::string& path,
                                                 bool train) {
  if (c.format == "folder") return std::make_shared<data::ImageFolder>(path, image_pipeline(c, train));
  return std::make_shared<data::ShardDataset>(path, image_pipeline(c, train));
}

// The reference models for idx data take Fashion-MNIST's 28x28 images; other
// sizes would fail inside the model's forward, without naming the file.
void require_fashion_mnist_size(const data::IdxDataset& set, const std::string& file) {
  const int64_t h = set.images().size(1), w = set.images().size(2);
  if (h == 28 && w == 28) return;
  throw data::DataError(file + ": holds " + std::to_string(h) + "x" + std::to_string(w) +
                        " images; the reference models for data.format idx (fashion_cnn, mlp) take 28x28, "
                        "Fashion-MNIST's size: give Fashion-MNIST's IDX files, or train a model of your own on "
                        "these (examples/own_model)");
}

// The sampler would refuse an empty set too, but without naming the data.
void require_samples(const data::Dataset& set, const std::string& source) {
  if (set.size() > 0) return;
  throw data::DataError(source + ": holds no samples; point data.path at a data set with at least one");
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
    const std::string train_images = c.path + "/train-images-idx3-ubyte.gz";
    const std::string eval_images = c.path + "/t10k-images-idx3-ubyte.gz";
    auto train = std::make_shared<data::IdxDataset>(train_images, c.path + "/train-labels-idx1-ubyte.gz",
                                                    data::fashion_mnist_pipeline(std::move(augment)), train_options);
    auto eval = std::make_shared<data::IdxDataset>(eval_images, c.path + "/t10k-labels-idx1-ubyte.gz",
                                                   data::fashion_mnist_pipeline(), eval_options);
    require_samples(*train, train_images);
    require_fashion_mnist_size(*train, train_images);
    require_fashion_mnist_size(*eval, eval_images);
    d.train = std::move(train);
    d.eval = std::move(eval);
    return d;
  }
  d.channels = 3;
  auto train = open_images(c, c.path, true);
  require_samples(*train, "data.path '" + c.path + "'");
  const int64_t n = c.train_limit > 0 ? std::min(c.train_limit, train->size()) : train->size();
  d.train = std::make_shared<RangeView>(std::move(train), 0, n);
  if (!c.eval_path.empty()) d.eval = open_images(c, c.eval_path, false);
  return d;
}

namespace nn = torch::nn;

// A Sequential with a plain forward(Tensor), so it can be one layer of
// another Sequential (AnyModule refuses Sequential's templated forward).
struct BlockImpl : nn::SequentialImpl {
  using SequentialImpl::SequentialImpl;
  torch::Tensor forward(torch::Tensor x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(Block);

// ZeRO stage 3 shards layer by layer, so it needs the model as a LayerList:
// fashion_cnn(_bn) and mlp rebuilt as one, with the same layers and forward
// pass, each layer a parameter-bearing module with the activation and pooling
// that follow it. Parameter names therefore differ from the plain models'
// (conv1.0.weight for conv1.weight).
nn::Sequential layer_sequence(const ModelConfig& model) {
  const std::string& name = model.name;
  const int64_t classes = model.num_classes;
  nn::Sequential layers;
  if (name == "mlp") {
    const models::MlpOptions o = mlp_options(model);
    int64_t width = o.in_features;
    for (size_t i = 0; i < o.hidden.size(); ++i) {
      Block layer;
      if (i == 0) layer->push_back(nn::Flatten());
      layer->push_back(nn::Linear(width, o.hidden[i]));
      layer->push_back(nn::ReLU());
      layers->push_back("hidden" + std::to_string(i), layer);
      width = o.hidden[i];
    }
    layers->push_back("head", nn::Linear(width, classes));
    return layers;
  }
  const bool bn = name == "fashion_cnn_bn";
  for (const auto& [layer_name, in, out] : {std::tuple<const char*, int64_t, int64_t>{"conv1", 1, 32},
                                            std::tuple<const char*, int64_t, int64_t>{"conv2", 32, 64}}) {
    Block layer;
    layer->push_back(nn::Conv2d(nn::Conv2dOptions(in, out, 3).padding(1).bias(!bn)));
    if (bn) layer->push_back(nn::BatchNorm2d(out));
    layer->push_back(nn::ReLU());
    layer->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    layers->push_back(layer_name, layer);
  }
  layers->push_back("fc1", Block(nn::Flatten(), nn::Linear(64 * 7 * 7, 128), nn::ReLU()));
  layers->push_back("fc2", nn::Linear(128, classes));
  return layers;
}

TrainTask layer_list_task(const ModelConfig& config, const Data& d) {
  TrainTask t;
  auto model = std::make_shared<zero::LayerListImpl>(layer_sequence(config));
  t.model = model;
  t.forward = [model](const torch::Tensor& x) { return model->forward(x); };
  t.train_data = d.train;
  t.eval_data = d.eval;
  return t;
}

// The model as a Sequential of layers for parallel.pipeline > 1.
TrainTask sequence_task(nn::Sequential layers, const Data& d) {
  TrainTask t;
  t.model = layers.ptr();
  t.layers = layers;
  t.forward = [layers](const torch::Tensor& x) mutable { return layers->forward(x); };
  t.train_data = d.train;
  t.eval_data = d.eval;
  return t;
}

// mlp split across a tensor-parallel group, Megatron's MLP pairing: each pair
// of hidden layers is one block, the first column-parallel (its output stays
// split), the second row-parallel (one allreduce); the head is replicated.
// Weights come from the plain Mlp built with the same seed, so the numbers
// equal a one-rank run. Layers for a pipeline: "hidden" (one block) or
// "hidden0".."hidden<k>", then "head".
nn::Sequential tensor_parallel_mlp(const ModelConfig& model, const tensor_parallel::Group& group) {
  const models::MlpOptions o = mlp_options(model);
  if (o.hidden.empty() || o.hidden.size() % 2 != 0) {
    throw ConfigError("model.hidden: parallel.tensor splits the mlp's hidden layers in pairs (column-, then "
                      "row-parallel); give an even number of widths, not " + std::to_string(o.hidden.size()));
  }
  models::Mlp full(o);
  tensor_parallel::ColumnParallelLinearOptions column;
  column.gather_output = false;
  tensor_parallel::RowParallelLinearOptions row;
  row.input_is_parallel = true;
  nn::Sequential layers;
  const size_t blocks = o.hidden.size() / 2;
  int64_t width = o.in_features;
  for (size_t b = 0; b < blocks; ++b) {
    tensor_parallel::ColumnParallelLinear first(width, o.hidden[2 * b], group, column);
    tensor_parallel::RowParallelLinear second(o.hidden[2 * b], o.hidden[2 * b + 1], group, row);
    first->load_full(nn::Linear(full->hidden->ptr<nn::LinearImpl>(2 * b)));
    second->load_full(nn::Linear(full->hidden->ptr<nn::LinearImpl>(2 * b + 1)));
    Block block;
    if (b == 0) block->push_back(nn::Flatten());
    block->push_back(first);
    block->push_back(nn::ReLU());
    block->push_back(second);
    block->push_back(nn::ReLU());
    layers->push_back(blocks == 1 ? std::string("hidden") : "hidden" + std::to_string(b), block);
    width = o.hidden[2 * b + 1];
  }
  layers->push_back("head", full->head);
  return layers;
}

// The configured model over `d`.
TrainTask task_over(const TrainConfig& config, const Data& d, const std::shared_ptr<comm::Communicator>& tensor_group) {
  torch::manual_seed(static_cast<uint64_t>(config.seed));
  const auto& name = config.model.name;
  const int64_t classes = config.model.num_classes;
  if (config.parallel.tensor > 1) {
    if (name != "mlp" || d.channels != 1) {
      throw ConfigError("parallel.tensor: the reference model split across ranks is mlp (with data.format "
                        "idx); model.name is '" + name + "'. Build your own model from paisoar/tensor_parallel.h "
                        "layers for others");
    }
    if (!tensor_group || tensor_group->size() != config.parallel.tensor) {
      C10_THROW_ERROR(ValueError, "make_task: parallel.tensor is " + std::to_string(config.parallel.tensor) +
                                  "; pass the Trainer's tensor_group() (its size must match)");
    }
    return sequence_task(tensor_parallel_mlp(config.model, tensor_group), d);
  }
  if (config.parallel.pipeline > 1) {
    if (name != "mlp" && name != "fashion_cnn" && name != "fashion_cnn_bn") {
      throw ConfigError("parallel.pipeline: the reference models built as a list of layers are mlp, fashion_cnn "
                        "and fashion_cnn_bn; model.name is '" + name + "'. For your own model set TrainTask::layers");
    }
    if (d.channels != 1) throw ConfigError("model.name: " + name + " takes 1x28x28 images (data.format: idx)");
    return sequence_task(layer_sequence(config.model), d);
  }
  if (name == "fashion_cnn" || name == "fashion_cnn_bn") {
    if (d.channels != 1) {
      throw ConfigError("model.name: fashion_cnn takes 1x28x28 images (data.format: idx); "
                        "use resnet18 for RGB image data");
    }
    if (config.zero.stage == 3) return layer_list_task(config.model, d);
    models::FashionCnnOptions o;
    o.batch_norm = name == "fashion_cnn_bn";
    o.num_classes = classes;
    return TrainTask::of(models::FashionCnn(o), d.train, d.eval);
  }
  if (name == "mlp") {
    if (d.channels != 1) {
      throw ConfigError("model.name: mlp takes 1x28x28 images (data.format: idx)");
    }
    if (config.zero.stage == 3) return layer_list_task(config.model, d);
    return TrainTask::of(models::Mlp(mlp_options(config.model)), d.train, d.eval);
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

}  // namespace

TrainTask make_task(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& tensor_group) {
  return task_over(config, open_data(config.data, config.model.num_classes), tensor_group);
}

TrainTask make_task(const TrainConfig& config, std::shared_ptr<const data::Dataset> train,
                    std::shared_ptr<const data::Dataset> eval,
                    const std::shared_ptr<comm::Communicator>& tensor_group) {
  if (!train || train->size() == 0) C10_THROW_ERROR(ValueError, "make_task: the training set is null or empty");
  data::SampleRng rng(0);
  Data d{std::move(train), std::move(eval), 1};
  d.channels = d.train->get(0, rng).data.size(0);
  return task_over(config, d, tensor_group);
}

}  // namespace paisoar::train
