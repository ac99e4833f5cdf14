#pragma once
// Shared plumbing of the switchyard benchmarks.
//
// How a benchmark line is measured. One Google Benchmark "iteration" is one
// batch: one Runtime::run job in which the processes pass a start barrier and do
// K operations in kChunks chunks, each timed with std::chrono::steady_clock read
// inside a process (see ChunkTimer). The batch reports the time of ONE operation
// in its median chunk with SetIterationTime, under UseManualTime, so the Time
// column of every line is the time per operation, and bytes_per_second is bytes
// per operation over that. Job set-up and tear-down (building the processes,
// waking the workers) are outside the clock. Each benchmark runs a fixed number
// of batches per repetition (->Iterations(kBatches): the "/iterations:10" in the
// names; on the aggregate lines the Iterations column counts repetitions) and is
// repeated (--benchmark_repetitions, 10 unless given on the command line); only
// the aggregates are printed: the median is the figure.
// The CPU column is the benchmark thread's, which only waits: ignore it.
//
// Baselines beside the figure (taskflow style). Every figure line measures its
// hardware limit or competing baseline in the same batch, right before its own
// K operations, with the runtime's workers asleep, and reports it in user
// counters on the same line:
//   limit_ns  the limit, per operation       x_limit   figure / limit
//   target_ns the line's target              x_target  figure / target (<= 1 meets it)
//   target_x  a target stated as a multiple of the limit (target_ns is then that
//             multiple of limit_ns)
// The baselines also have lines of their own.

#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <switchyard/median.hpp>
#include <switchyard/runtime.hpp>

namespace sybench {

// The two cores of this machine. Ranks on "different cores" are on these two.
inline constexpr int kCoreA = 0;
inline constexpr int kCoreB = 1;
// Batches per repetition.
inline constexpr int kBatches = 10;
inline constexpr int kDefaultRepetitions = 10;
// Chunks per batch: see ChunkTimer.
inline constexpr int kChunks = 20;

using Clock = std::chrono::steady_clock;
inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The one Runtime of the program: a worker on each core. Created on first use and
// never re-created; between jobs its workers sleep in the kernel, so the pinned
// std::thread baselines have the cores to themselves.
inline switchyard::Runtime& runtime() {
  static switchyard::Runtime rt(switchyard::RuntimeOptions{.cores = {kCoreA, kCoreB}});
  return rt;
}

// Spins until done(): tight (no pause), as the hardware baselines need, but
// after 100k fruitless checks it yields on every check, so a baseline whose
// partner thread was preempted on a busy machine waits a time slice, not forever.
template <class Done>
inline void spin_until(Done done) {
  for (std::uint32_t checks = 0; !done(); ++checks) {
    if (checks > 100'000) std::this_thread::yield();
  }
}

// A sense-reversal barrier on one cache line: arrive with fetch_add, spin on the
// generation. The hardware floor of a rendezvous of pinned threads, about one
// cache-line round trip.
struct alignas(64) SpinBarrier {
  std::atomic<std::uint32_t> arrived{0};
  std::atomic<std::uint32_t> generation{0};
  void arrive_and_wait(std::uint32_t parties) {
    const std::uint32_t gen = generation.load(std::memory_order_acquire);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == parties) {
      arrived.store(0, std::memory_order_relaxed);
      generation.store(gen + 1, std::memory_order_release);
    } else {
      spin_until([&] { return generation.load(std::memory_order_acquire) != gen; });
    }
  }
};

// Times the chunks of a batch. A batch of K operations is cut into kChunks
// chunks of K / kChunks operations, timed one by one by the thread or process
// that drives them; the batch reports the MEDIAN chunk. On this 2-core machine,
// shared with builds and other jobs, a chunk in which the kernel preempted one of
// the two cores for a time slice (milliseconds) is an outlier, and the median
// leaves it out where a total over the batch would not.
class ChunkTimer {
 public:
  explicit ChunkTimer(int ops_per_chunk) : ops_per_chunk_(ops_per_chunk) { laps_.reserve(kChunks); }
  void start() { last_ = Clock::now(); }
  // Ends a chunk (and starts the next one).
  void lap() {
    const auto now = Clock::now();
    laps_.push_back(seconds_between(last_, now));
    last_ = now;
  }
  // Seconds per operation in the median chunk (0 if no chunk was timed).
  double per_op() const {
    if (laps_.empty()) return 0;
    return switchyard::median(laps_) / ops_per_chunk_;
  }

