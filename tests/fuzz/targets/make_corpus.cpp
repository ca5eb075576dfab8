// Writes the fuzz targets' seed corpus, small valid inputs made by the
// project's own writers (and libjpeg/libpng for the image variants paisoar
// does not write itself), and the config's dictionary: `fuzz_make_corpus
// REPO_ROOT` fills REPO_ROOT/tests/fuzz/corpus/<reader>/ and writes
// tests/fuzz/dict/config.dict. It leaves corpus/metrics/ alone: those are a
// real run's metrics.jsonl (tests/fuzz/README.md says how they were made).
#include <cstdio>  // jpeglib.h needs FILE first

#include <jpeglib.h>
#include <png.h>
#include <torch/torch.h>

#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "paisoar/data/idx.h"
#include "paisoar/data/image_codec.h"
#include "paisoar/data/record_shards.h"
#include "paisoar/format/safetensors.h"
#include "paisoar/train/train_config.h"
#include "tests/support/file_bytes.h"
#include "tests/support/temp_dir.h"

using namespace paisoar;
namespace fs = std::filesystem;

namespace {

std::string text_of(const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }

data::Image gradient(int64_t h, int64_t w, int64_t c) {
  data::Image image(h, w, c);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t k = 0; k < c; ++k) image.at(y, x, k) = static_cast<uint8_t>(y * 16 + x * 4 + k * 80);
    }
  }
  return image;
}

// A JPEG paisoar's encoder does not make: progressive, or CMYK (Adobe-inverted).
std::string jpeg_variant(bool progressive, bool cmyk) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = 12;
  cinfo.image_height = 10;
  cinfo.input_components = cmyk ? 4 : 3;
  cinfo.in_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 60, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<uint8_t> row(12 * 4);
  while (cinfo.next_scanline < cinfo.image_height) {
    for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<uint8_t>(cinfo.next_scanline * 20 + i * 5);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&cinfo, &r, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string out(reinterpret_cast<char*>(buffer), size);
  std::free(buffer);
  return out;
}

// A PNG paisoar's encoder does not make: palette, 16-bit with alpha
// (interlaced), or 2-bit gray.
std::string png_variant(int color_type, int bit_depth, bool interlaced) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  std::string out;
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, png_size_t n) {
        static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<char*>(data), n);
      },
      nullptr);
  const int w = 9, h = 7;
  png_set_IHDR(png, info, w, h, bit_depth, color_type, interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_color palette[4] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    png_set_PLTE(png, info, palette, 4);
    png_byte alpha[4] = {255, 128, 0, 255};
    png_set_tRNS(png, info, alpha, 4, nullptr);
  }
  png_write_info(png, info);
  const int channels = color_type == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : 1;
  std::vector<uint8_t> row(static_cast<size_t>(w * channels * bit_depth + 7) / 8);
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<uint8_t>(i * 11);
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    for (auto& b : row) b &= 3;  // palette indices 0..3
  }
  const int passes = interlaced ? png_set_interlace_handling(png) : 1;
  for (int pass = 0; pass < passes; ++pass) {
    for (int y = 0; y < h; ++y) png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

// A safetensors file without paisoar's CRC keys, as Python's library writes it.
std::string python_safetensors() {
  const std::string data = std::string(24, '\x01') + std::string(4, '\x02');
  nlohmann::json header = {{"a", {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}}},
                           {"b", {{"dtype", "I16"}, {"shape", {2}}, {"data_offsets", {24, 28}}}},
                           {"__metadata__", {{"format", "pt"}}}};
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(uint64_t{text.size()} >> (8 * i));
  return out + text + data;
}

// A libFuzzer dictionary entry: the word in double quotes, escaped.
std::string dict_entry(const std::string& word) {
  std::string out = "\"";
  for (unsigned char c : word) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"\n";
}

