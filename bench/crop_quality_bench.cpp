// `paisoar bench crop-quality`: is the data pipeline's speed bought with image
// quality? The same RandomResizedCrop boxes of the bench's photo set, made by
// ours (region + DCT-scaled decode, bilinear resize without antialiasing) and
// by torchvision (full decode, antialiased bilinear), each compared by PSNR with
// an exact area-averaged reference (bench/crop_quality_peer.py).
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/photo_set.h"
#include "bench/python_peer.h"
#include "paisoar/data/folder_scan.h"
#include "paisoar/data/image_codec.h"
#include "paisoar/data/image_pipeline.h"

namespace paisoar::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace paisoar::data;

struct CropQualityOptions {
  int64_t images = 200;
  int64_t size = 224;
  double min_scale = 0.08;  // RandomResizedCrop's area range, as torchvision's default
  double photo_scale = 1.0;  // photo sides x this (bench::PhotoSetOptions::scale)
  std::string dir = (fs::temp_directory_path() / "paisoar_bench_crop_quality").string();
  std::string peer_script;
  std::string json = "crop_quality.json";
};

// A CropResize whose plan is given: the box the comparison fixes.
class FixedCrop : public CropResize {
 public:
  explicit FixedCrop(CropPlan plan) : plan_(plan) {}
  CropPlan plan(int64_t, int64_t, SampleRng&) const override { return plan_; }

 private:
  CropPlan plan_;
};

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

int run_crop_quality(const CropQualityOptions& o) {
  const auto peer = bench::find_python_peer("crop_quality_peer.py", o.peer_script);
  if (!peer.ok()) throw std::runtime_error("bench crop-quality: " + peer.missing);
  const std::string photos = (fs::path(o.dir) / "photos").string();
  const std::string crops = (fs::path(o.dir) / "crops").string();
  bench::PhotoSetOptions photo;
  photo.images = o.images;
  photo.scale = o.photo_scale;
  bench::make_photo_set(photos, photo);
  fs::create_directories(crops);
  const RandomResizedCrop boxes(o.size, o.size, {o.min_scale, 1.0});
  ToTensorOptions keep;
  keep.keep_uint8 = true;
  json manifest = {{"size", o.size}, {"crops", json::array()}};
  const auto files = scan_image_folder(photos, nullptr);  // (path, class) in sorted order
  for (size_t i = 0; i < files.size(); ++i) {
    const auto bytes = read_all(files[i].first);
    const ImageInfo info = read_image_info(bytes.data(), bytes.size());
    SampleRng rng(7, 0, i);
    const CropPlan plan = boxes.plan(info.height, info.width, rng);
    const ImagePipeline ours({std::make_shared<FixedCrop>(plan)}, keep);
    SampleRng unused(0, 0, 0);
    const torch::Tensor crop = ours(bytes.data(), bytes.size(), unused).contiguous();
    const std::string out = (fs::path(crops) / (std::to_string(i) + ".u8")).string();
    std::ofstream(out, std::ios::binary).write(reinterpret_cast<const char*>(crop.data_ptr<uint8_t>()), crop.numel());
    manifest["crops"].push_back(json{{"jpeg", files[i].first}, {"ours", out}, {"top", plan.region.top},
                                     {"left", plan.region.left}, {"height", plan.region.height},
                                     {"width", plan.region.width}});
  }
  const std::string manifest_path = (fs::path(o.dir) / "manifest.json").string();
  std::ofstream(manifest_path) << manifest.dump() << "\n";
  auto child = bench::run_child({peer.python, peer.script, "--manifest", manifest_path});
  if (!child.status.success()) {
    throw std::runtime_error("bench crop-quality: the peer " + child.status.describe() + ": " +
                             child.err.substr(child.err.size() > 3000 ? child.err.size() - 3000 : 0));
  }
  json result = json::parse(bench::last_line(child.out));
  std::printf("paisoar bench crop-quality: %zu RandomResizedCrop boxes (scale %.2f-1) of the photo set "
              "(sides x%.1f) to %lldx%lld; PSNR in dB against an exact area average (higher is closer)\n",
              files.size(), o.min_scale, o.photo_scale, static_cast<long long>(o.size), static_cast<long long>(o.size));
  std::printf("%-18s %14s %14s %16s\n", "crops", "paisoar", "torchvision", "paisoar vs tv");
  for (const auto& g : result.at("groups")) {
    std::printf("%-18s %14.2f %14.2f %16.2f\n", g.at("group").get<std::string>().c_str(),
                g.at("psnr_ours_vs_reference").get<double>(), g.at("psnr_torchvision_vs_reference").get<double>(),
                g.at("psnr_ours_vs_torchvision").get<double>());
  }
  result["images"] = files.size();
  result["size"] = o.size;
  result["photo_scale"] = o.photo_scale;
  std::ofstream(o.json) << result.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_crop_quality_command(CLI::App& bench) {
  auto o = std::make_shared<CropQualityOptions>();
  auto* cmd = bench.add_subcommand("crop-quality", "image quality of our fused crop-decode vs torchvision's, against an exact area average");
  cmd->add_option("--images", o->images, "photos (and crops)")->check(CLI::Range(1, 100000));
  cmd->add_option("--size", o->size, "crop output side")->check(CLI::Range(8, 4096));
  cmd->add_option("--min-scale", o->min_scale, "smallest crop area fraction")->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--photo-scale", o->photo_scale, "photo sides x this (1: about 500x375)")
      ->check(CLI::Range(0.5, 8.0));
  cmd->add_option("--dir", o->dir, "where the photos and crops are kept");
  cmd->add_option("--peer-script", o->peer_script, "the reference (default: bench/crop_quality_peer.py)");
  cmd->add_option("--json", o->json, "where to write the results");
  return [o](int, char**) { return run_crop_quality(*o); };
}

}  // namespace paisoar::app