 private:
  int ops_per_chunk_;
  Clock::time_point last_;
  std::vector<double> laps_;
};

// A job of these benchmarks takes milliseconds: one that has not moved for 10 s
// is stuck, and the line reports the runtime's StallError instead of waiting 60 s.
inline constexpr std::chrono::milliseconds kStallTimeout{10'000};

// Run options with the runtime's default placement (on an MPI job of several
// nodes: block over the nodes, then over each node's cores).
inline switchyard::RunOptions default_placement() {
  switchyard::RunOptions options;
  options.stall_timeout = kStallTimeout;
  return options;
}
// Run options that place rank r on OS core os_cores[r].
inline switchyard::RunOptions placed(std::vector<int> os_cores) {
  switchyard::RunOptions options = default_placement();
  options.placement = switchyard::Placement::explicit_map(std::move(os_cores));
  return options;
}
// Run options with the round-robin placement over the cores.
inline switchyard::RunOptions round_robin() {
  switchyard::RunOptions options = default_placement();
  options.placement = switchyard::Placement::round_robin();
  return options;
}

inline void pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0) {
    throw std::runtime_error("pthread_setaffinity_np(cpu " + std::to_string(cpu) + ") failed: " + std::strerror(rc));
  }
}

// Runs f0 on a new thread pinned to cpu0 and f1 on a new thread pinned to cpu1,
// both released at the same moment once both are pinned and spinning. Each
// function measures its own time. Exceptions are rethrown here.
template <class F0, class F1>
void run_pinned_pair(int cpu0, F0&& f0, int cpu1, F1&& f1) {
  std::atomic<int> ready{0};
  std::exception_ptr errors[2];
  auto start = [&](int cpu, auto& f, std::exception_ptr& error) {
    try {
      pin_this_thread(cpu);
      ready.fetch_add(1, std::memory_order_acq_rel);
      spin_until([&] { return ready.load(std::memory_order_acquire) >= 2; });
      f();
    } catch (...) {
      error = std::current_exception();
      ready.fetch_add(2, std::memory_order_acq_rel);  // never leave the other one spinning
    }
  };
  std::thread t0([&] { start(cpu0, f0, errors[0]); });
  std::thread t1([&] { start(cpu1, f1, errors[1]); });
  t0.join();
  t1.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Runs f on a new thread pinned to cpu and waits for it.
template <class F>
void run_pinned(int cpu, F&& f) {
  std::exception_ptr error;
  std::thread t([&] {
    try {
      pin_this_thread(cpu);
      f();
    } catch (...) {
      error = std::current_exception();
    }
  });
  t.join();
  if (error) std::rethrow_exception(error);
}

// Puts figure, limit and target on one line. `figure` and `limit` are seconds per
// operation. The target is either absolute (target_ns) or a multiple of the limit
// measured beside the figure (target_x_limit, reported as target_x; target_ns is
// then that multiple of limit_ns).
inline void report_vs_limit(benchmark::State& state, double figure, double limit, double target_ns = 0,
                            double target_x_limit = 0) {
  state.counters["limit_ns"] = limit * 1e9;
  state.counters["x_limit"] = limit > 0 ? figure / limit : 0;
  if (target_x_limit > 0) {
    state.counters["target_x"] = target_x_limit;
    target_ns = target_x_limit * limit * 1e9;
  }
  if (target_ns > 0) {
    state.counters["target_ns"] = target_ns;
    state.counters["x_target"] = figure * 1e9 / target_ns;
  }
}

// The command that runs MPI program `program` with `arguments` through
// `mpirun` on 2 ranks, one bound to each core, within `timeout_s`.
inline std::string mpirun_two_ranks(const char* mpirun, const char* program, const std::string& arguments,
                                    int timeout_s = 300) {
  return std::string("'") + mpirun +
         "' --allow-run-as-root --oversubscribe -np 2 --bind-to core --map-by core --timeout " +
         std::to_string(timeout_s) + " '" + program + "' " + arguments;
}

// The median_us of the JSON line a baseline program prints (bench_exchange_mpi,
// bench_redistribution_scalapack), run by `command` through the shell: nullopt
// if it failed, with `who`, the command, how it ended and what it printed on stderr.
inline std::optional<double> baseline_median_us(const std::string& command, const char* who) {
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    std::perror((std::string(who) + ": popen " + command).c_str());
    return std::nullopt;
  }
  std::string out;
  char chunk[512];
  while (std::fgets(chunk, sizeof chunk, pipe)) out += chunk;
  const int status = pclose(pipe);
  const std::string key = "\"median_us\":";
  const auto at = out.find(key);
  if (status != 0 || at == std::string::npos) {
    const std::string how = status == -1          ? "could not be waited for"
                            : WIFEXITED(status)   ? "exited with status " + std::to_string(WEXITSTATUS(status))
                            : WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                  : "ended with wait status " + std::to_string(status);
    std::fprintf(stderr, "%s: no baseline: `%s` %s, printing '%s'\n", who, command.c_str(), how.c_str(), out.c_str());
    return std::nullopt;
  }
  return std::strtod(out.c_str() + at + key.size(), nullptr);
}

