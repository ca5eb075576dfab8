// DeviceMesh: row-major rank grid with one subgroup per dimension.
#include "paisoar/comm/device_mesh.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace paisoar::comm {

DeviceMesh::DeviceMesh(std::shared_ptr<Communicator> world, std::vector<int> shape,
                       std::vector<std::string> names)
    : world_(std::move(world)), shape_(std::move(shape)), names_(std::move(names)) {
  std::string rendered;
  int64_t product = 1;
  for (int extent : shape_) {
    if (extent < 1) C10_THROW_ERROR(ValueError, "DeviceMesh: every dimension must be >= 1");
    product *= extent;
    rendered += (rendered.empty() ? "" : " x ") + std::to_string(extent);
  }
  if (shape_.empty() || product != world_->size()) {
    C10_THROW_ERROR(ValueError, "DeviceMesh: shape " + rendered + " = " + std::to_string(product) +
                                " ranks, but the world has " + std::to_string(world_->size()) +
                                "; choose dimensions whose product is the world size");
  }
  if (names_.empty()) {
    for (size_t d = 0; d < shape_.size(); ++d) names_.push_back("dim" + std::to_string(d));
  }
  if (names_.size() != shape_.size() ||
      std::set<std::string>(names_.begin(), names_.end()).size() != names_.size()) {
    C10_THROW_ERROR(ValueError, "DeviceMesh: give one distinct name per dimension");
  }
  // Row-major coordinate of this rank.
  coord_.assign(shape_.size(), 0);
  int rest = world_->rank();
  for (int d = ndim() - 1; d >= 0; --d) {
    coord_[d] = rest % shape_[d];
    rest /= shape_[d];
  }
  // For each dimension, every line of ranks along it becomes a group. All ranks
  // enumerate the lines in the same order, as new_group requires.
  for (int d = 0; d < ndim(); ++d) {
    std::shared_ptr<Communicator> mine;
    for (int line = 0; line < world_->size() / shape_[d]; ++line) {
      // Coordinates of the other dimensions from `line`, row-major.
      std::vector<int> base(shape_.size(), 0);
      int r = line;
      for (int e = ndim() - 1; e >= 0; --e) {
        if (e == d) continue;
        base[e] = r % shape_[e];
        r /= shape_[e];
      }
      std::vector<int> members;
      for (int i = 0; i < shape_[d]; ++i) {
        base[d] = i;
        members.push_back(rank_at(base));
      }
      auto group = world_->new_group(members);
      if (group) mine = group;
    }
    groups_.push_back(mine);
  }
}

int DeviceMesh::rank_at(const std::vector<int>& coordinate) const {
  int rank = 0;
  for (int d = 0; d < ndim(); ++d) rank = rank * shape_[d] + coordinate[d];
  return rank;
}

std::shared_ptr<Communicator> DeviceMesh::group(int dim) const {
  if (dim < 0 || dim >= ndim()) {
    C10_THROW_ERROR(IndexError, "DeviceMesh: dimension " + std::to_string(dim) + " of " +
                            std::to_string(ndim()));
  }
  return groups_[dim];
}

int DeviceMesh::dim_index(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) {
    std::string known;
    for (const auto& n : names_) known += (known.empty() ? "" : ", ") + n;
    C10_THROW_ERROR(IndexError, "DeviceMesh has no dimension '" + name + "' (it has " + known + ")");
  }
  return static_cast<int>(it - names_.begin());
}

std::shared_ptr<Communicator> DeviceMesh::group(const std::string& name) const {
  return group(dim_index(name));
}

}  // namespace paisoar::comm
