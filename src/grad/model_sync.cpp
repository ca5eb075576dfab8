// check_same_tensors: every rank's (name, dtype, shape) list allgathered and
// compared with rank 0's. broadcast_tensors: one flat broadcast per dtype.
#include "src/grad/model_sync.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

#include "paisoar/comm/communicator.h"

namespace paisoar::grad::detail {
namespace {

struct Entry {
  std::string name, dtype, shape;
};

std::string encode(const std::vector<std::pair<std::string, torch::Tensor>>& named) {
  std::ostringstream out;
  for (const auto& [name, t] : named) {
    out << name << '\t' << c10::toString(t.scalar_type()) << '\t' << t.sizes() << '\n';
  }
  return out.str();
}

std::vector<Entry> decode(const std::string& text) {
  std::vector<Entry> entries;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find('\t');
    const auto b = line.find('\t', a + 1);
    entries.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return entries;
}

// Empty when `mine` equals `root`'s list, else the first difference.
std::string first_difference(const std::string& what, int rank, const std::vector<Entry>& mine,
                             const std::vector<Entry>& root) {
  const size_t common = std::min(mine.size(), root.size());
  for (size_t i = 0; i < common; ++i) {
    const Entry& m = mine[i];
    const Entry& r = root[i];
    if (m.name != r.name) {
      return "rank " + std::to_string(rank) + "'s " + what + " #" + std::to_string(i) + " is '" +
             m.name + "', rank 0's is '" + r.name + "'";
    }
    if (m.dtype != r.dtype || m.shape != r.shape) {
      return "rank " + std::to_string(rank) + " has " + what + " '" + m.name + "' with shape " +
             m.shape + " (" + m.dtype + "), rank 0 " + r.shape + " (" + r.dtype + ")";
    }
  }
  if (mine.size() == root.size()) return "";
  const auto& longer = mine.size() > root.size() ? mine : root;
  return "rank " + std::to_string(rank) + " has " + std::to_string(mine.size()) + " " + what +
         "s, rank 0 has " + std::to_string(root.size()) + " (the first extra one is '" +
         longer[common].name + "' on rank " + std::to_string(mine.size() > root.size() ? rank : 0) +
         ")";
}

}  // namespace

void check_same_tensors(comm::Communicator& comm, const std::string& component, const std::string& what,
                        const std::vector<std::pair<std::string, torch::Tensor>>& named) {
  const int world = comm.size();
  if (world == 1) return;
  const std::string text = encode(named);
  torch::Tensor length = torch::tensor({static_cast<int64_t>(text.size())});
  std::vector<torch::Tensor> lengths(world);
  for (auto& l : lengths) l = torch::empty_like(length);
  comm.allgather(lengths, length).wait();
  int64_t longest = 0;
  for (const auto& l : lengths) longest = std::max(longest, l.item<int64_t>());
  torch::Tensor bytes = torch::zeros({longest + 1}, torch::kUInt8);
  std::copy(text.begin(), text.end(), bytes.data_ptr<uint8_t>());
  torch::Tensor all = torch::empty({world * (longest + 1)}, torch::kUInt8);
  comm.allgather_into(all, bytes).wait();
  std::vector<std::vector<Entry>> lists;
  for (int r = 0; r < world; ++r) {
    const auto* begin = all.data_ptr<uint8_t>() + r * (longest + 1);
    lists.push_back(decode(std::string(begin, begin + lengths[r].item<int64_t>())));
  }
  for (int r = 1; r < world; ++r) {
    const std::string diff = first_difference(what, r, lists[r], lists[0]);
    if (!diff.empty()) {
      C10_THROW_ERROR(Error, component + ": the model differs across ranks: " + diff +
                               ". Build the same model on every rank before wrapping it.");
    }
  }
}

void broadcast_tensors(comm::Communicator& comm, const std::vector<torch::Tensor>& tensors,
                       int root) {
  if (comm.size() == 1 || tensors.empty()) return;
  std::map<std::pair<int, std::string>, std::vector<torch::Tensor>> groups;
  std::vector<std::pair<int, std::string>> keys;  // first-seen order, equal on every rank
  for (const auto& t : tensors) {
    std::pair<int, std::string> key{static_cast<int>(t.scalar_type()), t.device().str()};
    if (!groups.count(key)) keys.push_back(key);
    groups[key].push_back(t);
  }
  torch::NoGradGuard no_grad;
  for (const auto& key : keys) {
    auto& group = groups[key];
    std::vector<torch::Tensor> flat_parts;
    for (const auto& t : group) flat_parts.push_back(t.reshape({-1}));
    torch::Tensor flat = torch::cat(flat_parts);
    comm.broadcast(flat, root).wait();
    int64_t offset = 0;
    for (auto& t : group) {
      t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

}  // namespace paisoar::grad::detail
