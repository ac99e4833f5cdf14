// switchyard_fault_injection: randomized, seeded fault trials. Each trial
// runs a job of one scenario and makes one process (or one active-message
// handler) throw at a point drawn from the seed:
//   - point to point: a ring of sends of 0 B to 1 MiB (eager and single
//     copy), posted or blocking, the throw before a send, between posting and
//     waiting, or after a receive;
//   - collectives: barriers, allgathers, allreduces and broadcasts in a random
//     order, the throw before one of them;
//   - active messages: every process posts to every other, and one handler
//     throws on its k-th message;
//   - sleeps and busy locks: a throw while others sleep, or while holding a lock;
//   - a redistribution plan run, the throw before one rank's run (the others
//     are in the middle of theirs when the job is cancelled).
// Every trial must end within its bound: with the injected exception when the
// throw point was reached, else normally with every byte checked; and the
// runtime must run a clean job afterwards. ASan and TSan builds run the same.
//
//   switchyard_fault_injection [--seconds S] [--seed X]
//
// Prints the trials per scenario, and exits 1 on the first wrong outcome.

#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace {

namespace sy = switchyard;
namespace rd = switchyard::schedulers::redistribution;
using sy::Process;
using sy::Rank;
using sy::Task;
using Clock = std::chrono::steady_clock;

// The exception a trial injects; run() must rethrow exactly it.
struct Injected : std::runtime_error {
  explicit Injected(std::uint64_t trial) : std::runtime_error("injected fault of trial " + std::to_string(trial)) {}
};

enum Scenario { kPointToPoint, kCollectives, kActiveMessages, kSleepsAndLocks, kRedistribution, kScenarios };
constexpr const char* kNames[] = {"point to point", "collectives", "active messages", "sleeps and busy locks",
                                  "redistribution"};

// Where trial `trial` throws: which rank, at which step, at which point of it.
struct Fault {
  std::uint64_t trial;
  Rank rank;
  std::uint32_t step;  // may be past the last step: then nothing is thrown
  std::uint32_t point;  // scenario-specific: which point of the step
  bool at(Rank r, std::uint32_t s, std::uint32_t p) const { return r == rank && s == step && p == point; }
  void maybe_throw(Rank r, std::uint32_t s, std::uint32_t p) const {
    if (at(r, s, p)) throw Injected(trial);
  }
};

constexpr std::uint32_t kSteps = 6;
// Per scenario: the steps a fault may be at (one more: none), and the points of a step.
constexpr std::uint32_t kScenarioSteps[] = {kSteps, kSteps, kSteps, kSteps, 1};
constexpr std::uint32_t kScenarioPoints[] = {3, 1, 1, 2, 8};

std::uint64_t draw(std::uint64_t seed, std::uint64_t trial, std::uint64_t what) {
  return sytest::mix(seed, trial, what);
}

Task<void> point_to_point(Process& p, const Fault& f, std::uint64_t seed) {
  const Rank right = (p.rank() + 1) % p.size(), left = (p.rank() + p.size() - 1) % p.size();
  static constexpr std::size_t kSizes[] = {0, 512, 4096, 1 << 20};
  for (std::uint32_t s = 0; s < kSteps; ++s) {
    const std::size_t size = kSizes[draw(seed, f.trial, s) % 4];
    const auto out = sytest::pattern(size, sytest::message_key(p.rank(), right, s));
    f.maybe_throw(p.rank(), s, 0);
    sy::SendTicket t = p.post_send(right, out, 1);
    f.maybe_throw(p.rank(), s, 1);  // unwinds past a send in flight
    sy::Message m = co_await p.recv(left, 1);
    SY_CHECK(m.size() == size &&
                 sytest::first_mismatch(m.bytes(), sytest::message_key(left, p.rank(), s)) == std::string::npos,
             "step " << s << ": wrong message from " << left);
    f.maybe_throw(p.rank(), s, 2);
    co_await p.wait(t);
  }
}

