// ShardLayout: unit offsets, padding to the world size, and each rank's pieces.
#include "paisoar/zero/shard_layout.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <stdexcept>

namespace paisoar::zero {

ShardLayout::ShardLayout(std::vector<int64_t> numels, std::vector<std::vector<size_t>> units, int world)
    : world_(world), numels_(std::move(numels)) {
  if (world < 1) C10_THROW_ERROR(ValueError, "ShardLayout: world size must be >= 1, got " + std::to_string(world));
  unit_of_.assign(numels_.size(), SIZE_MAX);
  offset_of_.assign(numels_.size(), 0);
  for (size_t u = 0; u < units.size(); ++u) {
    UnitLayout unit;
    unit.params = std::move(units[u]);
    for (size_t p : unit.params) {
      if (p >= numels_.size() || unit_of_[p] != SIZE_MAX) {
        C10_THROW_ERROR(ValueError, "ShardLayout: parameter index " + std::to_string(p) +
                                    " is out of range or in two units");
      }
      unit_of_[p] = u;
      offset_of_[p] = unit.numel;
      unit.offsets.push_back(unit.numel);
      unit.numel += numels_[p];
    }
    unit.chunk = (unit.numel + world - 1) / world;
    unit.padded = unit.chunk * world;
    units_.push_back(std::move(unit));
  }
  for (size_t p = 0; p < numels_.size(); ++p) {
    if (unit_of_[p] == SIZE_MAX) {
      C10_THROW_ERROR(ValueError, "ShardLayout: parameter index " + std::to_string(p) + " is in no unit");
    }
  }
}

std::vector<Piece> ShardLayout::pieces(int rank) const {
  std::vector<Piece> out;
  for (size_t u = 0; u < units_.size(); ++u) {
    const auto& unit = units_[u];
    const int64_t lo = rank * unit.chunk, hi = lo + unit.chunk;
    for (size_t k = 0; k < unit.params.size(); ++k) {
      const int64_t begin = std::max(lo, unit.offsets[k]);
      const int64_t end = std::min(hi, unit.offsets[k] + numels_[unit.params[k]]);
      if (begin >= end) continue;
      out.push_back({u, unit.params[k], begin - unit.offsets[k], begin - lo, end - begin});
    }
  }
  return out;
}

int64_t ShardLayout::total_numel() const {
  int64_t n = 0;
  for (const auto& u : units_) n += u.numel;
  return n;
}

int64_t ShardLayout::total_padded() const {
  int64_t n = 0;
  for (const auto& u : units_) n += u.padded;
  return n;
}

int64_t ShardLayout::shard_numel() const { return total_padded() / world_; }

}  // namespace paisoar::zero
