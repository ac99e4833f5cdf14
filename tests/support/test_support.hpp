#pragma once
// Helpers shared by the switchyard tests: deterministic payloads that encode
// (source, destination, sequence), checks that throw from inside a process (so
// run() rethrows them and the test fails with the message), and job plans.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <switchyard/runtime.hpp>
#include <switchyard/splitmix64.hpp>

namespace sytest {

using switchyard::Rank;

#if defined(SWITCHYARD_TEST_SANITIZE)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// Thrown by checks inside processes; run() rethrows it and the test reports it.
struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define SY_CHECK(cond, msg)                                                                 \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::ostringstream sy_check_os_;                                                      \
      sy_check_os_ << __FILE__ << ":" << __LINE__ << ": check `" #cond "` failed: " << msg; \
      throw ::sytest::CheckFailed(sy_check_os_.str());                                      \
    }                                                                                       \
  } while (0)

using switchyard::splitmix64;

inline std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0, std::uint64_t d = 0) {
  return splitmix64(splitmix64(splitmix64(splitmix64(a) ^ b) ^ c) ^ d);
}

// Fills `out` with the bytes of the stream named by `key`: every byte depends on
// the key and on its position, so a byte from another message, another offset or
// another sender never matches.
inline void fill_pattern(std::byte* out, std::size_t n, std::uint64_t key) {
  std::uint64_t s = splitmix64(key ^ 0x5bd1e9955bd1e995ull);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s = splitmix64(s + i);
    std::memcpy(out + i, &s, 8);
  }
  if (i < n) {
    s = splitmix64(s + i);
    std::memcpy(out + i, &s, n - i);
  }
}

inline std::vector<std::byte> pattern(std::size_t n, std::uint64_t key) {
  std::vector<std::byte> v(n);
  fill_pattern(v.data(), n, key);
  return v;
}

// Index of the first byte where `got` differs from the pattern of `key`, or npos.
inline std::size_t first_mismatch(std::span<const std::byte> got, std::uint64_t key) {
  if (got.empty()) return std::string::npos;
  std::vector<std::byte> want = pattern(got.size(), key);
  if (std::memcmp(got.data(), want.data(), got.size()) == 0) return std::string::npos;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) return i;
  }
  return std::string::npos;
}

inline std::uint64_t message_key(Rank src, Rank dst, std::uint64_t seq, std::uint32_t tag = 0) {
  return mix(src + 1, dst + 1, seq + 1, tag + 1);
}

// m is message `seq` from src to dst (pattern(size, message_key(src, dst, seq, tag))).
inline void check_message(const switchyard::Message& m, Rank src, Rank dst, std::uint64_t seq, std::size_t size,
                          const std::string& what, std::uint32_t tag = 0) {
  SY_CHECK(m.size() == size, what << ": " << m.size() << " bytes, expected " << size);
  SY_CHECK(first_mismatch(m.bytes(), message_key(src, dst, seq, tag)) == std::string::npos,
           what << ": wrong bytes from " << src);
}

// One round of a trade between two processes: each sends the other a
// message (8 bytes of the pattern of message_key(sender, receiver, round,
// tag)) and checks the one it receives.
inline switchyard::Task<void> trade_messages(switchyard::Process& p, Rank peer, std::uint64_t round,
                                             std::uint32_t tag) {
  const std::vector<std::byte> mine = pattern(8, message_key(p.rank(), peer, round, tag));
  co_await p.send(peer, mine, tag);
  const switchyard::Message m = co_await p.recv(peer, tag);
  check_message(m, peer, p.rank(), round, 8, "round " + std::to_string(round), tag);
}

template <class T>
std::span<const std::byte> bytes_of(const T& v) {
  return std::as_bytes(std::span<const T, 1>(&v, 1));
}

// The message of the InvalidArgument `call()` throws, or "(no InvalidArgument)".
template <class Call>
std::string invalid_argument_of(Call&& call) {
  try {
    call();
  } catch (const switchyard::InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

// How a job that a process fails ended, as one node saw it: which error run()
// threw here (the original, thrown on this node; another node's
// RemoteFailure; or this node's StallError), its text, and how long run() took.
struct JobFailure {
  enum Kind { kNormally, kOriginal, kRemote, kStall } kind = kNormally;
  std::string error;
  std::chrono::steady_clock::duration took{};
};
template <class Body>
JobFailure run_failing(switchyard::Runtime& rt, Rank n, Body body, const switchyard::RunOptions& options) {
  JobFailure f;
  const auto started = std::chrono::steady_clock::now();
  try {
    rt.run(n, body, options);
  } catch (const switchyard::StallError& e) {
    f = {JobFailure::kStall, e.what()};
  } catch (const switchyard::RemoteFailure& e) {
    f = {JobFailure::kRemote, e.what()};
  } catch (const std::exception& e) {
    f = {JobFailure::kOriginal, e.what()};
  }
  f.took = std::chrono::steady_clock::now() - started;
  return f;
}

// One round of the freed-ids tests (test_communicator, test_mpi): a dup of the
// world with its library duplicate, and a 2-way split of the world, each
// carrying a ring of checked messages (neighbours `stride` ranks apart in the
// dup, 1 in the split), then an active message (`touch`) on the dup; both
// freed. Returns the three context ids.
inline switchyard::Task<std::vector<switchyard::ContextId>> make_use_and_free(switchyard::Process& p,
                                                                              std::uint64_t round,
                                                                              switchyard::Rank stride,
                                                                              switchyard::HandlerId touch) {
  using namespace switchyard;
  Communicator d = co_await p.world().dup();
  Communicator s = co_await p.world().split(p.rank() % 2, 0);
  const Communicator lib = d.library(LibraryKey("freed.lib"));
  const std::vector<ContextId> ids{d.context(), s.context(), lib.context()};
  for (const auto& [c, step, tag] : {std::tuple{lib, stride, Tag{1}}, std::tuple{s, Rank{1}, Tag{2}}}) {
    const Rank n = c.size(), right = (c.rank() + step) % n, left = (c.rank() + n - step % n) % n;
    const auto out = pattern(40, message_key(c.rank(), right, round, tag));
    RecvTicket r = c.post_recv(left, tag);
    co_await c.send(right, out, tag);
    co_await p.wait(r);
    check_message(r.take_message(), left, c.rank(), round, 40,
                  "round " + std::to_string(round) + ", communicator " + std::to_string(c.context()), tag);
  }
  d.post_active((d.rank() + stride) % d.size(), touch, {});
  co_await s.free();
  co_await d.free();
  SY_CHECK(!d.valid() && !s.valid(), "a freed handle is a null one");
  co_return ids;
}

}  // namespace sytest
