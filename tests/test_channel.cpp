// detail::Channel (the core-to-core SPSC ring of packets) and the Packet layout.

#include <switchyard/transport/channel.hpp>
#include <switchyard/transport/packet.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using switchyard::detail::Channel;
using switchyard::detail::kCacheLine;
using switchyard::detail::kHeaderInlineBytes;
using switchyard::detail::Packet;
using switchyard::detail::PacketHeader;
using switchyard::detail::PacketKind;
using switchyard::detail::packets_for;

Packet make_packet(std::uint64_t seq) {
  Packet p{};
  p.head.header.kind = PacketKind::kMessage;
  p.head.header.single_copy = false;
  p.head.header.tag = static_cast<std::uint32_t>(seq * 3);
  p.head.header.src = static_cast<std::uint32_t>(seq);
  p.head.header.dst = static_cast<std::uint32_t>(~seq);
  p.head.header.size = seq;
  p.head.header.handle = nullptr;
  sytest::fill_pattern(p.head.inline_bytes.data(), p.head.inline_bytes.size(), seq);
  return p;
}

// Returns an empty string if `p` is the packet make_packet(seq) built.
std::string check_packet(const Packet& p, std::uint64_t seq) {
  const Packet want = make_packet(seq);
  if (std::memcmp(&p, &want, sizeof(Packet)) != 0) {
    return "packet " + std::to_string(seq) + " corrupted (got header size " + std::to_string(p.head.header.size) + ")";
  }
  return {};
}

TEST(PacketLayout, IsOneCacheLine) {
  EXPECT_EQ(kCacheLine, 64u);
  EXPECT_EQ(sizeof(Packet), kCacheLine);
  EXPECT_EQ(alignof(Packet), kCacheLine);
  EXPECT_EQ(sizeof(PacketHeader), 32u);
  EXPECT_EQ(kHeaderInlineBytes, kCacheLine - sizeof(PacketHeader));
  EXPECT_EQ(kHeaderInlineBytes, 32u);
  EXPECT_TRUE(std::is_trivially_copyable_v<Packet>);
}

TEST(PacketLayout, HeaderAndInlineBytesShareTheLineWithoutOverlap) {
  Packet p{};
  const auto* base = reinterpret_cast<const std::byte*>(&p);
  EXPECT_EQ(reinterpret_cast<const std::byte*>(&p.head.header), base);
  EXPECT_EQ(reinterpret_cast<const std::byte*>(p.head.inline_bytes.data()), base + sizeof(PacketHeader));
  EXPECT_EQ(reinterpret_cast<const std::byte*>(p.continuation.data()), base);
  EXPECT_EQ(p.continuation.size(), kCacheLine);
  // 64-bit sizes: a message over 4 GiB is representable.
  p.head.header.size = (std::uint64_t{5} << 30) + 3;
  EXPECT_EQ(p.head.header.size, (std::uint64_t{5} << 30) + 3);
  // Writing the inline bytes leaves the header alone.
  p.head.header.src = 123;
  std::memset(p.head.inline_bytes.data(), 0xff, p.head.inline_bytes.size());
  EXPECT_EQ(p.head.header.src, 123u);
  EXPECT_EQ(p.head.header.size, (std::uint64_t{5} << 30) + 3);
}

TEST(PacketsFor, BoundaryValues) {
  EXPECT_EQ(packets_for(0), 1u);
  EXPECT_EQ(packets_for(1), 1u);
  EXPECT_EQ(packets_for(32), 1u);
  EXPECT_EQ(packets_for(33), 2u);
  EXPECT_EQ(packets_for(96), 2u);
  EXPECT_EQ(packets_for(97), 3u);
  EXPECT_EQ(packets_for(1024), 17u);  // 32 + 16*64 = 1056 >= 1024; 32 + 15*64 = 992 < 1024
  EXPECT_EQ(packets_for(std::uint64_t{1} << 20), 1u + ((std::uint64_t{1} << 20) - 32 + 63) / 64);
  const std::uint64_t big = (std::uint64_t{5} << 29);  // 2.5 GiB
  EXPECT_EQ(packets_for(big), 1u + (big - 32 + 63) / 64);
  static_assert(packets_for(32) == 1 && packets_for(33) == 2, "usable in constant expressions");
}

TEST(PacketsFor, IsTheSmallestCountThatHoldsThePayload) {
  for (std::uint64_t s = 0; s <= 5000; ++s) {
    const std::uint64_t k = packets_for(s);
    ASSERT_GE(kHeaderInlineBytes + (k - 1) * kCacheLine, s) << "too few packets for " << s << " bytes";
    if (k > 1) {
      ASSERT_LT(kHeaderInlineBytes + (k - 2) * kCacheLine, s) << "too many packets for " << s << " bytes";
    }
  }
}

