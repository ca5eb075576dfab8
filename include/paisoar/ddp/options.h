// Options for data-parallel training: bucketing, overlap, unused parameters,
// buffer sync, and gradient compression. Every field has its default here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace paisoar::ddp {

enum class Compression {
  None,      // allreduce the fp32 (or the parameters' dtype) gradients
  FP16,      // cast to float16, average, cast back: half the bytes
  BF16,      // cast to bfloat16, average, cast back (Gloo reduces bf16 in fp32)
  Int8,      // int8 with one scale per bucket and rank, error feedback: a quarter
  PowerSGD,  // rank-r factors of each matrix, warm start, error feedback
};

// "none", "fp16", "bf16", "int8", "powersgd"; throws c10::ValueError naming the text.
Compression parse_compression(const std::string& text);
const char* to_string(Compression compression);

struct CompressionOptions {
  Compression type = Compression::None;
  // PowerSGD: rank of the factors. A matrix n x m is sent as r*(n+m) numbers;
  // matrices where that saves nothing, and 1-D tensors, go uncompressed.
  int powersgd_rank = 4;
  // Int8 and PowerSGD: carry what compression lost into the next step.
  bool error_feedback = true;
  // PowerSGD: seed of the initial factors (must be equal on every rank).
  uint64_t seed = 0;
};

struct DdpOptions {
  // Gradients are averaged in buckets of about this many MiB ...
  double bucket_cap_mb = 25.0;
  // ... except the first one, kept small so communication starts early.
  double first_bucket_mb = 1.0;
  // Instead of the two above, a cap per bucket (torch's bucket_cap_mb_list):
  // bucket k of a dtype/device holds about bucket_caps_mb[min(k, n - 1)] MiB.
  std::vector<double> bucket_caps_mb;
  // Start a bucket's allreduce during backward as soon as all its gradients
  // are ready. false: all buckets after backward (a baseline to compare with).
  bool overlap = true;
  // After the first synchronised step, rebuild the buckets in the order
  // gradients actually arrived (rank 0's order, so every rank agrees).
  bool rebuild_buckets = true;
  // The model's forward may leave parameters out of the loss: their gradient
  // counts as zero. false: a parameter without a gradient is an error.
  bool find_unused_parameters = false;
  // Broadcast buffers (BatchNorm running statistics) from rank 0 before each forward.
  bool broadcast_buffers = true;
  // At construction (collective): check every rank holds the same parameters
  // and buffers and copy rank 0's to the others. false: neither (torch's
  // init_sync=False; a model unpickled on every rank). The hierarchical
  // hook's choice stays collective: set hierarchical = false to build alone.
  bool init_sync = true;
  // Gradients live in the buckets: each parameter's .grad is a view of its
  // slice (no copies). false: .grad stays the tensor autograd made; the bucket
  // holds a copy, and the average is copied back into .grad (torch's default).
  bool gradient_as_bucket_view = true;
  // The autograd graph is the same every iteration: unused parameters and
  // parameters that get several gradients per backward (two forwards, reentrant
  // checkpointing) are learned in the first synchronised backward
  // (grad::EngineOptions::static_graph).
  bool static_graph = false;
  // Behave as torch's Python DDP where the two differ: a parameter without a
  // gradient raises at the next forward (with torch's wording) instead of at
  // the end of backward, and messages name Python keywords (find_unused_parameters=True).
  bool python_front_end = false;
  CompressionOptions compression;
  // Ranks on one node (the Trainer passes RankInfo::local_world_size; 0 or 1:
  // unknown, every rank averages with all others directly).
  // When ranks span several nodes (1 < ranks_per_node < world) and there is
  // no compression, buckets are averaged hierarchically: reduce-scatter in
  // the node, allreduce across nodes, allgather in the node.
  int ranks_per_node = 0;
  bool hierarchical = true;
};

}  // namespace paisoar::ddp
