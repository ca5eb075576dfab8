// paisoar-core: the LibTorch half of the `paisoar` CLI (demo, train, convert, bench).
// Users run `paisoar <command>`; the dispatcher execs this binary.
#include <iostream>

#include "apps/paisoar-core/commands.h"
#include "paisoar/version.h"

int main(int argc, char** argv) {
  CLI::App app{"paisoar: training acceleration for LibTorch"};
  app.name("paisoar");
  app.set_version_flag("--version", PAISOAR_VERSION);
  app.require_subcommand(1);
  auto demo = paisoar::app::add_demo_command(app);
  auto train = paisoar::app::add_train_command(app);
  auto convert = paisoar::app::add_convert_command(app);
  auto zero_consolidate = paisoar::app::add_zero_consolidate_command(app);
  auto* bench = app.add_subcommand("bench", "benchmarks against the peers users would pick instead");
  bench->require_subcommand(1);
  auto bench_comm = paisoar::app::add_bench_comm_command(*bench);
  auto bench_optim = paisoar::app::add_bench_optim_command(*bench);
  auto bench_amp = paisoar::app::add_bench_amp_command(*bench);
  auto bench_ddp = paisoar::app::add_bench_ddp_command(*bench);
  auto bench_ddp_worker = paisoar::app::add_bench_ddp_worker_command(*bench);
  auto bench_data = paisoar::app::add_bench_data_command(*bench);
  auto bench_ladder = paisoar::app::add_bench_ladder_command(*bench);
  auto bench_tta = paisoar::app::add_bench_tta_command(*bench);
  auto bench_memory = paisoar::app::add_bench_memory_command(*bench);
  auto bench_recovery = paisoar::app::add_bench_recovery_command(*bench);
  auto bench_pipeline = paisoar::app::add_bench_pipeline_command(*bench);
  auto bench_zero_memory_worker = paisoar::app::add_bench_zero_memory_worker_command(*bench);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (app.got_subcommand("demo")) return demo(argc, argv);
    if (app.got_subcommand("train")) return train(argc, argv);
    if (app.got_subcommand("convert")) return convert(argc, argv);
    if (app.got_subcommand("zero-consolidate")) return zero_consolidate(argc, argv);
    if (bench->got_subcommand("comm")) return bench_comm(argc, argv);
    if (bench->got_subcommand("optim")) return bench_optim(argc, argv);
    if (bench->got_subcommand("amp")) return bench_amp(argc, argv);
    if (bench->got_subcommand("ddp")) return bench_ddp(argc, argv);
    if (bench->got_subcommand("ddp-worker")) return bench_ddp_worker(argc, argv);
    if (bench->got_subcommand("data")) return bench_data(argc, argv);
    if (bench->got_subcommand("ladder")) return bench_ladder(argc, argv);
    if (bench->got_subcommand("tta")) return bench_tta(argc, argv);
    if (bench->got_subcommand("memory")) return bench_memory(argc, argv);
    if (bench->got_subcommand("recovery")) return bench_recovery(argc, argv);
    if (bench->got_subcommand("pipeline")) return bench_pipeline(argc, argv);
    if (bench->got_subcommand("zero-memory-worker")) return bench_zero_memory_worker(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "paisoar: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
