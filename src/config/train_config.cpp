// TrainConfig's schema: the one list of keys, their types, choices and help.
#include "paisoar/train/train_config.h"

#include "paisoar/layout/placements.h"

#include <algorithm>
#include <limits>

namespace paisoar::train {
namespace {

// Each enum's YAML names, in the order the schema lists them.
const std::vector<std::pair<std::string, OnBadSample>> kBadSampleNames = {{"raise", OnBadSample::Raise},
                                                                          {"skip", OnBadSample::Skip}};
const std::vector<std::pair<std::string, DecayShape>> kDecayNames = {
    {"constant", DecayShape::Constant}, {"cosine", DecayShape::Cosine}, {"polynomial", DecayShape::Polynomial}};
const std::vector<std::pair<std::string, AmpDtype>> kAmpDtypeNames = {
    {"auto", AmpDtype::Auto}, {"bf16", AmpDtype::BF16}, {"fp16", AmpDtype::FP16}, {"fp32", AmpDtype::FP32}};
const std::vector<std::pair<std::string, pipeline::Schedule>> kScheduleNames = {
    {"1f1b", pipeline::Schedule::OneFOneB}, {"gpipe", pipeline::Schedule::GPipe}};
const std::vector<std::pair<std::string, OnCheckpointError>> kCheckpointErrorNames = {
    {"stop", OnCheckpointError::Stop}, {"warn", OnCheckpointError::Warn}};

template <typename E>
const char* name_in(const std::vector<std::pair<std::string, E>>& names, E v) {
  for (const auto& n : names) {
    if (n.second == v) return n.first.c_str();
  }
  return "?";
}

}  // namespace

const char* name_of(OnBadSample v) { return name_in(kBadSampleNames, v); }
const char* name_of(DecayShape v) { return name_in(kDecayNames, v); }
const char* name_of(AmpDtype v) { return name_in(kAmpDtypeNames, v); }
const char* name_of(OnCheckpointError v) { return name_in(kCheckpointErrorNames, v); }

ConfigSchema schema_for(TrainConfig& c) {
  // Caps where a larger value cannot be meant (it would only fail later, as an
  // allocation or an overflow, without naming the key).
  constexpr double kMax = 1e15;
  constexpr double kMaxBatch = 1 << 24;
  constexpr double kMaxWidth = 1 << 20;
  constexpr double kMaxRanks = 1 << 16;
  Range below_one = at_least(0, 1, "in [0, 1)");
  below_one.max_open = true;
  ConfigSchema s;
  s.bind("seed", &c.seed, "seeds the model, the data order and augmentation");
  s.bind("run_dir", &c.run_dir, "metrics.jsonl, traces and checkpoints go here");
  s.bind("logging.tensorboard", &c.logging.tensorboard,
         "TensorBoard event files from rank 0: true (<run_dir>/tensorboard), a directory, or false");
  s.bind("device", &c.device, "where paisoar train puts the model (auto: this rank's GPU if any)",
         {"auto", "cpu", "cuda"});
  s.bind("model.name", &c.model.name, "the reference model",
         {"fashion_cnn", "fashion_cnn_bn", "mlp", "resnet18", "resnet50", "vgg16", "gpt"});
  s.bind("model.num_classes", &c.model.num_classes, "", at_least(1, 1e6));
  s.bind("model.hidden", &c.model.hidden, "mlp: hidden layer widths ([]: 512, 256); even with parallel.tensor",
         at_least(1, kMaxWidth));
  s.bind("model.n_layer", &c.model.n_layer, "gpt: transformer blocks", at_least(1, 4096));
  s.bind("model.n_head", &c.model.n_head, "gpt: attention heads (divide n_embd)", at_least(1, 4096));
  s.bind("model.n_embd", &c.model.n_embd, "gpt: the width", at_least(1, kMaxWidth));
  s.bind("model.block_size", &c.model.block_size, "gpt: tokens per sample", at_least(1, kMaxWidth));
  s.bind("data.format", &c.data.format, "idx files, an image folder, record shards, or a text file (gpt)",
         {"idx", "folder", "shards", "text"});
  s.bind("data.path", &c.data.path, "idx: the directory with the files; else the training set (text: the file)");
  s.bind("data.eval_path", &c.data.eval_path,
         "folder/shards/text: the evaluation set (text: \"\" scores the file's last tenth, not trained on)");
  s.bind("data.train_limit", &c.data.train_limit, "first N training samples (0: all)", at_least(0, kMax, "0 (all) or more"));
  s.bind("data.eval_limit", &c.data.eval_limit, "first N evaluation samples (0: all)", at_least(0, kMax, "0 (all) or more"));
  s.bind("data.workers", &c.data.workers, "loader threads per rank",
         at_least(0, 1024, "between 0 (load in the training thread) and 1024"));
  s.bind("data.prefetch_factor", &c.data.prefetch_factor, "batches in flight per worker", at_least(1, 1024));
  s.bind("data.augment", &c.data.augment, "random affine (idx) or crop + flip (images)");
  s.bind("data.image_size", &c.data.image_size, "folder/shards: crop side", at_least(8, 8192));
  s.bind("data.max_image_pixels", &c.data.max_image_pixels,
         "folder/shards: a larger image is a bad sample, refused before decoding (Pillow's limit; 0: none)",
         at_least(0, kMax, "0 (no limit) or more"));
  s.bind("data.on_error", &c.data.on_error, "a bad sample stops the run, or is dropped and counted",
         kBadSampleNames);
  s.bind("train.epochs", &c.train.epochs, "", at_least(1, 1e6));
  s.bind("train.max_steps", &c.train.max_steps, "stop after N optimizer steps (0: epochs decide)",
         at_least(0, kMax, "0 (epochs decide) or more"));
  s.bind("train.batch_size", &c.train.batch_size, "global batch, split over the ranks", at_least(1, kMaxBatch));
  s.bind("train.grad_accumulation", &c.train.grad_accumulation, "micro-batches per step", at_least(1, kMaxBatch));
  s.bind("train.log_every", &c.train.log_every, "steps between progress lines", at_least(1));
  s.bind("optimizer.name", &c.optimizer.name, "", {"sgd", "adamw", "lars", "lamb"});
  // lr and weight_decay multiply float32 parameters: past float32's largest
  // number they cannot be converted (torch stops there with a bare message).
  Range up_to_float32 = positive(std::numeric_limits<float>::max());
  up_to_float32.words = "positive (at most 3.4e38, float32's largest number)";
  s.bind("optimizer.lr", &c.optimizer.lr, "for a global batch of lr_batch (linear scaling rule)", up_to_float32);
  s.bind("optimizer.lr_batch", &c.optimizer.lr_batch, "", at_least(1, kMaxBatch));
  s.bind("optimizer.momentum", &c.optimizer.momentum, "sgd, lars", below_one);
  s.bind("optimizer.weight_decay", &c.optimizer.weight_decay, "",
         at_least(0, std::numeric_limits<float>::max(), "0 or more (at most 3.4e38, float32's largest number)"));
  s.bind("optimizer.clip_grad_norm", &c.optimizer.clip_grad_norm, "0: off", at_least(0, kMax, "0 (off) or more"));
  s.bind("schedule.decay", &c.schedule.decay, "after warmup", kDecayNames);
  s.bind("schedule.warmup_steps", &c.schedule.warmup_steps, "linear warmup from 0", at_least(0));
  s.bind("amp.dtype", &c.amp.dtype, "autocast precision (auto: bf16 where it is fast, else fp32)",
         kAmpDtypeNames);
  s.bind("amp.init_scale", &c.amp.init_scale, "fp16 loss scaling", positive(std::numeric_limits<float>::max()));
  s.bind("amp.growth_interval", &c.amp.growth_interval, "fp16 loss scaling", at_least(1));
  s.bind("amp.skip_nonfinite", &c.amp.skip_nonfinite, "skip a non-finite loss instead of stopping");
  s.bind("amp.fp32_modules", &c.amp.fp32_modules, "model regions pinned to fp32 (glob patterns)");
  s.bind("amp.low_modules", &c.amp.low_modules, "model regions pinned to the low precision");
  s.bind("distributed.backend", &c.distributed.backend,
         "auto: shared memory between ranks on one host, else Gloo (PAISOAR_COMM_BACKEND overrides)",
         {"auto", "shm", "gloo", "nccl"});
  s.bind("distributed.bucket_cap_mb", &c.distributed.bucket_cap_mb, "", positive(1 << 20));
  s.bind("distributed.compression", &c.distributed.compression, "gradient compression hook",
         {"none", "fp16", "bf16", "int8", "powersgd"});
  s.bind("distributed.overlap", &c.distributed.overlap, "communicate during backward");
  s.bind("zero.stage", &c.zero.stage, "ZeRO: 0 off (DDP), 1 optimizer state, 2 + gradients, 3 + parameters",
         at_least(0, 3, "0 (off), 1, 2 or 3"));
  s.bind("zero.prefetch", &c.zero.prefetch, "stage 3: gather the next layer during this one");
  s.bind("parallel.auto", &c.parallel.automatic,
         "the planner chooses the layout, ZeRO stage, micro-batches and checkpointing (`parallel: auto` too)");
  s.bind("parallel.data", &c.parallel.data, "model replicas (0: world / (pipeline x tensor))",
         at_least(0, kMaxRanks, "0 (the rest of the world) or more"));
  s.bind("parallel.pipeline", &c.parallel.pipeline, "pipeline stages per replica", at_least(1, kMaxRanks));
  s.bind("parallel.tensor", &c.parallel.tensor, "tensor-parallel ranks per stage (mlp, fashion_cnn, fashion_cnn_bn, gpt)", at_least(1, kMaxRanks));
  s.bind("parallel.micro_batches", &c.parallel.micro_batches, "pipeline micro-batches per step", at_least(1, kMaxBatch));
  s.bind("parallel.schedule", &c.parallel.schedule, "pipeline schedule", kScheduleNames);
  s.bind("activation_checkpointing", &c.activation_checkpointing,
         "model regions recomputed in backward (glob patterns)");
  s.bind("memory.predict", &c.memory.predict, "predict each rank's peak before the first step; stop if over the budget");
  s.bind("memory.budget_mb", &c.memory.budget_mb, "per rank (0: what the device has free; on the CPU shared by the node's ranks)",
         at_least(0, 1e12, "0 (what the device has free) or more"));
  s.bind("checkpoint.dir", &c.checkpoint.dir, "\"\": <run_dir>/checkpoints");
  s.bind("checkpoint.every_steps", &c.checkpoint.every_steps, "0: only at the end", at_least(0, kMax, "0 (end only) or more"));
  s.bind("checkpoint.keep_last", &c.checkpoint.keep_last, "", at_least(1, 1e6));
  s.bind("checkpoint.resume", &c.checkpoint.resume, "resume from the newest complete checkpoint");
  s.bind("checkpoint.async", &c.checkpoint.async,
         "the step waits only for a copy to host memory; one save at a time is written in the background");
  s.bind("checkpoint.on_error", &c.checkpoint.on_error,
         "a checkpoint that cannot be written (disk full): stop the run, or warn and train on",
         kCheckpointErrorNames);
  s.bind("profiler.enabled", &c.profiler.enabled, "per-step breakdown and advice at the end");
  s.bind("profiler.trace_start_step", &c.profiler.trace_start_step, "Chrome trace window (-1: none)",
         at_least(-1, kMax, "-1 (no trace) or a step number (0 or more)"));
  s.bind("profiler.trace_steps", &c.profiler.trace_steps, "", at_least(1, 1e6));
  s.bind("profiler.op_profile", &c.profiler.op_profile, "LibTorch per-op trace for the window");
  s.bind("profiler.memory", &c.profiler.memory, "per-rank memory table (and step peak) at the end");
  s.bind("eval.every_epochs", &c.eval.every_epochs, "0: only at the end", at_least(0, kMax, "0 (end only) or more"));
  s.bind("eval.every_steps", &c.eval.every_steps, "also every N steps (0: off)", at_least(0, kMax, "0 (off) or more"));
  s.bind("eval.target_accuracy", &c.eval.target_accuracy, "percent; report the training time to reach it",
         at_least(0, 100, "a percentage in [0, 100]"));
  s.bind("eval.stop_at_target", &c.eval.stop_at_target, "end the run once the target is reached");
  return s;
}

namespace {

void require(bool ok, const std::string& key, const std::string& what) {
  if (!ok) throw ConfigError(key + ": " + what);
}

}  // namespace

void validate(const TrainConfig& c, int64_t world_size) {
  TrainConfig copy = c;
  schema_for(copy).check_ranges();  // every number in its range, every string among its choices
  require(!c.run_dir.empty(), "run_dir",
          "is empty; give the directory for metrics.jsonl and checkpoints, e.g. runs/my_run");
  const hybrid::ParallelLayout layout = parallel_layout(c, world_size);
  const std::string problem = hybrid::layout_problem(layout, static_cast<int>(world_size));
  require(problem.empty(), "parallel", problem + " (parallel.data 0 takes the rest)");
  require(c.parallel.pipeline == 1 || c.train.grad_accumulation == 1, "train.grad_accumulation",
          "must be 1 with parallel.pipeline > 1; the pipeline's micro-batches accumulate "
          "(set parallel.micro_batches instead)");
  require(c.parallel.pipeline > 1 || c.parallel.micro_batches == 1, "parallel.micro_batches",
          "needs parallel.pipeline > 1; without a pipeline use train.grad_accumulation");
  const int64_t micro = c.parallel.pipeline > 1 ? c.parallel.micro_batches : c.train.grad_accumulation;
  const int64_t parts = layout.data * micro;
  require(c.train.batch_size % parts == 0, "train.batch_size",
          std::to_string(c.train.batch_size) + " does not split evenly over " + std::to_string(layout.data) +
              (layout.model_parallel() ? " data-parallel replicas x " : " ranks x ") + std::to_string(micro) + " micro-batches; use a multiple of " +
              std::to_string(parts));
  for (const auto* patterns : {&c.amp.fp32_modules, &c.amp.low_modules}) {
    for (const auto& p : *patterns) {
      require(!p.empty(), patterns == &c.amp.fp32_modules ? "amp.fp32_modules" : "amp.low_modules",
              "has an empty pattern; give module names or globs such as fc2 or \"layer*\"");
    }
  }
  for (const auto& p : c.activation_checkpointing) {
    require(!p.empty(), "activation_checkpointing",
            "has an empty pattern; give region names or globs such as \"layer*\"");
  }
  // Under ZeRO the gradients travel by reduce-scatter (each rank receives its
  // shard's sum): fp16/bf16 send it in that precision; int8's error feedback
  // and PowerSGD's low-rank factors need each rank to hold the whole averaged
  // gradient, which a reduce-scatter never gives it.
  require(!layout::DataSharding::of_zero_stage(c.zero.stage).any() || c.distributed.compression == "none" ||
              c.distributed.compression == "fp16" ||
              c.distributed.compression == "bf16",
          "distributed.compression",
          "'" + c.distributed.compression + "' compresses a whole-gradient allreduce (its error feedback or "
              "low-rank factors need every rank to hold the whole averaged gradient), which ZeRO's reduce-scatter "
              "(each rank receives only its shard) does not give; use bf16 or fp16 (the reduce-scatter in that "
              "precision), or zero.stage 0 for " + c.distributed.compression);

  require(!c.eval.stop_at_target || c.eval.target_accuracy > 0, "eval.stop_at_target",
          "needs eval.target_accuracy (the percentage to stop at)");
  require(c.data.format == "idx" || !c.data.path.empty(), "data.path", "is required");
}

hybrid::ParallelLayout parallel_layout(const TrainConfig& c, int64_t world_size) {
  hybrid::ParallelLayout layout;
  layout.pipeline = static_cast<int>(c.parallel.pipeline);
  layout.tensor = static_cast<int>(c.parallel.tensor);
  const int64_t replica = std::max<int64_t>(1, c.parallel.pipeline * c.parallel.tensor);
  layout.data = static_cast<int>(c.parallel.data > 0 ? c.parallel.data : std::max<int64_t>(1, world_size / replica));
  return layout;
}

TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  TrainConfig config;
  ConfigSchema schema = schema_for(config);
  if (!path.empty()) schema.load_file(path);
  for (const auto& o : overrides) schema.set(o);
  return config;
}

std::string dump_config(const TrainConfig& config) {
  TrainConfig copy = config;
  return schema_for(copy).dump();
}

}  // namespace paisoar::train
