// paisoar.data's core: the data sets (image folders, record shards, IDX) with
// their decode-and-transform pipeline, the threaded loader, and the sampler
// that orders every epoch. paisoar/data.py gives them a torch-like API.
#include "bindings.h"

#include <array>
#include <optional>

#include "paisoar/data/data_error.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/data/distributed_sampler.h"
#include "paisoar/data/idx_dataset.h"
#include "paisoar/data/image_folder.h"
#include "paisoar/data/shard_dataset.h"
#include "paisoar/data/transforms.h"

namespace paisoar::python {

namespace {

// One transform as Python describes it: a name and its numbers.
using Step = std::pair<std::string, std::vector<double>>;

double arg(const Step& step, size_t i) {
  TORCH_CHECK_VALUE(i < step.second.size(), "transform '", step.first, "' needs ", i + 1,
                    " arguments, got ", step.second.size());
  return step.second[i];
}

std::shared_ptr<data::ImageTransform> make_transform(const Step& s) {
  auto n = [&](size_t i) { return static_cast<int64_t>(arg(s, i)); };
  if (s.first == "random_resized_crop") {
    return std::make_shared<data::RandomResizedCrop>(n(0), n(1), std::array<double, 2>{arg(s, 2), arg(s, 3)},
                                                     std::array<double, 2>{arg(s, 4), arg(s, 5)});
  }
  if (s.first == "resize") {
    return n(1) == 0 ? std::make_shared<data::Resize>(n(0)) : std::make_shared<data::Resize>(n(0), n(1));
  }
  if (s.first == "center_crop") return std::make_shared<data::CenterCrop>(n(0), n(1));
  if (s.first == "horizontal_flip") return std::make_shared<data::RandomHorizontalFlip>(arg(s, 0));
  if (s.first == "vertical_flip") return std::make_shared<data::RandomVerticalFlip>(arg(s, 0));
  if (s.first == "affine") {
    return std::make_shared<data::RandomAffine>(arg(s, 0), std::array<double, 2>{arg(s, 1), arg(s, 2)},
                                                static_cast<uint8_t>(n(3)));
  }
  TORCH_CHECK_VALUE(false, "unknown transform '", s.first,
                    "': use random_resized_crop, resize, center_crop, horizontal_flip, vertical_flip or affine");
}

data::ImagePipeline make_pipeline(const std::vector<Step>& steps, int64_t channels,
                                  std::vector<float> mean, std::vector<float> std, bool keep_uint8) {
  data::TransformList transforms;
  for (const auto& s : steps) transforms.push_back(make_transform(s));
  data::ToTensorOptions to_tensor;
  to_tensor.channels = channels;
  to_tensor.mean = std::move(mean);
  to_tensor.std = std::move(std);
  to_tensor.keep_uint8 = keep_uint8;
  return data::ImagePipeline(std::move(transforms), to_tensor);
}

data::OnError on_error_named(const std::string& name) {
  if (name == "raise") return data::OnError::Raise;
  if (name == "skip") return data::OnError::Skip;
  TORCH_CHECK_VALUE(false, "on_error='", name, "': use 'raise' (stop at a bad sample) or 'skip' (drop it)");
}

// A torch.utils.data.Dataset (map-style) as a C++ data set, for the Trainer's
// loader: each sample is dataset[index] -> (tensor, label), called with the
// GIL (the worker threads take turns in Python; the batching is C++'s).
// Random transforms inside it draw from torch's generator, not the loader's
// per-sample one, so their augmentations are not reproducible.
class PythonDataset : public data::Dataset {
 public:
  explicit PythonDataset(py::object dataset) : dataset_(std::move(dataset)) {
    size_ = py::len(*dataset_);
    if (py::hasattr(*dataset_, "classes")) num_classes_ = static_cast<int64_t>(py::len(dataset_->attr("classes")));
  }
  int64_t size() const override { return size_; }
  int64_t num_classes() const override { return num_classes_; }
  std::string describe(int64_t index) const override {
    py::gil_scoped_acquire gil;
    return std::string(py::str(py::type::of(*dataset_).attr("__name__"))) + "[" + std::to_string(index) + "]";
  }
  data::Example get(int64_t index, data::SampleRng&) const override {
    py::gil_scoped_acquire gil;
    try {
      py::object item = (*dataset_)[py::int_(index)];
      if (!py::isinstance<py::sequence>(item) || py::len(item) != 2) {
        throw data::DataError(describe(index) + " is not a (tensor, label) pair: the Trainer's data set must "
                              "return (input tensor, class index)");
      }
      py::sequence pair = item.cast<py::sequence>();
      py::object input = pair[0];
      if (!THPVariable_Check(input.ptr())) {
        throw data::DataError(describe(index) + " returned a " + std::string(py::str(py::type::of(input).attr("__name__"))) +
                              " as input: return a tensor (add torchvision's transforms.ToTensor())");
      }
      data::Example e;
      e.data = input.cast<torch::Tensor>().contiguous();
      e.label = py::int_(pair[1]).cast<int64_t>();
      return e;
    } catch (py::error_already_set& e) {
      throw data::DataError(describe(index) + " raised " + e.what());
    }
  }

