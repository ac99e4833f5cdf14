#include "switchyard/model/calibration/host_state.hpp"

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backoff.hpp"
#include "switchyard/topology.hpp"

namespace switchyard::model::calibration {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kLineWords = 8;  // 64-byte lines of 8-byte words
// The private copy: 8 messages of 16 KiB (calibrate's unit).
constexpr std::size_t kCopyBytes = 16 * 1024, kCopyMessages = 8;
// The gather: messages of kPieces pieces, one piece per line, kMessages of
// them: 8 MiB of lines, eight times this machine's 1 MiB L2.
constexpr std::uint64_t kPieces = 1024, kMessages = 128;
static_assert(kPieces % detail::kGatherRun == 0);
// Round trips per sample: under a millisecond a sample here
// (docs/cost-model.md, "Calibration's probes").
constexpr std::uint32_t kRoundTrips = 1000;
// The answering thread's sleep once it has backed off (Backoff): the serve it
// waits for comes after the serving thread's copy, a few microseconds.
constexpr std::chrono::microseconds kAnswerSleep{50};

double ns_since(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

// The word at piece j of message k: never 0, so an unwritten word shows.
std::uint64_t piece_value(std::uint64_t k, std::uint64_t j) { return k * kPieces + j + 1; }

// The buffers of the copy and the gather, written once.
struct Buffers {
  std::vector<std::byte> copy_from = std::vector<std::byte>(kCopyBytes * kCopyMessages),
                         copy_to = std::vector<std::byte>(kCopyBytes * kCopyMessages);
  std::vector<std::uint64_t> lines = std::vector<std::uint64_t>(kMessages * kPieces * kLineWords);
  std::vector<std::uint64_t> message = std::vector<std::uint64_t>(kPieces);
  Buffers() {
    for (std::size_t i = 0; i < copy_from.size(); ++i) copy_from[i] = static_cast<std::byte>(i * 7 + 1);
    for (std::uint64_t k = 0; k < kMessages; ++k)
      for (std::uint64_t j = 0; j < kPieces; ++j)
        lines[(k * kPieces + detail::gathered_line(j, kPieces)) * kLineWords] = piece_value(k, j);
  }
};

// The copy is timed second: the gather before it left none of its buffers in
// the private cache, and the first copy brings them back.
double private_copy_ns_per_line(Buffers& b, std::string& wrong) {
  double ns = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const auto start = Clock::now();
    for (std::size_t m = 0; m < kCopyMessages; ++m)
      std::memcpy(b.copy_to.data() + m * kCopyBytes, b.copy_from.data() + m * kCopyBytes, kCopyBytes);
    ns = ns_since(start);
    if (std::memcmp(b.copy_to.data(), b.copy_from.data(), b.copy_to.size()) != 0 && wrong.empty())
      wrong = "the private copy came out wrong";
    std::memset(b.copy_to.data(), 0, b.copy_to.size());  // the next copy must write it again
  }
  return ns / (kCopyBytes * kCopyMessages / (kLineWords * 8));
}

// Each piece copied by a memcpy whose length is read at run time, as the
// collectives' copy_block copies blocks (and calibrate's packing does), so
// that the compiler cannot turn the gather into something else. A wrong
// piece is described in `wrong` (the first one), not thrown: the other
// thread waits for this one at every phase.
double gather_ns_per_piece(Buffers& b, std::size_t piece_bytes, std::string& wrong) {
  double ns = 0;
  for (std::uint64_t k = 0; k < kMessages; ++k) {
    const std::uint64_t* source = b.lines.data() + k * kPieces * kLineWords;
    const auto start = Clock::now();
    for (std::uint64_t j = 0; j < kPieces; ++j)
      std::memcpy(b.message.data() + j, source + detail::gathered_line(j, kPieces) * kLineWords, piece_bytes);
    ns += ns_since(start);
    for (std::uint64_t j = 0; j < kPieces && wrong.empty(); ++j)
      if (b.message[j] != piece_value(k, j))
        wrong = "gathered piece " + std::to_string(j) + " of message " + std::to_string(k) + " wrong";
  }
  return ns / (kMessages * kPieces);
}

// The round trips: one cache line, `ball`, goes back and forth, the serving
// thread writing odd values and the answering one the next even ones. Its
// value carries no data (nothing else is read after it is seen), only the
// line's ownership moves: relaxed loads and stores suffice, each side's load
// pairing with the other's store by value alone.
double serve_round_trips(std::atomic<std::uint64_t>& ball) {
  std::uint64_t value = ball.load(std::memory_order_relaxed);
  // One untimed round trip first: the answering thread may be asleep.
  Clock::time_point start;
  for (std::uint32_t trip = 0; trip <= kRoundTrips; ++trip) {
    if (trip == 1) start = Clock::now();
    ball.store(++value, std::memory_order_relaxed);
    const std::uint64_t answer = value + 1;
    while (ball.load(std::memory_order_relaxed) != answer) switchyard::detail::cpu_relax();
    value = answer;
  }
  return ns_since(start) / kRoundTrips;
}

// Answers the kRoundTrips + 1 serves of one sample, backing off between them
// to short sleeps: the serving thread, whose loop is timed, never notifies
// (notifying only its first serve lost a wake-up when the host paused it
// mid-sample and this thread went to sleep).
void answer_round_trips(std::atomic<std::uint64_t>& ball) {
  switchyard::detail::Backoff backoff;
  for (std::uint32_t answered = 0; answered <= kRoundTrips;) {
    const std::uint64_t v = ball.load(std::memory_order_relaxed);
    if (v % 2 == 1) {
      ball.store(v + 1, std::memory_order_relaxed);
      ++answered;
      backoff.reset();
    } else {
      backoff.wait([] { std::this_thread::sleep_for(kAnswerSleep); });
    }
  }
}

// One core's side of the sampling: its own buffers (allocated by the caller,
// so that nothing in the threads throws), whether it was bound, and the first
// wrong byte it found.
struct Side {
  Buffers buffers;
  bool bound = false;
  std::string wrong;
};

}  // namespace

