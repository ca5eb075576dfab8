// ShardLayout: how ZeRO cuts a model's parameters into per-rank shards. The
// parameters are grouped into units (gradient buckets for stages 1-2, layers
// for stage 3); each unit is one flat buffer, zero-padded to a multiple of the
// world size, and rank r owns chunk r of every unit. Pure arithmetic, no
// tensors are allocated here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace paisoar::zero {

struct UnitLayout {
  std::vector<size_t> params;    // parameter indices, in their order in the flat buffer
  std::vector<int64_t> offsets;  // element offset of each in the flat buffer
  int64_t numel = 0;             // sum of the parameters' numels
  int64_t padded = 0;            // numel rounded up to a multiple of the world size
  int64_t chunk = 0;             // padded / world: elements each rank owns
};

// The part of one parameter that lies in one rank's chunk of its unit.
struct Piece {
  size_t unit = 0;
  size_t param = 0;
  int64_t param_begin = 0;  // first element of the parameter (flattened) in the piece
  int64_t chunk_begin = 0;  // where the piece starts in the rank's chunk of the unit
  int64_t numel = 0;
};

class ShardLayout {
 public:
  // `numels[i]` is parameter i's element count; `units` lists every parameter
  // index exactly once. Throws c10::ValueError otherwise, or for world < 1.
  ShardLayout(std::vector<int64_t> numels, std::vector<std::vector<size_t>> units, int world);

  int world() const { return world_; }
  const std::vector<UnitLayout>& units() const { return units_; }
  const std::vector<int64_t>& numels() const { return numels_; }
  // Which unit each parameter is in, and where in its flat buffer.
  size_t unit_of(size_t param) const { return unit_of_[param]; }
  int64_t offset_of(size_t param) const { return offset_of_[param]; }
  // Rank r's pieces, by unit then by offset (non-empty ones only).
  std::vector<Piece> pieces(int rank) const;
  int64_t total_numel() const;   // parameters' elements
  int64_t total_padded() const;  // including padding; = world * shard_numel()
  int64_t shard_numel() const;   // elements every rank owns (padding included)

 private:
  int world_;
  std::vector<int64_t> numels_;
  std::vector<UnitLayout> units_;
  std::vector<size_t> unit_of_;
  std::vector<int64_t> offset_of_;
};

}  // namespace paisoar::zero
