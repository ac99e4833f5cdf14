// switchyard_soak: random point-to-point traffic for a given time, every
// message checked for loss, duplication, reordering and its bytes.
//
//   switchyard_soak [--seconds S] [--processes N] [--seed X] [--capacity LINES]
//   switchyard_soak --self-test   (a wrong byte, a duplicate and a reordering are each caught)
//
// Epoch e: message i of every process r goes to r + o(e, i) modulo n, with o
// drawn from (seed, e, i): each of the kSendsPerEpoch rounds of an epoch is a
// random cyclic shift. Its size and kind (send or ssend) are drawn from (seed,
// e, r, i); sizes are log-uniform in 0..64 KiB, so both the eager and the
// single-copy paths are exercised. A receiver redraws the kSendsPerEpoch
// offsets and its senders' sizes, so it knows exactly which messages it is
// owed, and from whom in what order, at a cost independent of n; it takes them with
// recv, recv_into and any-source receives mixed at random. Message k from s to
// r carries the payload of key (seed, k): a lost message stalls the job (the
// watchdog fails it), a duplicated or reordered one arrives where another was
// due and fails the size or byte check. Tags are the epoch modulo 32, and
// every 16 epochs an allreduce decides whether time is up, so no process can
// run 32 epochs ahead and take a message of the wrong epoch.
//
// Prints the messages, bytes and rate, and exits 1 on the first error.

#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/payload.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace {

namespace sy = switchyard;
using sy::Process;
using sy::Rank;
using sy::Task;

constexpr std::uint64_t kMaxBytes = 64 * 1024;
constexpr int kSendsPerEpoch = 8;
constexpr int kEpochsPerVote = 16;
constexpr sy::Tag kTagEpochs = 32;  // > 2 * kEpochsPerVote: tags of two epochs in flight never meet

struct Config {
  double seconds = 10;
  Rank processes = 64;
  std::uint64_t seed = 1;
  std::size_t capacity = 4;
};

struct Counts {
  std::uint64_t messages = 0, bytes = 0;
};
// Every process adds its counts once, at its end (relaxed: read after run() returns).
struct Totals {
  std::atomic<std::uint64_t> messages{0}, bytes{0};
};

// Message i of an epoch goes `offset` ranks on, with this size and kind.
Rank draw_offset(const Config& c, std::uint64_t epoch, int i, Rank n) {
  return static_cast<Rank>(sytest::mix(c.seed, epoch, static_cast<std::uint64_t>(i), 0x0ff) % n);
}
struct Draw {
  std::uint64_t bytes;
  bool synchronous;
};
Draw draw(const Config& c, std::uint64_t epoch, Rank src, int i) {
  const std::uint64_t x = sytest::mix(c.seed, epoch, src, static_cast<std::uint64_t>(i));
  // log-uniform in [1, 64 Ki], minus one: 0 bytes is as likely as any other octave.
  const double octave = static_cast<double>(x >> 40) / static_cast<double>(1ull << 24) * 17.0;
  const auto bytes = std::min<std::uint64_t>(kMaxBytes, static_cast<std::uint64_t>(std::exp2(octave)) - 1);
  return Draw{bytes, (x & 7) == 0};
}

// What this process is owed from one source in an epoch, in order.
struct Owed {
  std::vector<std::uint64_t> sizes;  // reused across epochs: no allocation once warm
  std::size_t next = 0;  // the next one due this epoch
  std::uint64_t sequence = 0;  // messages taken from this source so far, all epochs
};

void check_message(const Config& c, Rank src, Rank me, Owed& owed, std::span<const std::byte> got, Counts& counts) {
  SY_CHECK(owed.next < owed.sizes.size(), "a message from rank " << src << " to " << me << " that was never sent "
                                                                 << "(duplicated or from another epoch)");
  const std::uint64_t want = owed.sizes[owed.next++];
  SY_CHECK(got.size() == want, "message " << owed.sequence << " from rank " << src << " to " << me << " has "
                                          << got.size() << " bytes, expected " << want << " (lost or reordered)");
  const auto wrong = sy::schedulers::first_wrong_byte(got, sytest::mix(c.seed, owed.sequence), src, me);
  SY_CHECK(!wrong,
           "message " << owed.sequence << " from rank " << src << " to " << me << ": byte " << *wrong << " is wrong");
  ++owed.sequence;
  ++counts.messages;
  counts.bytes += got.size();
}

