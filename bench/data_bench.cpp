// `paisoar bench data`: samples/s of the data pipeline, ours next to
// torchvision's ImageFolder + DataLoader and Meta's SPDL (bench/data_spdl_peer.py,
// CPU only) with the same workers, batch and transforms (RandomResizedCrop(224),
// horizontal flip, ToTensor + Normalize) in the same run; ours also from record shards of the same images, and the
// IDX loader on Fashion-MNIST next to torchvision's FashionMNIST. The JPEGs
// are generated here (bench/photo_set.h), never downloaded.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/measure_pair.h"
#include "bench/photo_set.h"
#include "bench/python_peer.h"
#include "paisoar/data/convert.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/data/device_preprocess.h"
#include "paisoar/data/idx_dataset.h"
#include "paisoar/data/image_folder.h"
#include "paisoar/data/record_shards.h"
#include "paisoar/data/shard_dataset.h"

namespace paisoar::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace paisoar::data;

struct DataBenchOptions {
  int64_t images = 2000;
  std::vector<int64_t> workers = {1, 2, 4};
  int64_t batch = 64;
  int64_t size = 224;
  int repeats = 3;
  std::string dir = (fs::temp_directory_path() / "paisoar_bench_data").string();
  std::string idx_dir = "/usr/share/datasets/fashion-mnist";
  std::string peer_script;
  std::string spdl_script;
  std::string json = "data_bench.json";
  // cpu: batches as the loader hands them over. cuda: fed to the GPU, ours as
  // uint8 through pinned memory with normalise + flip on the device
  // (DevicePreprocess), torchvision's normalised on its workers, then .to(cuda).
  std::string device = "cpu";
};

// Samples/s from the first batch received to the last, as the peer counts.
// `to_device`: the device step each batch goes through (GPU mode), else none.
double loader_rate(const std::shared_ptr<const Dataset>& dataset, int64_t workers, int64_t batch,
                   uint64_t seed, const std::optional<DevicePreprocess>& to_device = std::nullopt) {
  DataLoaderOptions o;
  o.batch_size = batch;
  o.workers = workers;
  o.seed = seed;
  o.pin_memory = to_device.has_value();
  DataLoader loader(dataset, o);
  loader.start_epoch(0);
  auto first = loader.next();
  if (!first) return 0;
  torch::Tensor on_device;
  if (to_device) on_device = (*to_device)(*first);
  const auto start = std::chrono::steady_clock::now();
  int64_t samples = 0;
  while (auto b = loader.next()) {
    samples += b->data.size(0);
    if (to_device) on_device = (*to_device)(*b);
  }
  if (on_device.defined() && on_device.is_cuda()) torch::cuda::synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s > 0 ? samples / s : 0;
}

// Runs a peer script with `args` after the interpreter and script; its last line's samples_per_s.
double peer_rate(const bench::PythonPeer& peer, std::vector<std::string> args) {
  args.insert(args.begin(), {peer.python, peer.script});
  auto child = bench::run_child(args);
  if (!child.status.success()) {
    throw std::runtime_error(peer.script + " " + child.status.describe() + ": " +
                             child.err.substr(child.err.size() > 2000 ? child.err.size() - 2000 : 0));
  }
  return json::parse(bench::last_line(child.out)).at("samples_per_s").get<double>();
}

const std::vector<float> kMean = {0.485f, 0.456f, 0.406f}, kStd = {0.229f, 0.224f, 0.225f};

// RandomResizedCrop + flip + normalise; on_device: crop only, uint8 out (the
// flip and normalisation run on the device).
ImagePipeline imagenet_train_pipeline(int64_t size, bool on_device) {
  ToTensorOptions t;
  if (on_device) {
    t.keep_uint8 = true;
    return ImagePipeline({std::make_shared<RandomResizedCrop>(size, size)}, t);
  }
  t.mean = kMean;
  t.std = kStd;
  return ImagePipeline({std::make_shared<RandomResizedCrop>(size, size),
                        std::make_shared<RandomHorizontalFlip>()},
                       t);
}

struct DataRow {
  std::string source;
  int64_t workers = 0;
  std::vector<double> ours, peer, spdl;
};

