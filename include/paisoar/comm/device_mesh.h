// DeviceMesh: the world's ranks laid out as an N-D grid (e.g. data x tensor)
// with one subgroup per dimension, the basis of hybrid parallelism.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "paisoar/comm/communicator.h"

namespace paisoar::comm {

// Ranks are laid out row-major: the last dimension varies fastest, so with
// shape {data=2, tensor=2} ranks 0,1 form one tensor-parallel group.
// Constructing a mesh is collective over `world`: every rank builds the same mesh.
class DeviceMesh {
 public:
  // Throws c10::ValueError when the product of `shape` is not world->size()
  // or names are missing/duplicated (names default to "dim0", "dim1", ...).
  DeviceMesh(std::shared_ptr<Communicator> world, std::vector<int> shape,
             std::vector<std::string> names = {});

  int ndim() const { return static_cast<int>(shape_.size()); }
  const std::vector<int>& shape() const { return shape_; }
  const std::vector<std::string>& names() const { return names_; }
  // This rank's coordinate in each dimension.
  const std::vector<int>& coordinate() const { return coord_; }
  // The group of ranks that differ from this one only along `dim`.
  std::shared_ptr<Communicator> group(int dim) const;
  std::shared_ptr<Communicator> group(const std::string& name) const;
  int dim_index(const std::string& name) const;
  // World rank at a coordinate.
  int rank_at(const std::vector<int>& coordinate) const;
  std::shared_ptr<Communicator> world() const { return world_; }

 private:
  std::shared_ptr<Communicator> world_;
  std::vector<int> shape_;
  std::vector<std::string> names_;
  std::vector<int> coord_;
  std::vector<std::shared_ptr<Communicator>> groups_;
};

}  // namespace paisoar::comm