// The two threads gather at once, each its own 8 MiB, as the two cores pack
// at once in calibrate: over five calibrations, such a gather took 1/1.9 to
// 1/1.4 of their packing's time a piece and ranked them in nearly the same
// order (one swap), where one core gathering alone ranked four in another
// order. (It does not follow the packing round by round within a
// calibration: the packing's extra time moves with the lockstep's own
// states, nearly doubling over the rounds of one, while the gather stayed
// within a third; docs/cost-model.md, "Calibration's probes".) Then the
// first thread copies alone (the copy is the private cache's), and then the
// round trips.
HostStateSamples sample_host_state(const switchyard::Topology& topology, int core_a, int core_b, std::uint32_t runs) {
  if (runs == 0) throw std::invalid_argument("switchyard::model::sample_host_state: runs must be >= 1");
  for (const int core : {core_a, core_b})
    if (topology.find(core) == nullptr)
      throw std::invalid_argument("switchyard::model::sample_host_state: CPU " + std::to_string(core) +
                                  " is not one this process may run on");
  const bool two_cores = core_a != core_b;
  // Reserved here, so that nothing is allocated between the timed samples.
  HostStateSamples out;
  out.private_copy_ns_per_line.reserve(runs);
  out.gather_ns_per_piece.reserve(runs);
  if (two_cores) out.line_round_trip_ns.reserve(runs);
  std::vector<Side> sides(two_cores ? 2 : 1);
  std::barrier phase(static_cast<std::ptrdiff_t>(sides.size()));
  std::atomic<std::uint64_t> ball{0};
  const auto side = [&](std::size_t k) {
    Side& s = sides[k];
    s.bound = topology.bind_this_thread(k == 0 ? core_a : core_b);
    volatile std::size_t piece_bytes = sizeof(std::uint64_t);
    for (std::uint32_t r = 0; r < runs; ++r) {
      phase.arrive_and_wait();
      const double gather = gather_ns_per_piece(s.buffers, piece_bytes, s.wrong);
      phase.arrive_and_wait();
      if (k == 0) {
        out.gather_ns_per_piece.push_back(gather);
        out.private_copy_ns_per_line.push_back(private_copy_ns_per_line(s.buffers, s.wrong));
        if (two_cores) out.line_round_trip_ns.push_back(serve_round_trips(ball));
      } else {
        answer_round_trips(ball);
      }
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < sides.size(); ++k) threads.emplace_back(side, k);
  for (std::thread& t : threads) t.join();
  for (std::size_t k = 0; k < sides.size(); ++k) {
    if (!sides[k].wrong.empty()) throw std::runtime_error("switchyard::model::sample_host_state: " + sides[k].wrong);
    if (!sides[k].bound)
      throw std::runtime_error("switchyard::model::sample_host_state: the OS refused to bind a thread to CPU " +
                               std::to_string(k == 0 ? core_a : core_b));
  }
  return out;
}

}  // namespace switchyard::model::calibration
