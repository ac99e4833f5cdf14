// Embedding switchyard in an application that already uses oneTBB.
//
// The application keeps its TBB computation (a tbb::parallel_reduce, run in
// rounds) on all cores but the last; switchyard gets the last allowed core. One
// std::thread drives switchyard jobs (a ring exchange plus an allreduce, checked)
// while the TBB rounds keep going on the other cores. Both results are checked;
// the exit code is 0 only if every check passed.
//
// On a machine with a single usable core both share it: the program still works,
// it just cannot keep them apart.

#include <switchyard/runtime.hpp>

#include <sched.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>
#include <tbb/task_scheduler_observer.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <thread>
#include <vector>

namespace sy = switchyard;

// [readme-begin]
// One switchyard job: every process sends a block of words to its right-hand
// neighbour in a ring, checks the block from its left, then all processes sum
// {1, rank} with an allreduce. Returns the number of wrong results.
std::uint64_t ring_and_allreduce(sy::Runtime& rt, std::uint32_t processes, std::size_t words) {
  std::atomic<std::uint64_t> errors{0};
  rt.run(processes, [&](sy::Process& p) -> sy::Task<void> {
    const sy::Rank right = (p.rank() + 1) % p.size();
    const sy::Rank left = (p.rank() + p.size() - 1) % p.size();
    std::vector<std::uint64_t> block(words);
    for (std::size_t i = 0; i < words; ++i) block[i] = std::uint64_t{p.rank()} * words + i;

    sy::SendTicket sent = p.post_send(right, std::as_bytes(std::span(block)));  // keep `block` alive until done
    sy::Message m = co_await p.recv(left);
    co_await p.wait(sent);
    std::vector<std::uint64_t> got(m.size() / sizeof(std::uint64_t));
    std::memcpy(got.data(), m.bytes().data(), got.size() * sizeof(std::uint64_t));
    for (std::size_t i = 0; i < words; ++i) {
      if (got.size() != words || got[i] != std::uint64_t{left} * words + i) {
        ++errors;
        break;
      }
    }

    const std::int64_t mine[2] = {1, p.rank()};
    std::vector<std::int64_t> sum = co_await p.allreduce(std::span<const std::int64_t>(mine));
    const std::int64_t n = p.size();
    if (sum[0] != n || sum[1] != n * (n - 1) / 2) ++errors;
  });
  return errors.load();
}
// [readme-end]