Task<void> soak(Process& p, const Config& c, Totals& totals, std::chrono::steady_clock::time_point deadline) {
  const Rank n = p.size(), me = p.rank();
  std::vector<Owed> owed(n);
  std::vector<std::uint64_t> sent_to(n, 0);
  std::vector<std::vector<std::byte>> out(kSendsPerEpoch, std::vector<std::byte>(kMaxBytes));
  std::vector<std::byte> in(kMaxBytes);
  std::vector<Rank> owed_from(kSendsPerEpoch, 0);  // the sources of this epoch's messages
  std::vector<Rank> due;  // one entry per owed message, by source; shuffled into the receive order
  std::vector<sy::SendTicket> sends(kSendsPerEpoch);
  Counts counts;
  for (std::uint64_t epoch = 0;; ++epoch) {
    if (epoch % kEpochsPerVote == 0) {
      const std::int64_t late = std::chrono::steady_clock::now() >= deadline;
      if ((co_await p.allreduce(std::span(&late, 1)))[0] > 0) break;
    }
    const sy::Tag tag = static_cast<sy::Tag>(epoch % kTagEpochs);
    for (const Rank s : owed_from) owed[s].sizes.clear();  // last epoch's senders
    due.clear();
    for (int i = 0; i < kSendsPerEpoch; ++i) {
      const Rank offset = draw_offset(c, epoch, i, n);
      const Rank dst = (me + offset) % n, src = (me + n - offset) % n;
      const Draw d = draw(c, epoch, me, i);
      const auto body = std::span(out[i]).first(d.bytes);
      sy::schedulers::fill_payload(body, sytest::mix(c.seed, sent_to[dst]++), me, dst);
      sends[i] = d.synchronous ? p.post_ssend(dst, body, tag) : p.post_send(dst, body, tag);
      owed[src].sizes.push_back(draw(c, epoch, src, i).bytes);
      owed[src].next = 0;
      owed_from[i] = src;
      due.push_back(src);
    }
    // A random order, each message taken by recv or recv_into from its source,
    // or (marked kAnySource) by an any-source receive. Those come last: one
    // taken earlier could take the message a receive from its source waits for.
    std::uint64_t order = sytest::mix(c.seed, epoch, me, 0xd0e);
    for (std::size_t i = due.size(); i > 1; --i) std::swap(due[i - 1], due[(order = sytest::splitmix64(order)) % i]);
    for (Rank& s : due) {
      if ((order = sytest::splitmix64(order)) % 3 == 0) s = sy::kAnySource;
    }
    std::stable_partition(due.begin(), due.end(), [](Rank s) { return s != sy::kAnySource; });
    for (const Rank s : due) {
      if (s == sy::kAnySource) {
        sy::Message m = co_await p.recv(sy::kAnySource, tag);
        check_message(c, m.source(), me, owed[m.source()], m.bytes(), counts);
      } else if ((order = sytest::splitmix64(order)) % 2 == 0) {
        sy::Message m = co_await p.recv(s, tag);
        check_message(c, s, me, owed[s], m.bytes(), counts);
      } else {
        const std::uint64_t got = co_await p.recv_into(s, in, tag);
        check_message(c, s, me, owed[s], std::span(in).first(got), counts);
      }
    }
    co_await p.wait_all(sends);
  }
  totals.messages.fetch_add(counts.messages, std::memory_order_relaxed);
  totals.bytes.fetch_add(counts.bytes, std::memory_order_relaxed);
}

