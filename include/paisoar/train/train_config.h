// TrainConfig: everything `paisoar train --config` and the Trainer read, as
// one struct with documented defaults. The YAML layout mirrors the struct
// (model:, data:, train:, optimizer:, schedule:, amp:, distributed:, zero:,
// parallel:, activation_checkpointing:, checkpoint:, profiler:, eval:); configs/fashion_mnist.yaml is the example.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "paisoar/data/image_codec.h"
#include "paisoar/hybrid/parallel_layout.h"
#include "paisoar/pipeline/schedule.h"
#include "paisoar/train/config_schema.h"

namespace paisoar::train {

// The keys with a fixed set of choices, parsed once by the schema: the YAML
// text is each value's name (name_of), which dump_config writes back.
enum class OnBadSample { Raise, Skip };             // data.on_error: raise, skip
enum class DecayShape { Constant, Cosine, Polynomial };  // schedule.decay: constant, cosine, polynomial
enum class AmpDtype { Auto, BF16, FP16, FP32 };     // amp.dtype: auto, bf16, fp16, fp32
enum class OnCheckpointError { Stop, Warn };        // checkpoint.on_error: stop, warn
// parallel.schedule is a pipeline::Schedule: 1f1b (OneFOneB), gpipe (GPipe).

const char* name_of(OnBadSample v);
const char* name_of(DecayShape v);
const char* name_of(AmpDtype v);
const char* name_of(OnCheckpointError v);

struct ModelConfig {
  std::string name = "fashion_cnn";  // fashion_cnn, fashion_cnn_bn, mlp, resnet18, resnet50, vgg16, gpt
  int64_t num_classes = 10;
  // mlp: the hidden layers' widths (empty: 512, 256). With parallel.tensor an
  // even number: each pair is split Megatron-style (column-, then row-parallel).
  std::vector<int64_t> hidden;
  // gpt (models::GptOptions; the vocabulary is the 256 byte values of
  // data.format text): blocks, heads, width, and the tokens per sample.
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  int64_t block_size = 128;
};

struct DataConfig {
  std::string format = "idx";  // idx (MNIST-style files), folder (ImageFolder), shards, text (gpt's bytes)
  std::string path = "/usr/share/datasets/fashion-mnist";
  std::string eval_path;       // folder/shards: the evaluation set ("": none)
  int64_t train_limit = 0;     // use the first N training samples (0: all)
  int64_t eval_limit = 0;      // score the first N evaluation samples (0: all)
  int64_t workers = 1;         // loader threads per rank
  int64_t prefetch_factor = 2;
  bool augment = false;        // idx: RandomAffine; images: RandomResizedCrop + flip
  int64_t image_size = 224;    // folder/shards: the crop side
  int64_t max_image_pixels = data::kDefaultMaxImagePixels;  // folder/shards: larger images are refused (Pillow's limit; 0: none)
  OnBadSample on_error = OnBadSample::Raise;  // a bad sample: raise (stop the run) or skip (drop, count)
};

struct LoopConfig {
  int64_t epochs = 1;
  int64_t max_steps = 0;          // stop after this many optimizer steps (0: epochs decide)
  int64_t batch_size = 128;       // global: split evenly over the ranks
  int64_t grad_accumulation = 1;  // micro-batches per optimizer step
  int64_t log_every = 20;         // steps between progress lines (non-TTY)
};

struct OptimizerConfig {
  std::string name = "sgd";  // sgd, adamw, lars, lamb
  double lr = 0.05;          // for a global batch of lr_batch; scaled linearly
  int64_t lr_batch = 64;
  double momentum = 0.9;
  double weight_decay = 0.0;
  double clip_grad_norm = 5.0;  // 0: no clipping
};

struct ScheduleConfig {
  DecayShape decay = DecayShape::Cosine;
  int64_t warmup_steps = 20;
};

struct AmpConfig {
  // auto (bf16 on CUDA and on CPUs with AVX512-BF16/AMX, fp32 elsewhere:
  // amp/dtype_choice.h), bf16 (autocast), fp16 (autocast + loss scaling), fp32.
  AmpDtype dtype = AmpDtype::Auto;
  double init_scale = 65536.0;     // fp16 loss scaling
  int64_t growth_interval = 2000;
  bool skip_nonfinite = false;     // skip a step with a non-finite loss instead of stopping
  // The precision policy: model regions (amp/precision_regions.h) matching one
  // of these glob patterns run in fp32, or in the low precision; fp32 wins.
  std::vector<std::string> fp32_modules;
  std::vector<std::string> low_modules;
};

struct DistributedConfig {
  // What carries CPU tensors between ranks: auto (shared memory when every
  // rank is on this host, else Gloo), shm, gloo, or nccl. PAISOAR_COMM_BACKEND
  // overrides it.
  std::string backend = "auto";
  double bucket_cap_mb = 25.0;
  std::string compression = "none";  // none, fp16, bf16, int8, powersgd
  bool overlap = true;
};

struct ZeroConfig {
  // 0: plain DDP; 1: optimizer state sharded over the ranks; 2: + gradients;
  // 3: + parameters (the model must be a zero::LayerList; the zoo builds mlp
  // and fashion_cnn as one). See docs/ZERO.md.
  int64_t stage = 0;
  bool prefetch = true;  // stage 3: gather the next layer while this one computes
};

// Memory before the first step (docs/TROUBLESHOOTING.md, out of memory):
// each rank's peak is predicted from one micro-batch's forward and backward
// and the parameter, gradient and optimizer-state bytes by ZeRO stage, and a
// run that would not fit stops before training with the changes that fit.
struct MemoryConfig {
  bool predict = true;     // false: no prediction, no check
  double budget_mb = 0;    // per rank; 0: the device's free memory (CPU: shared by the node's ranks)
};

// Model parallelism (docs/PARALLEL.md): the ranks as data x pipeline x
// tensor, with data x pipeline x tensor = the world size.
struct ParallelConfig {
  // `parallel: auto` (or parallel.auto: true): the planner (paisoar plan)
  // chooses every key below, zero.stage, train.grad_accumulation and
  // activation_checkpointing, and the run trains its fastest plan that fits.
  bool automatic = false;
  int64_t data = 0;      // model replicas (DDP or ZeRO 1-2 between them); 0: world / (pipeline x tensor)
  int64_t pipeline = 1;  // stages: the model's layers split by the profiled partition (mlp, fashion_cnn*)
  int64_t tensor = 1;    // ranks each layer is split across, Megatron-style (model.name mlp)
  int64_t micro_batches = 1;      // pipeline: micro-batches per step (replaces train.grad_accumulation)
  pipeline::Schedule schedule = pipeline::Schedule::OneFOneB;  // pipeline: 1f1b or gpipe
};

struct CheckpointConfig {
  std::string dir;          // "": <run_dir>/checkpoints
  int64_t every_steps = 0;  // 0: only at the end
  int64_t keep_last = 3;
  bool resume = true;       // start from the newest complete checkpoint in dir
  OnCheckpointError on_error = OnCheckpointError::Stop;  // a failed write: stop (every rank throws) or warn (rank 0 warns, training goes on)
  bool async = false;       // the step waits only for a copy to host memory; a background thread writes
};

struct ProfilerConfig {
  bool enabled = true;
  int64_t trace_start_step = -1;  // first step of the Chrome-trace window (-1: none)
  int64_t trace_steps = 5;
  bool op_profile = false;        // LibTorch's per-op trace for the same window
  // Per-rank memory table at the end (parameters, gradients, optimizer state,
  // peak activations, allocator, resident); on the CPU the peak needs the
  // counting allocator, which this installs for the process.
  bool memory = true;
};

struct LoggingConfig {
  // TensorBoard event files from rank 0: "" or "false" (off), "true"
  // (<run_dir>/tensorboard), or a directory. Scalars every train.log_every steps.
  std::string tensorboard;
  // The directory `tensorboard` names for `run_dir`, "" when off.
  std::string tensorboard_dir(const std::string& run_dir) const {
    if (tensorboard.empty() || tensorboard == "false") return "";
    return tensorboard == "true" ? run_dir + "/tensorboard" : tensorboard;
  }
};

struct EvalConfig {
  int64_t every_epochs = 1;       // 0: only at the end
  int64_t every_steps = 0;        // also every N optimizer steps (0: off)
  double target_accuracy = 0.0;   // report the time to reach it (percent; 0: none)
  bool stop_at_target = false;    // end the run at the first evaluation that reaches it
};

struct TrainConfig {
  int64_t seed = 0;
  std::string run_dir = "runs/paisoar";
  // Where `paisoar train` puts the model: auto (this rank's GPU when one is
  // visible, else the CPU), cpu, or cuda (an error without a GPU). A user's
  // own model trains where the user put it.
  std::string device = "auto";
  ModelConfig model;
  DataConfig data;
  LoopConfig train;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  AmpConfig amp;
  DistributedConfig distributed;
  ZeroConfig zero;
  ParallelConfig parallel;
  // Model regions (amp::in_region names, glob patterns such as "layer*")
  // whose activations are recomputed in backward instead of kept.
  std::vector<std::string> activation_checkpointing;
  MemoryConfig memory;
  CheckpointConfig checkpoint;
  ProfilerConfig profiler;
  EvalConfig eval;
  LoggingConfig logging;
};

// The schema bound to `config`'s fields (which must outlive it).
ConfigSchema schema_for(TrainConfig& config);

// Checks the values together (ranges, batch divisible by ranks x accumulation).
// Throws ConfigError naming the key.
void validate(const TrainConfig& config, int64_t world_size);

// parallel.data/pipeline/tensor with data 0 resolved against `world_size`
// (the layout's check is validate's).
hybrid::ParallelLayout parallel_layout(const TrainConfig& config, int64_t world_size);

// Reads `path` (may be empty: defaults) then applies each "key=value".
TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

std::string dump_config(const TrainConfig& config);

// dump_config()'s text flattened to key -> value ("optimizer.lr" -> "0.1").
std::map<std::string, std::string> flat_config(const std::string& dumped);

// A setting that differs between two dump_config() texts.
struct ConfigChange {
  std::string key, was, now;
};
std::vector<ConfigChange> config_changes(const std::string& was, const std::string& now);

// Whether a resume can continue a run made with another value of `key`: not
// for what fixes the sample order, the step count or the model
// (train.batch_size, seed, data.path, data.format, data.train_limit,
// model.*); yes for the rest (the layout, the optimizer, the loader's
// threads, logging, ...).
bool resume_takes_change(const std::string& key);

}  // namespace paisoar::train