Task<void> collectives(Process& p, const Fault& f, std::uint64_t seed) {
  for (std::uint32_t s = 0; s < kSteps; ++s) {
    f.maybe_throw(p.rank(), s, 0);
    const std::int64_t mine = p.rank() + 1;
    switch (draw(seed, f.trial, s) % 4) {
      case 0:
        co_await p.barrier();
        break;
      case 1: {
        const auto all = co_await p.allgather_value(mine);
        for (Rank r = 0; r < p.size(); ++r) SY_CHECK(all[r] == r + 1, "allgather of step " << s);
        break;
      }
      case 2: {
        const auto sum = co_await p.allreduce(std::span(&mine, 1));
        SY_CHECK(sum[0] == std::int64_t{p.size()} * (p.size() + 1) / 2, "allreduce of step " << s);
        break;
      }
      default: {
        const Rank root = static_cast<Rank>(draw(seed, f.trial, s + 100) % p.size());
        const auto got = co_await p.broadcast(root, std::as_bytes(std::span(&mine, 1)));
        std::int64_t v = 0;
        std::memcpy(&v, got.data(), sizeof v);
        SY_CHECK(got.size() == sizeof v && v == root + 1, "broadcast of step " << s);
      }
    }
  }
}

Task<void> sleeps_and_locks(Process& p, const Fault& f) {
  for (std::uint32_t s = 0; s < kSteps; ++s) {
    f.maybe_throw(p.rank(), s, 0);
    co_await p.sleep_for(std::chrono::microseconds(50 * ((p.rank() + s) % 4)));
    const Rank target = (p.rank() + s) % p.size();
    while (!co_await p.try_busy_lock(target)) co_await p.yield();
    f.maybe_throw(p.rank(), s, 1);  // while holding the lock
    p.release_busy_lock(target);
  }
  co_await p.barrier();
}

// Every process posts kSteps active messages, one to each of its kSteps next
// ranks, so every rank's handler runs kSteps times; the faulty rank's throws
// on its step-th. `handled`: per rank, touched on that rank's core only.
Task<void> active_messages(Process& p, const Fault& /*the handler throws it*/, std::vector<std::uint32_t>& handled) {
  for (std::uint32_t s = 0; s < kSteps; ++s) {
    const std::uint64_t body = sytest::message_key(p.rank(), s, 3);
    p.post_active((p.rank() + 1 + s) % p.size(), 1, std::as_bytes(std::span(&body, 1)));
  }
  co_await p.wait_until([&] { return handled[p.rank()] >= kSteps; }, "its handlers");
}

// Sources 0..P-1 (cyclic) to targets (block): one rank throws before its run
// while the others exchange, or, past the last rank, none.
Task<void> redistribution(Process& p, const Fault& f, const rd::RedistributionPlan& plan, const rd::Layout& source,
                          const rd::Layout& target, const std::vector<double>& global) {
  const auto in = source.scatter(global);
  const auto want = target.scatter(global);
  std::vector<double> out(p.rank() < want.size() ? want[p.rank()].size() : 0);
  const std::vector<double> none;
  // The others get ahead by a few turns: the throw comes while they exchange.
  for (std::uint32_t y = 0; y < f.point; ++y) co_await p.yield();
  if (f.rank == p.rank() && f.step == 0) throw Injected(f.trial);
  co_await plan.run(p.world(), p.rank() < in.size() ? std::span<const double>(in[p.rank()]) : none, out);
  if (p.rank() < want.size())
    SY_CHECK(out == want[p.rank()], "rank " << p.rank() << "'s block after the redistribution");
}

struct Trials {
  std::uint64_t run[kScenarios] = {}, thrown[kScenarios] = {};
};

