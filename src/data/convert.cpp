// convert_idx and convert_image_folder: turn each source into a
// make_record(i) callback and hand it to write_shard_set. Keys are the record's
// position, zero-padded to 8 digits ("00000042"), so shards sort and diff well.
#include "paisoar/data/convert.h"
#include "paisoar/error.h"

#include <torch/types.h>

#include <cstdio>

#include "paisoar/data/data_error.h"
#include "paisoar/data/folder_scan.h"
#include "paisoar/data/idx.h"
#include "paisoar/data/image_codec.h"
#include "paisoar/data/image_folder.h"
#include "src/data/shard_set_writer.h"

namespace paisoar::data {
namespace {

std::string record_key(int64_t i) {
  char key[24];
  std::snprintf(key, sizeof(key), "%08lld", static_cast<long long>(i));
  return key;
}

// The record extension for an image file's bytes, after checking that its
// header decodes: what the bytes are, whatever the file name says.
std::string checked_image_ext(const std::vector<uint8_t>& bytes, const std::string& path) {
  ImageInfo info;
  try {
    info = read_image_info(bytes.data(), bytes.size());
  } catch (const DataError& e) {
    throw DataError("image '" + path + "': " + error_text(e) + "; fix or remove the file and convert again");
  }
  if (info.format == ImageFormat::Jpeg) return "jpg";
  if (info.format == ImageFormat::Png) return "png";
  if (info.format == ImageFormat::Pnm) return info.channels == 1 ? "pgm" : "ppm";
  throw DataError("image '" + path +
                  "' is not JPEG, PNG or PGM/PPM; fix or remove the file and convert again");
}

}  // namespace

ConvertResult convert_idx(const std::string& images, const std::string& labels, const std::string& out_dir,
                          const ConvertOptions& options) {
  const torch::Tensor x = read_idx(images).contiguous();
  torch::Tensor y = read_idx(labels);
  if (x.scalar_type() != torch::kUInt8 || x.dim() != 3) {
    throw DataError("IDX images '" + images + "' hold " + std::string(c10::toString(x.scalar_type())) + " " +
                    c10::str(x.sizes()) + "; expected uint8 [N, height, width] (e.g. train-images-idx3-ubyte)");
  }
  if (y.dim() != 1 || !c10::isIntegralType(y.scalar_type(), /*includeBool=*/false)) {
    throw DataError("IDX labels '" + labels + "' hold " + std::string(c10::toString(y.scalar_type())) + " " +
                    c10::str(y.sizes()) + "; expected integers [N] (e.g. train-labels-idx1-ubyte)");
  }
  if (x.size(0) != y.size(0)) {
    throw DataError("IDX images '" + images + "' hold " + std::to_string(x.size(0)) + " images but labels '" +
                    labels + "' hold " + std::to_string(y.size(0)) +
                    " labels; pass the labels file that belongs to these images");
  }
  y = y.to(torch::kLong).contiguous();
  const int64_t n = x.size(0), height = x.size(1), width = x.size(2);
  const int64_t* label = y.data_ptr<int64_t>();
  int64_t max_label = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (label[i] < 0) {
      throw DataError("IDX labels '" + labels + "': label " + std::to_string(i) + " is " +
                      std::to_string(label[i]) + "; class labels must be >= 0");
    }
    max_label = std::max(max_label, label[i]);
  }
  // MNIST-style files have ten classes even when a subset lacks the last ones.
  std::vector<std::string> classes;
  for (int64_t c = 0; c < std::max<int64_t>(10, max_label + 1); ++c) classes.push_back(std::to_string(c));

  const uint8_t* pixels = x.data_ptr<uint8_t>();
  return write_shard_set(out_dir, n, std::move(classes), options, [&](int64_t i) {
    Image image(height, width, 1);
    std::copy_n(pixels + i * height * width, height * width, image.pixels.begin());
    Record r;
    r.key = record_key(i);
    r.label = label[i];
    r.ext = "pgm";
    r.payload = encode_pnm(image);
    return r;
  });
}

ConvertResult convert_image_folder(const std::string& root, const std::string& out_dir,
                                   const ConvertOptions& options) {
  std::vector<std::string> classes;
  const auto files = scan_image_folder(root, &classes);
  return write_shard_set(out_dir, static_cast<int64_t>(files.size()), std::move(classes), options,
                         [&](int64_t i) {
                           const auto& [path, label] = files[static_cast<size_t>(i)];
                           Record r;
                           r.key = record_key(i);
                           r.label = label;
                           r.payload = read_file_bytes(path);
                           r.ext = checked_image_ext(r.payload, path);
                           return r;
                         });
}

}  // namespace paisoar::data