 private:
  PyRef dataset_;
  int64_t size_ = 0;
  int64_t num_classes_ = 0;
};

#define PAISOAR_PIPELINE_ARGS                                                                      \
  py::arg("transforms") = std::vector<Step>{}, py::arg("channels") = 3,                            \
  py::arg("mean") = std::vector<float>{}, py::arg("std") = std::vector<float>{},                   \
  py::arg("keep_uint8") = false

}  // namespace

void bind_data(py::module_& m) {
  using data::Dataset;
  py::class_<Dataset, std::shared_ptr<Dataset>>(m, "Dataset")
      .def("__len__", &Dataset::size)
      .def_property_readonly("num_classes", &Dataset::num_classes)
      .def("describe", &Dataset::describe)
      .def(
          "get",
          [](const Dataset& d, int64_t index, uint64_t seed, uint64_t epoch) {
            TORCH_CHECK_INDEX(index >= 0 && index < d.size(), "index ", index, " is outside [0, ", d.size(), ")");
            data::SampleRng rng(seed, epoch, static_cast<uint64_t>(index));
            data::Example e;
            {
              py::gil_scoped_release release;
              e = d.get(index, rng);
            }
            return py::make_tuple(e.data, e.label);
          },
          py::arg("index"), py::arg("seed") = 0, py::arg("epoch") = 0);

  py::class_<PythonDataset, Dataset, std::shared_ptr<PythonDataset>>(m, "PythonDataset")
      .def(py::init<py::object>(), py::arg("dataset"),
           "A map-style torch Dataset of (tensor, label) as a C++ data set (for paisoar.train).");

  py::class_<data::ImageFolder, Dataset, std::shared_ptr<data::ImageFolder>>(m, "ImageFolder")
      .def(py::init([](const std::string& root, const std::vector<Step>& steps, int64_t channels,
                       std::vector<float> mean, std::vector<float> std, bool keep_uint8) {
             return std::make_shared<data::ImageFolder>(root, make_pipeline(steps, channels, mean, std, keep_uint8));
           }),
           py::arg("root"), PAISOAR_PIPELINE_ARGS)
      .def_property_readonly("classes", &data::ImageFolder::classes)
      .def_property_readonly("samples", &data::ImageFolder::files);

  py::class_<data::ShardDataset, Dataset, std::shared_ptr<data::ShardDataset>>(m, "RecordShards")
      .def(py::init([](const std::string& dir, const std::vector<Step>& steps, int64_t channels,
                       std::vector<float> mean, std::vector<float> std, bool keep_uint8) {
             return std::make_shared<data::ShardDataset>(dir, make_pipeline(steps, channels, mean, std, keep_uint8));
           }),
           py::arg("dir"), PAISOAR_PIPELINE_ARGS)
      .def_property_readonly("classes", [](const data::ShardDataset& d) { return d.manifest().classes; });

  py::class_<data::IdxDataset, Dataset, std::shared_ptr<data::IdxDataset>>(m, "IdxDataset")
      .def(py::init([](const std::string& images, const std::string& labels, const std::vector<Step>& steps,
                       std::vector<float> mean, std::vector<float> std, int64_t num_classes, int64_t limit) {
             data::IdxDatasetOptions options;
             options.num_classes = num_classes;
             options.limit = limit;
             return std::make_shared<data::IdxDataset>(images, labels, make_pipeline(steps, 1, mean, std, false),
                                                       options);
           }),
           py::arg("images"), py::arg("labels"), py::arg("transforms") = std::vector<Step>{},
           py::arg("mean") = std::vector<float>{}, py::arg("std") = std::vector<float>{},
           py::arg("num_classes") = 10, py::arg("limit") = 0);

  py::class_<data::DataLoader>(m, "DataLoader")
      .def(py::init([](std::shared_ptr<Dataset> dataset, int64_t batch_size, int64_t workers,
                       int64_t prefetch_factor, bool shuffle, uint64_t seed, bool drop_last, int64_t rank,
                       int64_t world_size, const std::string& on_error, bool pin_memory) {
             data::DataLoaderOptions o;
             o.batch_size = batch_size;
             o.workers = workers;
             o.prefetch_factor = prefetch_factor;
             o.shuffle = shuffle;
             o.seed = seed;
             o.drop_last = drop_last;
             o.rank = rank;
             o.world_size = world_size;
             o.on_error = on_error_named(on_error);
             o.pin_memory = pin_memory;
             return std::make_unique<data::DataLoader>(std::move(dataset), o);
           }),
           py::arg("dataset"), py::arg("batch_size"), py::arg("workers"), py::arg("prefetch_factor"),
           py::arg("shuffle"), py::arg("seed"), py::arg("drop_last"), py::arg("rank"), py::arg("world_size"),
           py::arg("on_error"), py::arg("pin_memory"))
      .def("start_epoch", &data::DataLoader::start_epoch, py::arg("epoch"), py::arg("first_batch") = 0,
           py::call_guard<py::gil_scoped_release>())
      .def("next",
           [](data::DataLoader& loader) -> py::object {
             std::optional<data::Batch> batch;
             {
               py::gil_scoped_release release;
               batch = loader.next();
             }
             if (!batch) return py::none();
             return py::make_tuple(batch->data, batch->labels, batch->indices, batch->epoch, batch->index);
           })
      .def("position",
           [](const data::DataLoader& loader) {
             const auto p = loader.position();
             return py::make_tuple(p.epoch, p.batch);
           })
      .def("batches_per_epoch", &data::DataLoader::batches_per_epoch)
      .def("stats", [](const data::DataLoader& loader) {
        const auto& s = loader.stats();
        py::dict d;
        d["batches"] = s.batches;
        d["skipped"] = s.skipped;
        d["total_wait_s"] = s.total_wait_s;
        d["last_wait_s"] = s.last_wait_s;
        return d;
      });

  m.def(
      "sampler_indices",
      [](int64_t dataset_size, int64_t epoch, int64_t rank, int64_t world_size, bool shuffle, uint64_t seed,
         bool drop_last) {
        data::SamplerOptions o;
        o.rank = rank;
        o.world_size = world_size;
        o.shuffle = shuffle;
        o.seed = seed;
        o.drop_last = drop_last;
        return data::DistributedSampler(dataset_size, o).indices(epoch);
      },
      py::arg("dataset_size"), py::arg("epoch"), py::arg("rank"), py::arg("world_size"), py::arg("shuffle"),
      py::arg("seed"), py::arg("drop_last"),
      "This rank's indices for `epoch`: torch's DistributedSampler order.");
}

}  // namespace paisoar::python