// One trial; false (after saying why) on a wrong outcome.
bool trial(sy::Runtime& rt, std::uint64_t seed, std::uint64_t t, Trials& totals) {
  const auto scenario = static_cast<Scenario>(draw(seed, t, 1) % kScenarios);
  const Rank n = 2 + static_cast<Rank>(draw(seed, t, 2) % 15);
  // Rank n, or the step past the last: nobody throws, and the job must end normally.
  const Fault f{t, static_cast<Rank>(draw(seed, t, 3) % (n + 1)),
                static_cast<std::uint32_t>(draw(seed, t, 4) % (kScenarioSteps[scenario] + 1)),
                static_cast<std::uint32_t>(draw(seed, t, 5) % kScenarioPoints[scenario])};
  sy::RunOptions o;
  o.stall_timeout = std::chrono::seconds(10);
  o.eager_limit = 1024;
  o.ring_capacity = 1 + draw(seed, t, 6) % 64;  // small rings: senders wait for room
  std::vector<std::uint32_t> handled(n, 0);
  o.on_active_message(1, [&f, &handled](Process& self, Rank, std::span<const std::byte>) {
    if (self.rank() == f.rank && handled[self.rank()] == f.step) throw Injected(f.trial);
    ++handled[self.rank()];
  });
  const rd::Layout source({rd::Index{n} * 6}, rd::Distribution::parse("cyclic@" + std::to_string(n)));
  const rd::Layout target({rd::Index{n} * 6},
                          rd::Distribution::parse("block@" + std::to_string(std::max<Rank>(1, n / 2))));
  std::optional<rd::RedistributionPlan> plan;
  std::vector<double> global(static_cast<std::size_t>(n) * 6);
  for (std::size_t e = 0; e < global.size(); ++e) global[e] = static_cast<double>(e);
  if (scenario == kRedistribution) plan.emplace(source, target, rd::ScheduleKind::optimal);
  const auto start = Clock::now();
  std::string outcome = "returned normally";
  try {
    rt.run(
        n,
        [&](Process& p) -> Task<void> {
          switch (scenario) {
            case kPointToPoint:
              return point_to_point(p, f, seed);
            case kCollectives:
              return collectives(p, f, seed);
            case kActiveMessages:
              return active_messages(p, f, handled);
            case kSleepsAndLocks:
              return sleeps_and_locks(p, f);
            default:
              return redistribution(p, f, *plan, source, target, global);
          }
        },
        o);
  } catch (const Injected& e) {
    outcome = e.what();
    ++totals.thrown[scenario];
  } catch (const std::exception& e) {
    outcome = std::string("another error: ") + e.what();
  }
  ++totals.run[scenario];
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  // Every drawn point of an existing rank and step is on the path of that rank.
  const bool reached = f.rank < n && f.step < kScenarioSteps[scenario];
  const std::string injected = Injected(t).what();
  const bool right = reached ? outcome == injected : outcome == "returned normally";
  if (!right || seconds > 30) {
    std::fprintf(stderr,
                 "switchyard_fault_injection: trial %llu (seed %llu, %s, %u processes, fault at rank %u step %u point "
                 "%u): %s after %.1f s, expected %s\n",
                 static_cast<unsigned long long>(t), static_cast<unsigned long long>(seed), kNames[scenario], n, f.rank,
                 f.step, f.point, outcome.c_str(), seconds, reached ? injected.c_str() : "a normal return");
    return false;
  }
  return true;
}

double parse_number(const char* option, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= 0) || !std::isfinite(v)) {
    std::fprintf(stderr, "switchyard_fault_injection: %s: '%s' is not a non-negative number\n", option,
                 sy::printable(text).c_str());
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 30;
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; i += 2) {
    const std::string option = argv[i];
    if (i + 1 == argc || (option != "--seconds" && option != "--seed")) {
      std::fprintf(stderr, "usage: switchyard_fault_injection [--seconds S] [--seed X]\n");
      return 2;
    }
    const double v = parse_number(argv[i], argv[i + 1]);
    if (option == "--seconds") {
      seconds = v;
    } else {
      seed = static_cast<std::uint64_t>(v);
    }
  }
  sy::Runtime rt;
  Trials totals;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::uint64_t t = 0;
  for (; t == 0 || Clock::now() < deadline; ++t) {
    if (!trial(rt, seed, t, totals)) return 1;
  }
  // The runtime is whole after every fault: a clean job on it.
  try {
    rt.run(8, [](Process& p) -> Task<void> { co_await p.barrier(); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "switchyard_fault_injection: a clean job after the trials failed: %s\n", e.what());
    return 1;
  }
  std::printf("switchyard_fault_injection: %llu trials, seed %llu, every outcome right:\n",
              static_cast<unsigned long long>(t), static_cast<unsigned long long>(seed));
  for (int k = 0; k < kScenarios; ++k) {
    std::printf("  %-22s %6llu trials, %6llu with the fault thrown\n", kNames[k],
                static_cast<unsigned long long>(totals.run[k]), static_cast<unsigned long long>(totals.thrown[k]));
  }
  return 0;
}