int run_data_bench(const DataBenchOptions& o) {
  torch::set_num_threads(1);  // our workers use no intra-op threads; keep the consumer alike
  const auto peer = bench::find_python_peer("data_peer.py", o.peer_script);
  if (!peer.ok()) std::fprintf(stderr, "paisoar bench data: no PyTorch peer: %s\n", peer.missing.c_str());
  const auto spdl = bench::find_python_peer("data_spdl_peer.py", o.spdl_script);
  const bool spdl_runs = spdl.ok() && o.device == "cpu";
  if (!spdl.ok()) std::fprintf(stderr, "paisoar bench data: no SPDL peer: %s\n", spdl.missing.c_str());

  const std::string folder = (fs::path(o.dir) / "folder").string();
  const std::string shards = (fs::path(o.dir) / "shards").string();
  bench::PhotoSetOptions photo;
  photo.images = o.images;
  std::fprintf(stderr, "preparing %lld JPEGs in %s ...\n", static_cast<long long>(o.images), folder.c_str());
  const uint64_t jpeg_bytes = bench::make_photo_set(folder, photo);
  bool shards_ok = false;
  try {
    const auto m = read_manifest(shards);
    int64_t n = 0;
    for (int64_t r : m.records) n += r;
    shards_ok = n == o.images;
  } catch (const std::exception&) {
  }
  if (!shards_ok) {
    fs::remove_all(shards);
    ConvertOptions c;
    c.records_per_shard = 500;
    c.workers = 2;
    convert_image_folder(folder, shards, c);
  }

  const torch::Device device(o.device);
  const bool on_device = !device.is_cpu();
  if (device.is_cuda() && !torch::cuda::is_available()) {
    throw std::runtime_error("bench data: --device cuda, but no CUDA device is visible");
  }
  std::optional<DevicePreprocess> to_device;
  if (on_device) {
    DevicePreprocessOptions p;
    p.mean = kMean;
    p.std = kStd;
    p.horizontal_flip = 0.5;
    p.device = device;
    to_device.emplace(p);
  }
  auto from_folder = std::make_shared<ImageFolder>(folder, imagenet_train_pipeline(o.size, on_device));
  auto from_shards = std::make_shared<ShardDataset>(shards, imagenet_train_pipeline(o.size, on_device));
  std::shared_ptr<IdxDataset> idx;
  if (!on_device && fs::exists(fs::path(o.idx_dir) / "train-images-idx3-ubyte.gz")) {
    idx = std::make_shared<IdxDataset>((fs::path(o.idx_dir) / "train-images-idx3-ubyte.gz").string(),
                                       (fs::path(o.idx_dir) / "train-labels-idx1-ubyte.gz").string(),
                                       fashion_mnist_pipeline());
  }

  std::vector<DataRow> rows;
  for (int64_t w : o.workers) {
    DataRow f{"jpeg folder", w}, s{"jpeg shards", w}, i{"fashion-mnist idx", w};
    for (int r = 0; r < o.repeats; ++r) {
      const uint64_t seed = static_cast<uint64_t>(r);
      auto ours_first = [&] {
        f.ours.push_back(loader_rate(from_folder, w, o.batch, seed, to_device));
        s.ours.push_back(loader_rate(from_shards, w, o.batch, seed, to_device));
        if (idx) i.ours.push_back(loader_rate(idx, w, o.batch, seed));
      };
      const std::vector<std::string> common = {"--workers", std::to_string(w), "--batch", std::to_string(o.batch),
                                               "--size", std::to_string(o.size), "--seed", std::to_string(seed)};
      auto peer_runs = [&] {
        if (spdl_runs) {
          auto args = common;
          args.insert(args.end(), {"--root", folder});
          f.spdl.push_back(peer_rate(spdl, args));
        }
        if (!peer.ok()) return;
        auto args = common;
        args.insert(args.end(), {"--device", o.device, "--mode", "folder", "--root", folder});
        f.peer.push_back(peer_rate(peer, args));
        if (idx) {
          args.back() = o.idx_dir;
          args[args.size() - 3] = "idx";
          i.peer.push_back(peer_rate(peer, args));
        }
      };
      if (r % 2 == 0) { ours_first(); peer_runs(); } else { peer_runs(); ours_first(); }
      std::fprintf(stderr, "  workers %lld repeat %d: folder %.0f/s (SPDL %.0f/s, torchvision %.0f/s), shards %.0f/s\n",
                   static_cast<long long>(w), r, f.ours.back(), f.spdl.empty() ? 0.0 : f.spdl.back(),
                   f.peer.empty() ? 0.0 : f.peer.back(), s.ours.back());
    }
    rows.push_back(f);
    rows.push_back(s);
    if (idx) rows.push_back(i);
  }

  std::printf("paisoar bench data: %lld JPEGs (%.1f MB, about 500x375), batch %lld, "
              "RandomResizedCrop(%lld) + flip + normalise, delivered to %s; medians of %d runs\n",
              static_cast<long long>(o.images), jpeg_bytes / 1e6, static_cast<long long>(o.batch),
              static_cast<long long>(o.size), device.str().c_str(), o.repeats);
  std::printf("%-18s %7s %14s %11s %16s %8s %8s\n", "source", "workers", "paisoar (/s)", "SPDL (/s)",
              "torchvision (/s)", "vs SPDL", "vs tv");
  json out = {{"images", o.images}, {"jpeg_bytes", jpeg_bytes}, {"batch", o.batch}, {"size", o.size},
              {"device", device.str()},
              {"repeats", o.repeats}, {"rows", json::array()}};
  if (peer.ok()) out["peer"] = {{"python", peer.python}, {"torch", peer.torch_version}};
  if (spdl_runs) out["spdl_peer"] = spdl.script;
  std::map<int64_t, double> folder_rate;
  for (const auto& r : rows) {
    const double ours = bench::median(r.ours);
    const double theirs = r.peer.empty() ? 0.0 : bench::median(r.peer);
    const double spdl_rate = r.spdl.empty() ? 0.0 : bench::median(r.spdl);
    if (r.source == "jpeg folder") folder_rate[r.workers] = ours;
    auto rate = [](double v) { return v > 0 ? std::to_string(static_cast<int64_t>(v)) : std::string("-"); };
    auto ratio = [&](double v) { return v > 0 ? std::to_string(ours / v).substr(0, 4) + "x" : std::string("-"); };
    std::printf("%-18s %7lld %14.0f %11s %16s %8s %8s\n", r.source.c_str(), static_cast<long long>(r.workers),
                ours, rate(spdl_rate).c_str(), rate(theirs).c_str(), ratio(spdl_rate).c_str(),
                ratio(theirs).c_str());
    json row = {{"source", r.source}, {"workers", r.workers}, {"paisoar", r.ours}, {"paisoar_median", ours}};
    if (theirs > 0) row["torchvision"] = r.peer, row["torchvision_median"] = theirs, row["ratio"] = ours / theirs;
    if (spdl_rate > 0) row["spdl"] = r.spdl, row["spdl_median"] = spdl_rate, row["ratio_spdl"] = ours / spdl_rate;
    out["rows"].push_back(row);
  }
  for (const auto& r : rows) {
    if (r.source != "jpeg shards") continue;
    std::printf("shards / folder at %lld workers: %.2fx\n", static_cast<long long>(r.workers),
                bench::median(r.ours) / folder_rate[r.workers]);
  }
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_data_command(CLI::App& bench) {
  auto o = std::make_shared<DataBenchOptions>();
  auto* cmd = bench.add_subcommand("data", "data pipeline samples/s vs torchvision's DataLoader and SPDL");
  cmd->add_option("--images", o->images, "generated JPEGs")->check(CLI::Range(100, 1000000));
  cmd->add_option("--workers", o->workers, "worker counts to measure")->delimiter(',');
  cmd->add_option("--batch", o->batch, "batch size")->check(CLI::Range(1, 4096));
  cmd->add_option("--size", o->size, "RandomResizedCrop output side")->check(CLI::Range(8, 4096));
  cmd->add_option("--repeats", o->repeats, "runs per side (median kept)")->check(CLI::Range(1, 100));
  cmd->add_option("--dir", o->dir, "where the generated images and shards are kept");
  cmd->add_option("--idx-dir", o->idx_dir, "Fashion-MNIST's IDX files");
  cmd->add_option("--peer-script", o->peer_script, "the torchvision peer (default: bench/data_peer.py)");
  cmd->add_option("--spdl-script", o->spdl_script, "the SPDL peer (default: bench/data_spdl_peer.py)");
  cmd->add_option("--json", o->json, "where to write the results");
  cmd->add_option("--device", o->device, "cpu (batches as loaded) or cuda (fed to the GPU)");
  return [o](int, char**) { return run_data_bench(*o); };
}

}  // namespace paisoar::app