// The config's dictionary: every part of every key, and YAML's special forms.
std::string config_dictionary() {
  train::TrainConfig config;
  std::set<std::string> words;
  for (const std::string& key : train::schema_for(config).keys()) {
    for (size_t begin = 0, dot = 0; dot != std::string::npos; begin = dot + 1) {
      dot = key.find('.', begin);
      words.insert(key.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin) + ":");
    }
  }
  for (const char* w : {".inf", "-.inf", ".nan", "~", "null", "true", "false", "0x1F", "0o17", "1e400", "-0",
                        "9223372036854775808", "-9223372036854775809", "!!str", "!!int", "!!map", "&a", "*a",
                        "<<:", "---", "...", "- ", "? ", "[", "]", "{", "}", "\"", "'", "|", ">", "#", "\t", "="}) {
    words.insert(w);
  }
  std::string out = "# Generated by fuzz_make_corpus: the config keys' parts and YAML's special forms.\n";
  for (const auto& w : words) out += dict_entry(w);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s REPO_ROOT\n", argv[0]);
    return 2;
  }
  const fs::path repo = argv[1];
  const fs::path corpus = repo / "tests/fuzz/corpus";
  auto dir = [&](const char* reader) {
    fs::remove_all(corpus / reader);
    fs::create_directories(corpus / reader);
    return corpus / reader;
  };

  // config: the example configs, every key at its default, and --set assignments.
  const fs::path config = dir("config");
  for (const auto& entry : fs::directory_iterator(repo / "configs")) {
    fs::copy_file(entry.path(), config / entry.path().filename());
  }
  fs::create_directories(repo / "tests/fuzz/dict");
  testing::write_file_bytes(repo / "tests/fuzz/dict/config.dict", config_dictionary());
  const std::string defaults = train::dump_config(train::TrainConfig{});
  testing::write_file_bytes(config / "defaults.yaml", defaults);
  std::string compact;  // the same without the help comments, so that edits land on keys and values
  for (size_t begin = 0, end = 0; begin < defaults.size(); begin = end + 1) {
    end = defaults.find('\n', begin);
    const std::string line = defaults.substr(begin, end - begin);
    compact += line.substr(0, line.find("  #")) + "\n";
  }
  testing::write_file_bytes(config / "compact.yaml", compact);
  testing::write_file_bytes(config / "sets.yaml", std::string("model:\n  name: mlp\n  hidden: [16, 8]\n") +
                                                      '\0' + "optimizer.lr=0.1" + '\0' + "amp.fp32_modules=[fc2, \"*.norm\"]" +
                                                      '\0' + "data.augment=true" + '\0' + "schedule.decay=polynomial");

  // idx: each element type, plain and one gzipped.
  const fs::path idx = dir("idx");
  data::write_idx(idx / "u8.idx", torch::arange(60, torch::kInt32).reshape({3, 4, 5}).to(torch::kUInt8));
  data::write_idx(idx / "i8.idx", torch::arange(-3, 3, torch::kInt8).reshape({2, 3}));
  data::write_idx(idx / "i16.idx", torch::arange(6, torch::kInt16));
  data::write_idx(idx / "i32.idx", torch::arange(4, torch::kInt32).reshape({1, 2, 2, 1}));
  data::write_idx(idx / "f32.idx", torch::linspace(-1, 1, 5));
  data::write_idx(idx / "f64.idx", torch::linspace(0, 1, 4, torch::kFloat64).reshape({2, 2}));
  data::write_idx(idx / "labels.idx.gz", torch::arange(10, torch::kInt32).to(torch::kUInt8));

  // image: each format and channel count paisoar writes, and variants it reads.
  const fs::path image = dir("image");
  testing::write_file_bytes(image / "rgb.jpg", text_of(data::encode_jpeg(gradient(13, 17, 3), 50)));
  testing::write_file_bytes(image / "gray.jpg", text_of(data::encode_jpeg(gradient(16, 16, 1), 80)));
  testing::write_file_bytes(image / "progressive.jpg", jpeg_variant(true, false));
  testing::write_file_bytes(image / "cmyk.jpg", jpeg_variant(false, true));
  testing::write_file_bytes(image / "rgb.png", text_of(data::encode_png(gradient(6, 5, 3))));
  testing::write_file_bytes(image / "gray.png", text_of(data::encode_png(gradient(5, 7, 1))));
  testing::write_file_bytes(image / "palette.png", png_variant(PNG_COLOR_TYPE_PALETTE, 8, false));
  testing::write_file_bytes(image / "rgba16-interlaced.png", png_variant(PNG_COLOR_TYPE_RGB_ALPHA, 16, true));
  testing::write_file_bytes(image / "gray2.png", png_variant(PNG_COLOR_TYPE_GRAY, 2, false));
  testing::write_file_bytes(image / "gray.pgm", text_of(data::encode_pnm(gradient(4, 6, 1))));
  testing::write_file_bytes(image / "rgb.ppm", text_of(data::encode_pnm(gradient(3, 2, 3))));

  // shard_index: the index, a NUL, the tar, as ShardWriter writes them.
  const fs::path shard_index = dir("shard_index");
  {
    testing::TempDir tmp("make_corpus");
    const std::string tar = tmp / "shard-000000.tar";
    data::ShardWriter writer(tar);
    writer.add({"img-0", 3, "pgm", data::encode_pnm(gradient(4, 4, 1))});
    writer.add({"img_1", 0, "jpg", {0xFF, 0xD8, 0xFF, 0xE0, 1, 2}});
    writer.add({"x", 12, "png", {}});
    writer.finish();
    testing::write_file_bytes(shard_index / "three-records",
                              testing::read_file_bytes(tar + ".idx") + '\0' + testing::read_file_bytes(tar));
  }

  // shard_manifest: dataset.json as paisoar convert writes it.
  const fs::path manifest = dir("shard_manifest");
  {
    testing::TempDir tmp("make_corpus");
    data::write_manifest(tmp.path(), {{"cat", "dog", "t-shirt/top"}, {"shard-000000.tar", "shard-000001.tar"}, {5, 2}});
    fs::copy_file(tmp / "dataset.json", manifest / "dataset.json");
  }

  // safetensors: paisoar's (with CRCs) and Python's (without).
  const fs::path safetensors = dir("safetensors");
  torch::manual_seed(0);
  format::save_safetensors(safetensors / "paisoar.safetensors",
                           {{"w", torch::randn({3, 2})},
                            {"step", torch::tensor(int64_t{7})},
                            {"h", torch::ones({2}, torch::kBFloat16)},
                            {"mask", torch::tensor({true, false})},
                            {"empty", torch::empty({0, 4})}},
                           {{"epoch", "1"}});
  testing::write_file_bytes(safetensors / "python.safetensors", python_safetensors());
  std::printf("wrote the seed corpus under %s\n", corpus.c_str());
  return 0;
}
