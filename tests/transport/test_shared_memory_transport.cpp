// detail::SharedMemoryTransport (the batched core-to-core transport) and
// detail::Doorbell (sleeping and waking without a fence on the waker's side),
// driven by plain threads standing in for two workers.

#include "doorbell.hpp"
#include "shared_memory_transport.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;
using switchyard::detail::ArrivalSink;
using switchyard::detail::Doorbell;
using switchyard::detail::RingSet;
using switchyard::detail::Route;
using switchyard::detail::SharedMemoryTransport;
using switchyard::detail::WireHeader;
using switchyard::detail::WireKind;

// Packet i of a stream: eager, `size` bytes of the pattern of key i, the size
// in the header and i in its tag.
WireHeader header_of(std::uint32_t i, std::uint64_t size) {
  WireHeader h{};
  h.kind = WireKind::kEager;
  h.src = 0;
  h.dst = 1;
  h.tag = i;
  h.size = size;
  return h;
}

// Checks that packets arrive as posted: in order, each one whole.
class CheckingSink final : public ArrivalSink {
 public:
  explicit CheckingSink(const std::vector<std::uint64_t>& sizes) : sizes_(sizes) {}
  void arrived(const WireHeader& h, std::span<const std::byte> payload) override {
    if (!error.empty()) return;
    if (h.tag != next || next >= sizes_.size()) {
      error = "packet " + std::to_string(h.tag) + " arrived, expected " + std::to_string(next);
    } else if (h.size != sizes_[next] || payload.size() != sizes_[next]) {
      error = "packet " + std::to_string(next) + " has " + std::to_string(payload.size()) + " bytes";
    } else if (sytest::first_mismatch(payload, next) != std::string::npos) {
      error = "packet " + std::to_string(next) + " corrupted";
    }
    ++next;
  }
  std::uint32_t next = 0;
  std::string error;

 private:
  const std::vector<std::uint64_t>& sizes_;
};

