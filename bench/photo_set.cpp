// make_photo_set: each image is a function of (seed, index) only, so the set
// is the same on every machine and for any number of threads.
#include "bench/photo_set.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "paisoar/data/image.h"
#include "paisoar/data/image_codec.h"
#include "paisoar/data/sample_rng.h"

namespace paisoar::bench {
namespace {

namespace fs = std::filesystem;
using data::Image;
using data::SampleRng;

uint8_t clamp_byte(double v) { return static_cast<uint8_t>(std::clamp(v, 0.0, 255.0)); }

Image make_photo(uint64_t seed, int64_t index, double scale) {
  SampleRng rng(seed, 0, static_cast<uint64_t>(index));
  const int64_t w = static_cast<int64_t>(rng.uniform_int(400, 600) * scale);
  const int64_t h = static_cast<int64_t>(rng.uniform_int(300, 450) * scale);
  Image img(h, w, 3);
  double top[3], bottom[3];
  for (int c = 0; c < 3; ++c) {
    top[c] = rng.uniform(40, 230);
    bottom[c] = rng.uniform(20, 200);
  }
  struct Blob {
    double cx, cy, rx, ry, color[3], softness;
  };
  std::vector<Blob> blobs(static_cast<size_t>(rng.uniform_int(5, 12)));
  for (auto& b : blobs) {
    b.cx = rng.uniform(0, w);
    b.cy = rng.uniform(0, h);
    b.rx = rng.uniform(20 * scale, w / 3.0);
    b.ry = rng.uniform(20 * scale, h / 3.0);
    for (double& c : b.color) c = rng.uniform(0, 255);
    b.softness = rng.uniform(0.05, 0.4);
  }
  // A patch of fine texture (foliage, fabric), where JPEG spends its bits.
  const double tx = rng.uniform(0, w), ty = rng.uniform(0, h), tr = rng.uniform(40, 140) * scale;
  const double fx = rng.uniform(0.3, 1.2), fy = rng.uniform(0.3, 1.2);
  for (int64_t y = 0; y < h; ++y) {
    const double t = static_cast<double>(y) / h;
    for (int64_t x = 0; x < w; ++x) {
      double px[3];
      for (int c = 0; c < 3; ++c) px[c] = top[c] * (1 - t) + bottom[c] * t;
      for (const auto& b : blobs) {
        const double dx = (x - b.cx) / b.rx, dy = (y - b.cy) / b.ry;
        const double d = std::sqrt(dx * dx + dy * dy);
        if (d >= 1 + b.softness) continue;
        const double a = d <= 1 - b.softness ? 1.0 : (1 + b.softness - d) / (2 * b.softness);
        for (int c = 0; c < 3; ++c) px[c] = px[c] * (1 - a) + b.color[c] * a;
      }
      const double ddx = x - tx, ddy = y - ty;
      if (ddx * ddx + ddy * ddy < tr * tr) {
        const double v = 40 * std::sin(x * fx) * std::cos(y * fy);
        for (double& p : px) p += v;
      }
      const double grain = static_cast<double>(static_cast<int64_t>(rng.next_u64() % 17) - 8);
      for (int c = 0; c < 3; ++c) img.at(y, x, c) = clamp_byte(px[c] + grain);
    }
  }
  return img;
}

std::string stamp_of(const PhotoSetOptions& o) {
  return "images=" + std::to_string(o.images) + " classes=" + std::to_string(o.classes) +
         " seed=" + std::to_string(o.seed) + " quality=" + std::to_string(o.quality) +
         (o.scale == 1.0 ? "" : " scale=" + std::to_string(o.scale)) + " v1\n";
}

}  // namespace

uint64_t make_photo_set(const std::string& root, const PhotoSetOptions& options) {
  const fs::path stamp_path = fs::path(root) / ".photo_set";
  const std::string stamp = stamp_of(options);
  uint64_t existing = 0;
  if (std::ifstream in{stamp_path}; in) {
    std::string line;
    std::getline(in, line);
    if (line + "\n" == stamp) {
      for (const auto& e : fs::recursive_directory_iterator(root)) {
        if (e.is_regular_file() && e.path().extension() == ".jpg") existing += e.file_size();
      }
      return existing;
    }
  }
  fs::remove_all(root);
  for (int64_t c = 0; c < options.classes; ++c) {
    char name[32];
    std::snprintf(name, sizeof(name), "class_%02lld", static_cast<long long>(c));
    fs::create_directories(fs::path(root) / name);
  }
  std::atomic<int64_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::vector<std::thread> threads;
  std::exception_ptr error;
  std::mutex error_mutex;
  for (int64_t t = 0; t < std::max<int64_t>(1, options.threads); ++t) {
    threads.emplace_back([&] {
      try {
        for (int64_t i; (i = next++) < options.images;) {
          const auto jpeg = data::encode_jpeg(make_photo(options.seed, i, options.scale), options.quality);
          char name[64];
          std::snprintf(name, sizeof(name), "class_%02lld/%06lld.jpg",
                        static_cast<long long>(i % options.classes), static_cast<long long>(i));
          std::ofstream out(fs::path(root) / name, std::ios::binary);
          out.write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
          if (!out) throw std::runtime_error("cannot write " + (fs::path(root) / name).string());
          bytes += jpeg.size();
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = options.images;
      }
    });
  }
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  std::ofstream(stamp_path) << stamp;
  return bytes;
}

}  // namespace paisoar::bench
