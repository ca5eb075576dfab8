// paisoar-core: the LibTorch half of the `paisoar` CLI (demo, train, convert, report, bench).
// Users run `paisoar <command>`; the dispatcher execs this binary.
#include <c10/util/Exception.h>

#include <iostream>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "apps/paisoar-core/commands.h"
#include "paisoar/error.h"
#include "paisoar/comm/env.h"
#include "paisoar/version.h"
#include "src/util/fault_point.h"

namespace {

constexpr const char* kOutOfMemoryAdvice =
    "  the run asks for more memory than this machine has: lower train.batch_size (or raise\n"
    "  train.grad_accumulation), model.hidden, model.num_classes, data.image_size or data.workers x\n"
    "  data.prefetch_factor; zero.stage 1-3 and activation_checkpointing also save memory (docs/MEMORY.md)\n";

// CLI11's "A subcommand is required" names neither the command nor its
// subcommands: says both, and the word given instead, if any. False when the
// error is another one.
bool missing_subcommand(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  for (;;) {
    const auto parsed = at->get_subcommands();
    if (parsed.empty()) break;
    at = parsed.front();
  }
  const auto choices = at->get_subcommands([](CLI::App*) { return true; });
  if (choices.empty() || !at->get_subcommands().empty()) return false;
  std::string names, command = at == &app ? "paisoar" : "paisoar " + at->get_name();
  for (const CLI::App* c : choices) names += (names.empty() ? "" : ", ") + c->get_name();
  std::string given;  // the word after the command's own name, if it is not a flag
  for (int i = 1; i + 1 < argc; ++i) {
    if (at != &app && argv[i] == at->get_name() && argv[i + 1][0] != '-') given = argv[i + 1];
  }
  if (at == &app && argc > 1 && argv[1][0] != '-') given = argv[1];
  std::cerr << command << ": " << (given.empty() ? "a command is required" : "unknown command '" + given + "'")
            << "; give one of: " << names << " (" << command << " --help)\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"paisoar: training acceleration for LibTorch"};
  app.name("paisoar");
  app.set_version_flag("--version", PAISOAR_VERSION);
  app.require_subcommand(1);
  auto demo = paisoar::app::add_demo_command(app);
  auto train = paisoar::app::add_train_command(app);
  auto convert = paisoar::app::add_convert_command(app);
  auto zero_consolidate = paisoar::app::add_zero_consolidate_command(app);
  auto checkpoint = paisoar::app::add_checkpoint_command(app);
  auto report = paisoar::app::add_report_command(app);
  auto plan = paisoar::app::add_plan_command(app);
  auto* bench = app.add_subcommand("bench", "benchmarks against the peers users would pick instead");
  std::vector<std::pair<std::string, paisoar::app::Command>> benches;
  for (const auto& b : paisoar::app::bench_commands()) benches.emplace_back(b.name, b.add(*bench));
  if (!benches.empty()) bench->require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    if (!missing_subcommand(app, argc, argv)) return app.exit(e) == 0 ? 0 : 2;
    return 2;
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every command-line error exits 2, as
    // usage errors do elsewhere (argparse, torchrun), not CLI11's 100-127.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    // The edge: a test's fault injection (PAISOAR_TEST_FAULT) is read here, once.
    paisoar::util::install_fault_injector(paisoar::util::fault_injector_from_env(paisoar::comm::process_env()));
    if (app.got_subcommand("demo")) return demo(argc, argv);
    if (app.got_subcommand("train")) return train(argc, argv);
    if (app.got_subcommand("convert")) return convert(argc, argv);
    if (app.got_subcommand("zero-consolidate")) return zero_consolidate(argc, argv);
    if (app.got_subcommand("checkpoint")) return checkpoint(argc, argv);
    if (app.got_subcommand("report")) return report(argc, argv);
    if (app.got_subcommand("plan")) return plan(argc, argv);
    if (app.got_subcommand("bench")) {
      for (const auto& [name, run] : benches) {
        if (bench->got_subcommand(name)) return run(argc, argv);
      }
      std::cerr << "paisoar bench: this paisoar-core was built without its benchmarks "
                   "(-DPAISOAR_BUILD_BENCH=OFF, as scripts/run_main_job.sh builds it); build "
                   "them with scripts/build.sh\n";
      return 2;
    }
  } catch (const c10::OutOfMemoryError& e) {
    std::cerr << "paisoar: error: out of memory: " << paisoar::error_text(e) << "\n" << kOutOfMemoryAdvice;
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "paisoar: error: out of memory (an allocation failed)\n" << kOutOfMemoryAdvice;
    return 1;
  } catch (const c10::Error& e) {
    // LibTorch's CPU allocator reports a failed allocation as a plain c10::Error.
    const std::string text = paisoar::error_text(e);
    const size_t asked = text.find("you tried to allocate ");
    if (text.find("can't allocate memory") != std::string::npos && asked != std::string::npos) {
      const std::string bytes = text.substr(asked + 22, text.find(' ', asked + 22) - asked - 22);
      std::cerr << "paisoar: error: out of memory: an allocation of " << bytes << " bytes failed\n"
                << kOutOfMemoryAdvice;
    } else {
      std::cerr << "paisoar: error: " << text << "\n";
    }
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "paisoar: error: " << paisoar::error_text(e) << "\n";
    return 1;
  }
  return 0;
}