namespace {

// sum_{i < n} i*i modulo 2^64, in closed form: (n-1) n (2n-1) / 6, dividing
// before multiplying so that the wrap-around is the same as the loop's.
std::uint64_t sum_of_squares(std::uint64_t n) {
  if (n == 0) return 0;
  std::uint64_t a = n - 1, b = n, c = 2 * n - 1;
  (a % 2 == 0 ? a : b) /= 2;
  (a % 3 == 0 ? a : b % 3 == 0 ? b : c) /= 3;
  return a * b * c;
}

bool pin_this_thread(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

// Keeps every thread that joins the TBB arena off switchyard's core.
class PinArenaThreads : public tbb::task_scheduler_observer {
 public:
  PinArenaThreads(tbb::task_arena& arena, std::vector<int> cpus)
      : tbb::task_scheduler_observer(arena), cpus_(std::move(cpus)) {
    observe(true);
  }
  ~PinArenaThreads() override { observe(false); }
  void on_scheduler_entry(bool) override {
    if (!pin_this_thread(cpus_)) pin_failed = true;
  }
  std::atomic<bool> pin_failed{false};

 private:
  std::vector<int> cpus_;
};

}  // namespace

int main() {
  // 1. Choose the cores. The Runtime must be created before the application pins
  //    any of its threads: hwloc reports the CPUs the process is bound to, which
  //    on Linux is what its threads are bound to at that moment.
  std::vector<int> allowed;
  {
    sy::Topology topology;
    for (const auto& c : topology.allowed_cores()) allowed.push_back(c.os_index);
  }
  const int switchyard_core = allowed.back();
  std::vector<int> tbb_cores(allowed.begin(), allowed.end() - 1);
  const bool shared_core = tbb_cores.empty();
  if (shared_core) tbb_cores = allowed;

  // 2. switchyard on the last core; one worker thread, bound there.
  sy::Runtime rt(sy::RuntimeOptions{.cores = {switchyard_core}});
  rt.run(1, [](sy::Process&) -> sy::Task<void> { co_return; });  // workers are bound once they have run a job
  std::printf("switchyard: %s\n", rt.worker_bindings().front().c_str());

  // 3. TBB on the other cores: an arena as wide as they are, its threads pinned there.
  pin_this_thread(tbb_cores);  // the main thread joins the arena too
  tbb::task_arena arena(static_cast<int>(tbb_cores.size()));
  PinArenaThreads pin(arena, tbb_cores);
  std::printf("tbb: arena of %d thread(s) on CPU(s)", arena.max_concurrency());
  for (int c : tbb_cores) std::printf(" %d", c);
  std::printf("%s\n", shared_core ? " (only one usable core: shared with switchyard)" : "");

  // 4. The switchyard jobs, from their own thread, pinned to switchyard's core
  //    (a thread starts with its creator's CPUs: here TBB's).
  std::atomic<bool> switchyard_done{false};
  std::uint64_t switchyard_errors = 0, switchyard_jobs = 0;
  std::exception_ptr switchyard_failure;
  std::thread driver([&] {
    if (!pin_this_thread({switchyard_core}))
      std::fprintf(stderr, "could not pin the driver to CPU %d\n", switchyard_core);
    try {
      for (std::uint32_t processes : {2u, 3u, 16u, 64u, 256u}) {
        for (std::size_t words : {std::size_t{1}, std::size_t{100}, std::size_t{2048}}) {  // eager and single-copy
          for (int i = 0; i < 20; ++i) {
            switchyard_errors += ring_and_allreduce(rt, processes, words);
            ++switchyard_jobs;
          }
        }
      }
    } catch (...) {
      switchyard_failure = std::current_exception();
    }
    switchyard_done.store(true);
  });

  // 5. Meanwhile, the TBB computation: rounds of a parallel sum of squares, until
  //    the switchyard jobs are done (and at least two rounds).
  constexpr std::uint64_t kN = 20'000'000;
  const std::uint64_t expected = sum_of_squares(kN);
  std::uint64_t rounds = 0, rounds_overlapped = 0, tbb_errors = 0;
  std::atomic<bool> ran_on_switchyard_core{false};
  while (rounds < 2 || !switchyard_done.load()) {
    const bool overlapping = !switchyard_done.load();
    const std::uint64_t sum = arena.execute([&] {
      return tbb::parallel_reduce(
          tbb::blocked_range<std::uint64_t>(0, kN, 1 << 16), std::uint64_t{0},
          [&](const tbb::blocked_range<std::uint64_t>& r, std::uint64_t acc) {
            if (sched_getcpu() == switchyard_core) ran_on_switchyard_core = true;
            for (std::uint64_t i = r.begin(); i != r.end(); ++i) acc += i * i;
            return acc;
          },
          [](std::uint64_t x, std::uint64_t y) { return x + y; });
    });
    if (sum != expected) ++tbb_errors;
    ++rounds;
    if (overlapping && !switchyard_done.load()) ++rounds_overlapped;
  }
  driver.join();

  // 6. Both results.
  bool ok = true;
  if (switchyard_failure) {
    try {
      std::rethrow_exception(switchyard_failure);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "switchyard job failed: %s\n", e.what());
    }
    ok = false;
  }
  std::printf("switchyard: %llu job(s), %llu wrong result(s)\n", static_cast<unsigned long long>(switchyard_jobs),
              static_cast<unsigned long long>(switchyard_errors));
  std::printf("tbb: %llu round(s), %llu of them wholly while switchyard ran, %llu wrong sum(s)\n",
              static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(rounds_overlapped),
              static_cast<unsigned long long>(tbb_errors));
  if (switchyard_errors != 0 || tbb_errors != 0) ok = false;
  if (!shared_core && !pin.pin_failed && ran_on_switchyard_core) {
    std::fprintf(stderr, "tbb work ran on switchyard's core %d\n", switchyard_core);
    ok = false;
  }
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
