// libFuzzer target: image decoding (JPEG, PNG, binary PGM/PPM) as the data
// pipeline does it: read_image_info, then a region decode that may shrink a
// JPEG in the DCT, then a whole decode to gray. The data sets add the file's
// name to these errors; here they must be DataError and say what is wrong.
#include "paisoar/data/data_error.h"
#include "paisoar/data/image_codec.h"
#include "tests/fuzz/targets/fuzz_support.h"

using namespace paisoar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  data::ImageInfo info;
  if (!fuzz::reads_or_refuses<data::DataError>([&] { info = data::read_image_info(data, size); }, {})) return 0;
  if (info.height <= 0 || info.width <= 0) {
    fuzz::finding("read_image_info accepted an empty image: " + std::to_string(info.height) + "x" +
                  std::to_string(info.width));
  }
  // The centre half, decoded at a third of its size or more (a crop that
  // ends smaller than it starts), in RGB.
  data::DecodeOptions crop;
  crop.region = {info.height / 4, info.width / 4, std::max<int64_t>(1, info.height / 2),
                 std::max<int64_t>(1, info.width / 2)};
  crop.min_height = std::max<int64_t>(1, crop.region.height / 3);
  crop.min_width = std::max<int64_t>(1, crop.region.width / 3);
  crop.channels = 3;
  fuzz::reads_or_refuses<data::DataError>(
      [&] {
        const data::Image image = data::decode_image(data, size, crop);
        if (image.height < crop.min_height || image.width < crop.min_width || image.channels != 3 ||
            image.pixels.size() != static_cast<size_t>(image.height * image.width * 3)) {
          fuzz::finding("the region decode returned " + std::to_string(image.height) + "x" +
                        std::to_string(image.width) + "x" + std::to_string(image.channels));
        }
      },
      {});
  data::DecodeOptions whole;
  whole.channels = 1;
  fuzz::reads_or_refuses<data::DataError>(
      [&] {
        const data::Image image = data::decode_image(data, size, whole);
        if (image.height != info.height || image.width != info.width || image.channels != 1) {
          fuzz::finding("read_image_info says " + std::to_string(info.height) + "x" + std::to_string(info.width) +
                        ", the decode returned " + std::to_string(image.height) + "x" +
                        std::to_string(image.width) + "x" + std::to_string(image.channels));
        }
      },
      {});
  return 0;
}