// Core 0 posts every packet and flushes now and then (or, `published`, posts
// each one published at once, as a running process does: straight into the
// ring's cells when it fits); core 1 polls. Returns the sink's verdict.
std::string stream(std::size_t capacity_lines, const std::vector<std::uint64_t>& sizes, std::uint32_t flush_every,
                   bool published = false) {
  Doorbell bells[2];
  RingSet rings({&bells[0], &bells[1]}, capacity_lines);
  SharedMemoryTransport sender, receiver;
  sender.attach(rings, 0);
  receiver.attach(rings, 1);
  CheckingSink sink(sizes);
  // The consumer drains until every packet has arrived (after an error too, so
  // that the sender never waits on a full ring), or gives up after a minute.
  std::atomic<bool> timed_out{false};
  std::thread consumer([&] {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (sink.next < sizes.size()) {
      if (receiver.poll(sink)) continue;
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  });
  const Route to{0, 1, 0};
  for (std::uint32_t i = 0; i < sizes.size(); ++i) {
    const auto payload = sytest::pattern(sizes[i], i);
    if (published) {
      sender.post_published(to, header_of(i, sizes[i]), payload);
    } else {
      sender.post(to, header_of(i, sizes[i]), payload);
    }
    if ((i + 1) % flush_every == 0) sender.flush();
  }
  // What a full ring left staged.
  while (!timed_out && (sender.flush() || sender.has_backlog())) std::this_thread::yield();
  consumer.join();
  if (timed_out)
    return "packets missing after a minute: " + std::to_string(sink.next) + " of " + std::to_string(sizes.size()) +
           " arrived";
  EXPECT_FALSE(receiver.has_arrivals()) << "slots beyond the packets posted";
  std::uint64_t slots = 0;
  for (const std::uint64_t size : sizes) slots += switchyard::detail::packet_slots(size);
  EXPECT_EQ(receiver.stats().slots_received, slots) << "every slot that crossed counted once";
  return sink.error;
}

TEST(SharedMemoryTransport, SmallPacketsInOrder) {
  std::vector<std::uint64_t> sizes;
  for (std::uint32_t i = 0; i < 20000; ++i) sizes.push_back(i % 49);
  EXPECT_EQ(stream(1024, sizes, 64), "");
}

// Packets posted published, most written straight into the ring's cells and
// read where they lie, some (a ring full, or packets staged before them)
// staged and pushed: the two ways interleave in one stream, in order.
TEST(SharedMemoryTransport, PublishedPacketsInOrderWhateverTheirWay) {
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> sizes;
  for (std::uint32_t i = 0; i < 20000; ++i) sizes.push_back(rng() % 8 == 0 ? rng() % 2000 : rng() % 49);
  for (std::size_t lines : {std::size_t{1}, std::size_t{4}, std::size_t{1024}}) {
    SCOPED_TRACE("ring of " + std::to_string(lines) + " lines");
    EXPECT_EQ(stream(lines, sizes, 1 + lines % 5, true), "");
  }
}

// Packets larger than a pop batch and larger than the ring: cut by batch ends
// and by a ring that takes them a few slots at a time, reassembled whole.
TEST(SharedMemoryTransport, PacketsCutByBatchesAndRingsArriveWhole) {
  std::mt19937_64 rng(5);
  std::vector<std::uint64_t> sizes;
  for (int i = 0; i < 400; ++i) sizes.push_back(rng() % 3 == 0 ? rng() % 40000 : rng() % 300);
  for (std::size_t lines : {std::size_t{1}, std::size_t{3}, std::size_t{64}, std::size_t{1024}}) {
    SCOPED_TRACE("ring of " + std::to_string(lines) + " lines");
    EXPECT_EQ(stream(lines, sizes, 1 + lines % 7), "");
  }
}

// The flow-control window: a packet is accepted once at most a ring's worth
// of slots posted before it still waits to enter the ring.
TEST(SharedMemoryTransport, AcceptedWithinOneRingOfBacklog) {
  Doorbell bells[2];
  RingSet rings({&bells[0], &bells[1]}, 1);  // one cell: 3 slots
  SharedMemoryTransport sender;
  sender.attach(rings, 0);
  const Route to{0, 1, 0};
  const auto payload = sytest::pattern(16, 1);
  const std::uint64_t first = sender.post(to, header_of(0, 16), payload);  // 3 slots
  const std::uint64_t second = sender.post(to, header_of(1, 16), payload);  // 6 slots in all
  EXPECT_EQ(first, 3u);
  EXPECT_EQ(second, 6u);
  EXPECT_TRUE(sender.accepted(to, first));
  EXPECT_FALSE(sender.accepted(to, second)) << "6 slots staged, none in the ring: beyond a 3-slot window";
  EXPECT_TRUE(sender.flush());
  EXPECT_TRUE(sender.has_backlog()) << "a 3-slot ring takes 3 of the 6 slots";
  EXPECT_TRUE(sender.accepted(to, second));
  EXPECT_GE(sender.stats().ring_full, 1u);
}

// A sleeper is woken by a ring that follows work it had not seen, however
// the two interleave. Each round is a hand-off: the waker waits until the
// sleeper has taken the previous item, lets a random time pass (so that the
// sleeper is caught anywhere between announcing its sleep and blocking), then
// publishes and rings. A lost wake-up shows as a sleep that ran into its
// timeout with the item already published. `fenced`: the sleep counts on
// ring_fenced() alone (Doorbell::WokenBy::fenced_rings), as a worker thread's
// with no job does; otherwise on ring().
void expect_no_wake_up_lost(bool fenced) {
  Doorbell bell;
  std::atomic<std::uint64_t> published{0}, taken{0};
  std::atomic<bool> lost{false};
  constexpr std::uint64_t kRounds = 5000;
  const Doorbell::WokenBy woken_by = fenced ? Doorbell::WokenBy::fenced_rings : Doorbell::WokenBy::any_ring;
  std::thread sleeper([&] {
    std::uint64_t seen = 0;
    while (seen < kRounds && !lost) {
      const auto t0 = std::chrono::steady_clock::now();
      bell.sleep([&] { return published.load(std::memory_order_relaxed) > seen; }, 500ms, woken_by);
      if (std::chrono::steady_clock::now() - t0 >= 400ms && published.load() > seen) lost = true;
      seen = published.load(std::memory_order_acquire);
      taken.store(seen, std::memory_order_release);
    }
  });
  std::mt19937 rng(3);
  for (std::uint64_t i = 1; i <= kRounds && !lost; ++i) {
    while (taken.load(std::memory_order_acquire) < i - 1) std::this_thread::yield();
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(rng() % 20000);
    while (std::chrono::steady_clock::now() < until) {
    }
    published.store(i, std::memory_order_release);
    if (fenced) {
      bell.ring_fenced();
    } else {
      bell.ring();
    }
  }
  sleeper.join();
  EXPECT_FALSE(lost) << "a ring after published work did not wake the sleeper";
  EXPECT_EQ(taken.load(), kRounds);
}

TEST(Doorbell, NoWakeUpIsLost) { expect_no_wake_up_lost(false); }

TEST(Doorbell, NoWakeUpIsLostWithFencedRings) { expect_no_wake_up_lost(true); }

}  // namespace