// Set once any line has failed: the program then exits with status 1.
inline std::atomic<bool> any_failure{false};

// A figure's run threw (a failed payload check, a switchyard error): the line
// says so instead of printing a number, and the program's exit status says so too.
inline void fail(benchmark::State& state, const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  any_failure.store(true);
  state.SkipWithError(e.what());
}

// Google Benchmark's flags from argv, --benchmark_repetitions defaulting to
// kDefaultRepetitions (a flag on the command line wins: the smoke tests pass
// 1), and the context header's common lines. Without `output_file`, the
// --benchmark_out* flags are dropped (the MPI harness: only node 0 writes the
// file). False if an argument is not Google Benchmark's.
inline bool initialize(int argc, char** argv, const char* what, bool output_file = true) {
  std::vector<char*> args{argv[0]};
  bool has_repetitions = false;
  for (int i = 1; i < argc; ++i) {
    if (!output_file && std::strncmp(argv[i], "--benchmark_out", 15) == 0) continue;
    has_repetitions |= std::strncmp(argv[i], "--benchmark_repetitions", 23) == 0;
    args.push_back(argv[i]);
  }
  static std::string repetitions = "--benchmark_repetitions=" + std::to_string(kDefaultRepetitions);
  if (!has_repetitions) args.insert(args.begin() + 1, repetitions.data());
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return false;
  benchmark::AddCustomContext("switchyard_bench", what);
  benchmark::AddCustomContext("batches_per_repetition", std::to_string(kBatches));
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {  // other jobs on the 2 cores make every figure worse
    char line[128] = {};
    if (std::fgets(line, sizeof line, f)) {
      std::string text(line);
      if (!text.empty() && text.back() == '\n') text.pop_back();
      benchmark::AddCustomContext("loadavg_at_start", text);
    }
    std::fclose(f);
  }
  return true;
}

// Runs an empty job of `processes` on rt, after which its workers have bound
// themselves to their cores, and puts their bindings into the context header.
inline void add_worker_context(switchyard::Runtime& rt, std::uint64_t processes, const switchyard::RunOptions& options,
                               const std::string& prefix = "worker") {
  rt.run(
      processes, [](switchyard::Process&) -> switchyard::Task<void> { co_return; }, options);
  const auto bindings = rt.worker_bindings();
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    benchmark::AddCustomContext(prefix + std::to_string(i), bindings[i]);
  }
}

// The exit status: 1 if no benchmark matched the filter or a line failed, so
// that the smoke tests catch both.
inline int exit_status(std::size_t ran, bool failed) {
  if (ran == 0) {
    std::fprintf(stderr, "no benchmark matched the filter\n");
    return 1;
  }
  return failed ? 1 : 0;
}

// main() of a benchmark program on one machine: initialize(), the workers'
// bindings, every selected line, exit_status().
inline int main(int argc, char** argv, const char* what) {
  if (!initialize(argc, argv, what)) return 1;
  add_worker_context(runtime(), 2, placed({kCoreA, kCoreB}));
  const std::size_t ran = benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return exit_status(ran, any_failure.load());
}

}  // namespace sybench