// --self-test: the checks above must catch each kind of fault. Two messages of
// one size from rank 2 to rank 5, sequence numbers 0 and 1, delivered right,
// with one byte wrong, the first one twice, and in the reverse order.
int self_test(const Config& c) {
  constexpr Rank kSrc = 2, kMe = 5;
  constexpr std::uint64_t kSize = 4096;
  std::vector<std::vector<std::byte>> sent(2, std::vector<std::byte>(kSize));
  for (std::uint64_t k = 0; k < 2; ++k) sy::schedulers::fill_payload(sent[k], sytest::mix(c.seed, k), kSrc, kMe);
  // Delivers `arrivals` (indices into sent, one possibly corrupted) to a fresh receiver owed both.
  auto deliver = [&](std::vector<std::size_t> arrivals, std::size_t corrupt_at) {
    Owed owed;
    owed.sizes = {kSize, kSize};
    Counts counts;
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
      std::vector<std::byte> got = sent[arrivals[i]];
      if (i == 0 && corrupt_at < kSize) got[corrupt_at] ^= std::byte{0x10};
      check_message(c, kSrc, kMe, owed, got, counts);
    }
  };
  struct Case {
    const char* fault;
    std::vector<std::size_t> arrivals;
    std::size_t corrupt_at;
  };
  const Case cases[] = {{"a wrong byte", {0, 1}, 1234},
                        {"a duplicate", {0, 0}, kSize},
                        {"a duplicate beyond the owed", {0, 1, 1}, kSize},
                        {"a reordering", {1, 0}, kSize}};
  try {
    deliver({0, 1}, kSize);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "switchyard_soak: self-test: the right messages were refused: %s\n", e.what());
    return 1;
  }
  for (const Case& k : cases) {
    try {
      deliver(k.arrivals, k.corrupt_at);
      std::fprintf(stderr, "switchyard_soak: self-test: %s went unnoticed\n", k.fault);
      return 1;
    } catch (const sytest::CheckFailed& e) {
      std::printf("switchyard_soak: self-test: %s caught: %s\n", k.fault, e.what());
    }
  }
  return 0;
}

double parse_number(const char* option, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0)) {
    std::fprintf(stderr, "switchyard_soak: %s: '%s' is not a positive number\n", option, sy::printable(text).c_str());
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  if (argc == 2 && std::string(argv[1]) == "--self-test") return self_test(c);
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (i + 1 == argc) {
      std::fprintf(stderr, "switchyard_soak: %s needs a value\n", sy::printable(option).c_str());
      return 2;
    }
    const double v = parse_number(argv[i], argv[i + 1]);
    ++i;
    if (option == "--seconds") {
      c.seconds = v;
    } else if (option == "--processes" && v == std::floor(v) && v <= 65536) {
      c.processes = static_cast<Rank>(v);
    } else if (option == "--seed" && v == std::floor(v)) {
      c.seed = static_cast<std::uint64_t>(v);
    } else if (option == "--capacity" && v == std::floor(v) && v <= (1 << 24)) {
      c.capacity = static_cast<std::size_t>(v);
    } else {
      std::fprintf(stderr, "switchyard_soak: unknown option or bad value: %s %s\n", sy::printable(option).c_str(),
                   sy::printable(argv[i]).c_str());
      return 2;
    }
  }
  sy::Runtime rt;
  sy::RunOptions options;
  options.ring_capacity = c.capacity;
  options.stall_timeout = std::chrono::seconds(10);
  Totals totals;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(c.seconds));
  try {
    rt.run(
        c.processes, [&](Process& p) { return soak(p, c, totals, deadline); }, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "switchyard_soak: FAILED after %llu messages: %s\n",
                 static_cast<unsigned long long>(totals.messages.load()), e.what());
    return 1;
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "switchyard_soak: %llu messages, %.1f MiB in %.1f s on %zu cores (%d processes, capacity %zu): "
      "%.0f messages/s, 0 lost, 0 duplicated, 0 reordered, every byte verified\n",
      static_cast<unsigned long long>(totals.messages.load()), totals.bytes.load() / 1048576.0, elapsed,
      rt.cores().size(), static_cast<int>(c.processes), c.capacity, totals.messages.load() / elapsed);
  return 0;
}
