// A reproducible stand-in for a photo data set: JPEGs of about 500x375 (sides
// varying by up to 20%) with smooth gradients, soft shapes, texture and grain,
// so they compress like photos (tens of KB at quality 90), in an ImageFolder
// tree root/class_NN/NNNNNN.jpg. Nothing is downloaded.
#pragma once

#include <cstdint>
#include <string>

namespace paisoar::bench {

struct PhotoSetOptions {
  int64_t images = 2000;
  int64_t classes = 10;
  uint64_t seed = 1;
  int64_t threads = 2;
  int quality = 90;
  double scale = 1.0;  // sides times this (3: about 1500x1125, a phone photo's detail per crop)
};

// Writes the tree unless `root` already holds one made with the same options
// (told by root/.photo_set); returns the total JPEG bytes.
uint64_t make_photo_set(const std::string& root, const PhotoSetOptions& options);

}  // namespace paisoar::bench