TEST(Channel, SinglePacketFifo) {
  Channel ch(8);
  EXPECT_FALSE(ch.has_packets());
  for (std::uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(ch.push(make_packet(i)));
  EXPECT_TRUE(ch.has_packets());
  Packet out[8];
  ASSERT_EQ(ch.pop(out, 8), 5u);
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(check_packet(out[i], i), "");
  EXPECT_FALSE(ch.has_packets());
  EXPECT_EQ(ch.pop(out, 8), 0u);
}

TEST(Channel, CapacityIsRespectedAndNeverOverwritten) {
  for (std::size_t cap : {1u, 2u, 7u, 64u}) {
    Channel ch(cap);
    for (std::size_t i = 0; i < cap; ++i) ASSERT_TRUE(ch.push(make_packet(i))) << "capacity " << cap;
    EXPECT_FALSE(ch.push(make_packet(999))) << "a full ring of capacity " << cap << " accepted another packet";
    std::vector<Packet> out(cap + 4);
    ASSERT_EQ(ch.pop(out.data(), out.size()), cap);
    for (std::size_t i = 0; i < cap; ++i) EXPECT_EQ(check_packet(out[i], i), "");
  }
}

TEST(Channel, BatchPushTakesWhatFitsInOrder) {
  Channel ch(4);
  std::vector<Packet> in;
  for (std::uint64_t i = 0; i < 10; ++i) in.push_back(make_packet(i));
  EXPECT_EQ(ch.push(in.data(), in.size()), 4u);
  Packet out[3];
  ASSERT_EQ(ch.pop(out, 3), 3u);  // pops at most `max`
  for (std::uint64_t i = 0; i < 3; ++i) EXPECT_EQ(check_packet(out[i], i), "");
  EXPECT_EQ(ch.push(in.data() + 4, 6), 3u);
  std::vector<Packet> rest(10);
  ASSERT_EQ(ch.pop(rest.data(), rest.size()), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) EXPECT_EQ(check_packet(rest[i], i + 3), "");
}

TEST(Channel, WrapAroundManyTimes) {
  Channel ch(5);
  std::uint64_t next_in = 0, next_out = 0;
  std::vector<Packet> buf(5);
  for (int round = 0; round < 1000; ++round) {
    const std::size_t n = 1 + round % 5;
    for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(ch.push(make_packet(next_in++)));
    const std::size_t got = ch.pop(buf.data(), buf.size());
    ASSERT_EQ(got, n);
    for (std::size_t i = 0; i < got; ++i) ASSERT_EQ(check_packet(buf[i], next_out++), "");
  }
}

// One producer thread, one consumer thread, as the runtime uses it: every packet
// arrives once, in order, intact, even with a one-slot ring.
void spsc_stress(std::size_t capacity, std::uint64_t count) {
  Channel ch(capacity);
  std::atomic<bool> failed{false};
  std::thread producer([&] {
    std::vector<Packet> batch;
    std::uint64_t i = 0;
    while (i < count && !failed.load(std::memory_order_relaxed)) {
      const std::uint64_t before = i;
      if (i % 3 == 0) {
        if (ch.push(make_packet(i))) ++i;
      } else {
        batch.clear();
        for (std::uint64_t j = i; j < std::min(count, i + 7); ++j) batch.push_back(make_packet(j));
        i += ch.push(batch.data(), batch.size());
      }
      // A full ring: let the consumer run (on a busy machine it may share our core).
      if (i == before) std::this_thread::yield();
    }
  });
  std::vector<Packet> out(16);
  std::uint64_t next = 0;
  std::string error;
  while (next < count && error.empty()) {
    const std::size_t n = ch.pop(out.data(), 1 + next % out.size());
    for (std::size_t i = 0; i < n && error.empty(); ++i) error = check_packet(out[i], next++);
    if (n == 0) std::this_thread::yield();
  }
  if (!error.empty()) failed = true;
  producer.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(next, count);
  EXPECT_FALSE(ch.has_packets()) << "packets beyond the ones pushed";
}

TEST(Channel, ConcurrentProducerConsumerCapacity1) { spsc_stress(1, 100'000); }
TEST(Channel, ConcurrentProducerConsumerCapacity1024) { spsc_stress(1024, 1'000'000); }

}  // namespace
