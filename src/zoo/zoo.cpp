// make_task: model.name -> a reference model, one module tree whatever the
// layout (its tensor-parallel variant, with the same parameter names, for
// parallel.tensor > 1), with its layers (LayerSequence) for the pipeline,
// ZeRO-3 and activation checkpointing; data.format -> train and evaluation
// data sets with the matching pipelines.
#include "paisoar/train/zoo.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <tuple>

#include "paisoar/data/data_error.h"
#include "paisoar/data/idx_dataset.h"
#include "paisoar/data/image_folder.h"
#include "paisoar/data/shard_dataset.h"
#include "paisoar/models.h"
#include "paisoar/data/text_corpus.h"
#include "paisoar/tensor_parallel/parallel_classifiers.h"
#include "paisoar/tensor_parallel/parallel_gpt.h"
#include "src/data/range_view.h"

namespace paisoar::train {
namespace {

using data::ImagePipeline;

struct Data {
  std::shared_ptr<const data::Dataset> train, eval;
  int64_t channels = 1;  // images' channels; 0: token ids (text)
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

// data.path as byte tokens: its first nine tenths trained on and its last
// tenth scored, or all of it trained on and data.eval_path scored.
Data open_text(const DataConfig& c, int64_t block_size) {
  Data d;
  d.channels = 0;
  auto corpus = std::make_shared<data::TextCorpus>(c.path, block_size);
  int64_t n = corpus->size();
  if (c.eval_path.empty()) {
    const int64_t held_out = n / 10;
    if (held_out > 0) d.eval = std::make_shared<data::RangeView>(corpus, n - held_out, n);
    n -= held_out;
  } else {
    d.eval = std::make_shared<data::TextCorpus>(c.eval_path, block_size);
  }
  if (c.train_limit > 0) n = std::min(n, c.train_limit);
  d.train = std::make_shared<data::RangeView>(std::move(corpus), 0, n);
  return d;
}

Data open_data(const DataConfig& c, int64_t num_classes, int64_t block_size) {
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
  if (c.format == "text") return open_text(c, block_size);
  d.channels = 3;
  auto train = open_images(c, c.path, true);
  require_samples(*train, "data.path '" + c.path + "'");
  const int64_t n = c.train_limit > 0 ? std::min(c.train_limit, train->size()) : train->size();
  d.train = std::make_shared<data::RangeView>(std::move(train), 0, n);
  if (!c.eval_path.empty()) d.eval = open_images(c, c.eval_path, false);
  return d;
}

// The model as built: one module tree, its layers, and how it is trained.
struct Built {
  std::shared_ptr<torch::nn::Module> model;
  models::LayerSequence layers;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> loss;  // null: cross entropy
};

template <typename Holder>
Built built(Holder model) {
  return {model.ptr(), models::LayerSequence::of(model),
          [m = model.ptr()](const torch::Tensor& x) { return m->forward(x); }, nullptr};
}

// What data each reference model takes, refused with the model's name.
void require_input(const std::string& name, const Data& d) {
  const bool small = name == "fashion_cnn" || name == "fashion_cnn_bn" || name == "mlp";
  if (small && d.channels != 1) {
    throw ConfigError("model.name: " + name + " takes 1x28x28 images (data.format: idx); " +
                      (d.channels == 0 ? "use gpt for text" : "use resnet18 for RGB image data"));
  }
  if (name == "gpt" && d.channels != 0) {
    throw ConfigError("model.name: gpt takes text (data.format: text, data.path: a text file); use fashion_cnn, mlp "
                      "or resnet18 for images");
  }
  if (!small && name != "gpt" && d.channels != 3) {
    throw ConfigError("model.name: " + name + " takes RGB images (data.format: folder or shards); " +
                      (d.channels == 0 ? "use gpt for text" : "use fashion_cnn or mlp for Fashion-MNIST"));
  }
}

models::GptOptions gpt_options(const ModelConfig& m) {
  models::GptOptions o;
  o.n_layer = m.n_layer;
  o.n_head = m.n_head;
  o.n_embd = m.n_embd;
  o.block_size = m.block_size;
  return o;
}

// The configured model; with a tensor group, its tensor-parallel variant cut
// from the plain model built first (the same seeded weights as one rank's).
Built build_model(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& tensor_group) {
  const ModelConfig& m = config.model;
  const std::string& name = m.name;
  if (name == "fashion_cnn" || name == "fashion_cnn_bn") {
    models::FashionCnnOptions o;
    o.batch_norm = name == "fashion_cnn_bn";
    o.num_classes = m.num_classes;
    models::FashionCnn plain(o);
    if (!tensor_group) return built(plain);
    return built(tensor_parallel::ParallelFashionCnn(*plain, tensor_group));
  }
  if (name == "mlp") {
    models::Mlp plain(mlp_options(m));
    if (!tensor_group) return built(plain);
    return built(tensor_parallel::ParallelMlpClassifier(*plain, tensor_group));
  }
  if (name == "gpt") {
    models::Gpt plain(gpt_options(m));
    Built b;
    if (!tensor_group) {
      b = built(plain);
    } else {
      tensor_parallel::ParallelGpt split(gpt_options(m), tensor_group);
      split->load_full(*plain);
      b = built(split);
    }
    b.loss = [](const torch::Tensor& logits, const torch::Tensor& targets) {
      return models::GptImpl::loss(logits, targets);
    };
    return b;
  }
  if (tensor_group) {
    throw ConfigError("parallel.tensor: " + name + " has no tensor-parallel layers (the models that split across "
                      "ranks are mlp, fashion_cnn, fashion_cnn_bn and gpt); set parallel.tensor: 1 and use "
                      "parallel.data or parallel.pipeline instead");
  }
  if (name == "resnet18") return built(models::resnet18(m.num_classes));
  if (name == "resnet50") return built(models::resnet50(m.num_classes));
  if (name == "vgg16") return built(models::vgg16(m.num_classes));
  throw ConfigError("model.name: '" + name + "' is not a reference model");
}

// The configured model over `d`.
TrainTask task_over(const TrainConfig& config, const Data& d, const std::shared_ptr<comm::Communicator>& tensor_group) {
  require_input(config.model.name, d);
  check_reference_layout(config);
  if (config.parallel.tensor > 1 && (!tensor_group || tensor_group->size() != config.parallel.tensor)) {
    C10_THROW_ERROR(ValueError, "make_task: parallel.tensor is " + std::to_string(config.parallel.tensor) +
                                "; pass the Trainer's tensor_group() (its size must match)");
  }
  torch::manual_seed(static_cast<uint64_t>(config.seed));
  Built b = build_model(config, config.parallel.tensor > 1 ? tensor_group : nullptr);
  // The generator after building depends on the seed only, not on what the
  // layout's layers drew (dropout then draws alike in every layout).
  torch::manual_seed(static_cast<uint64_t>(config.seed) + 1);
  TrainTask t;
  t.model = b.model;
  t.forward = b.forward;
  t.layers = b.layers;
  t.loss = b.loss;
  t.train_data = d.train;
  t.eval_data = d.eval;
  return t;
}

// A reference model's layer count and the sizes its tensor-parallel layers
// split (each must be divisible by parallel.tensor); no sizes: it has none.
struct ModelShape {
  int64_t layers = 0;
  std::vector<std::pair<std::string, int64_t>> split;  // what, size
  bool splits = true;
};

ModelShape shape_of(const ModelConfig& m) {
  const std::string& name = m.name;
  if (name == "fashion_cnn" || name == "fashion_cnn_bn") return {4, {{"fc1's 128 units", 128}}};
  if (name == "mlp") {
    const auto hidden = mlp_options(m).hidden;
    ModelShape s{static_cast<int64_t>(hidden.size()) + 1, {}};
    for (size_t i = 0; i + 1 < hidden.size(); i += 2) s.split.push_back({"model.hidden[" + std::to_string(i) + "]", hidden[i]});
    return s;
  }
  if (name == "gpt") {
    return {m.n_layer + 2, {{"model.n_head", m.n_head}, {"the 4 x model.n_embd MLP units", 4 * m.n_embd},
                            {"the 256-byte vocabulary", 256}}};
  }
  if (name == "resnet18") return {10, {}, false};
  if (name == "resnet50") return {18, {}, false};
  if (name == "vgg16") return {16, {}, false};
  return {0, {}, false};
}

}  // namespace

void check_reference_layout(const TrainConfig& config) {
  const ModelShape shape = shape_of(config.model);
  if (shape.layers == 0) return;  // model.name is checked where the model is built
  const ParallelConfig& layout = config.parallel;
  const std::string& name = config.model.name;
  if (layout.pipeline > shape.layers) {
    throw ConfigError("parallel.pipeline: " + std::to_string(layout.pipeline) + " stages, but " + name + " has " +
                      std::to_string(shape.layers) + " layers to cut; use parallel.pipeline " +
                      std::to_string(shape.layers) + " or fewer (each stage needs a layer)");
  }
  if (layout.tensor == 1) return;
  if (!shape.splits) {
    throw ConfigError("parallel.tensor: " + std::to_string(layout.tensor) + ", but " + name +
                      " has no tensor-parallel layers (mlp, fashion_cnn, fashion_cnn_bn and gpt have); use "
                      "parallel.tensor 1 and give its ranks to parallel.data");
  }
  if (name == "mlp" && (shape.split.empty() || mlp_options(config.model).hidden.size() % 2 != 0)) {
    throw ConfigError("model.hidden: parallel.tensor splits the mlp's hidden layers in pairs (column-, then "
                      "row-parallel); give an even number of widths, not " +
                      std::to_string(mlp_options(config.model).hidden.size()));
  }
  for (const auto& [what, size] : shape.split) {
    if (size % layout.tensor == 0) continue;
    int64_t fits = layout.tensor;  // the largest width below that divides every split size
    for (; fits > 1; --fits) {
      bool all = true;
      for (const auto& [w, n] : shape.split) all = all && n % fits == 0;
      if (all) break;
    }
    throw ConfigError("parallel.tensor: " + std::to_string(layout.tensor) + " does not divide " + name + "'s " +
                      what + " (" + std::to_string(size) + "); the nearest width that works is parallel.tensor " +
                      std::to_string(fits));
  }
}

TrainTask make_task(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& tensor_group) {
  return task_over(config, open_data(config.data, config.model.num_classes, config.model.block_size), tensor_group);
}

TrainTask make_task(const TrainConfig& config, std::shared_ptr<const data::Dataset> train,
                    std::shared_ptr<const data::Dataset> eval,
                    const std::shared_ptr<comm::Communicator>& tensor_group) {
  if (!train || train->size() == 0) C10_THROW_ERROR(ValueError, "make_task: the training set is null or empty");
  data::SampleRng rng(0);
  Data d{std::move(train), std::move(eval), 1};
  const torch::Tensor first = d.train->get(0, rng).data;
  d.channels = first.is_floating_point() || first.dim() > 1 ? first.size(0) : 0;  // 1-D int64: token ids
  return task_over(config, d, tensor_group);
}

}  // namespace paisoar::train
