// The message path allocates nothing per message once warm: two processes on
// two cores exchange 8-byte messages (send with recv and recv_into), bursts of
// posted sends and single-copy messages; after a warm-up round of the same,
// a second round must not allocate at all (every operator new of the program
// is counted, on both cores). What is warm: the request pools, the staging
// buffers and the envelopes of each core.

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <switchyard/runtime.hpp>
#include <vector>

#include "allocation_counter.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;

constexpr int kRoundTrips = 300;
constexpr int kBursts = 20;
constexpr int kBurstMessages = 64;
constexpr std::size_t kLarge = 4096;  // above the default eager limit: single copy

// Two rounds of traffic between ranks 0 and 1, every value checked; `bad`
// counts wrong values. `large` is sent, `landing` receives the peer's. Rank 0
// counts the allocations of the program (of both cores) during the second
// round, from a message of rank 1 before it to one after it.
Task<void> traffic(Process& p, std::vector<std::byte>& large, std::vector<std::byte>& landing, std::atomic<int>& bad,
                   std::uint64_t& allocations) {
  const Rank peer = 1 - p.rank();
  std::uint64_t out = 0, in = 0;
  const auto in_bytes = std::as_writable_bytes(std::span<std::uint64_t, 1>(&in, 1));
  for (int round = 0; round < 2; ++round) {
    if (round == 1 && p.rank() == 1) co_await p.send(peer, sytest::bytes_of(out));
    if (round == 1 && p.rank() == 0) {
      co_await p.recv_into(peer, in_bytes);
      allocations = g_allocations.load();
    }
    for (int i = 0; i < kRoundTrips; ++i) {
      out = static_cast<std::uint64_t>(i) * 2 + p.rank();
      if (p.rank() == 0) co_await p.send(peer, sytest::bytes_of(out));
      if (i % 2) {
        co_await p.recv_into(peer, in_bytes);
      } else {
        Message m = co_await p.recv(peer);
        std::memcpy(&in, m.bytes().data(), sizeof in);
      }
      bad += in != static_cast<std::uint64_t>(i) * 2 + peer;
      if (p.rank() == 1) co_await p.send(peer, sytest::bytes_of(out));
    }
    std::array<std::uint64_t, kBurstMessages> values{};
    std::array<SendTicket, kBurstMessages> sent;
    for (int b = 0; b < kBursts; ++b) {
      if (p.rank() == 0) {
        for (int k = 0; k < kBurstMessages; ++k) {
          values[k] = static_cast<std::uint64_t>(b) * kBurstMessages + k;
          sent[k] = p.post_send(peer, sytest::bytes_of(values[k]));
        }
        co_await p.wait_all(sent);
      } else {
        for (int k = 0; k < kBurstMessages; ++k) {
          co_await p.recv_into(peer, in_bytes);
          bad += in != static_cast<std::uint64_t>(b) * kBurstMessages + k;
        }
      }
      // Single copy both ways: the first byte says which burst.
      large[0] = std::byte(b);
      SendTicket t = p.post_send(peer, large);
      co_await p.recv_into(peer, landing);
      bad += landing[0] != std::byte(b);
      co_await p.wait(t);
    }
  }
  if (p.rank() == 1) co_await p.send(peer, sytest::bytes_of(out));
  if (p.rank() == 0) {
    co_await p.recv_into(peer, in_bytes);
    allocations = g_allocations.load() - allocations;
  }
}

TEST(MessageAllocations, CrossCoreMessagesAllocateNothingOnceWarm) {
  Runtime rt;
  if (rt.cores().size() < 2) GTEST_SKIP() << "needs two cores";
  RunOptions opts;
  opts.placement = Placement::explicit_map({rt.cores().front(), rt.cores().back()});
  std::atomic<int> bad{0};
  std::uint64_t allocations = 0;
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        std::vector<std::byte> large(kLarge, std::byte{7}), landing(kLarge);
        co_await traffic(p, large, landing, bad, allocations);
      },
      opts);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(allocations, 0u) << "allocations in a round of " << 2 * kRoundTrips + kBursts * (kBurstMessages + 2)
                             << " messages";
}

}  // namespace
