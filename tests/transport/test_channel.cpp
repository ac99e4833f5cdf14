// detail::Channel (the core-to-core SPSC ring of 16-byte slots) and the wire
// layout of packets in it.

#include <switchyard/transport/wire.hpp>
#include "channel.hpp"
#include "copy_bytes.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using switchyard::detail::Channel;
using switchyard::detail::kHeaderSlots;
using switchyard::detail::packet_slots;
using switchyard::detail::payload_slots;
using switchyard::detail::Slot;
using switchyard::detail::wire_payload_bytes;
using switchyard::detail::WireHeader;
using switchyard::detail::WireKind;

Slot make_slot(std::uint64_t seq) {
  Slot s;
  sytest::fill_pattern(s.bytes, sizeof s.bytes, seq);
  return s;
}

// Returns an empty string if `s` is the slot make_slot(seq) built.
std::string check_slot(const Slot& s, std::uint64_t seq) {
  const Slot want = make_slot(seq);
  if (std::memcmp(&s, &want, sizeof(Slot)) != 0) return "slot " + std::to_string(seq) + " corrupted";
  return {};
}

TEST(WireLayout, HeaderIsTwoSlotsAndSlotsAreSixteenBytes) {
  EXPECT_EQ(sizeof(Slot), 16u);
  EXPECT_EQ(alignof(Slot), 16u);
  EXPECT_EQ(sizeof(WireHeader), 32u);
  EXPECT_EQ(kHeaderSlots, 2u);
  EXPECT_TRUE(std::is_trivially_copyable_v<Slot>);
  EXPECT_TRUE(std::is_trivially_copyable_v<WireHeader>);
  // Four 16-byte messages in three cache lines: small messages share lines.
  EXPECT_EQ(4 * packet_slots(16) * sizeof(Slot), 3 * switchyard::kCacheLine);
  // 64-bit sizes: a message over 4 GiB is representable.
  WireHeader h{};
  h.size = (std::uint64_t{5} << 30) + 3;
  EXPECT_EQ(h.size, (std::uint64_t{5} << 30) + 3);
}

// make_wire_header builds the header from words: each field must read back
// as given, at its extremes (a field spilling into its neighbour shows here).
TEST(WireLayout, HeaderMadeFromWordsReadsBackEveryField) {
  const std::uint64_t sizes[] = {0, 8, switchyard::detail::kMaxMessageBytes};
  const std::uint8_t flags[] = {0, WireHeader::kSynchronous, WireHeader::kGranted, 0xff};
  const WireKind kinds[] = {WireKind::kEager, WireKind::kRendezvous, WireKind::kSendDone, WireKind::kLockRelease};
  for (const std::uint64_t size : sizes) {
    for (const std::uint8_t flag : flags) {
      for (const WireKind kind : kinds) {
        const WireHeader h = switchyard::detail::make_wire_header(kind, flag, size, 0xfedcba9876543210u, 0xffffffffu, 7,
                                                                  0x80000001u, 0xfffffffeu);
        EXPECT_EQ(h.size, size);
        EXPECT_EQ(h.flags, flag);
        EXPECT_EQ(h.kind, kind);
        EXPECT_EQ(h.context, 0xfedcba9876543210u);
        EXPECT_EQ(h.src, 0xffffffffu);
        EXPECT_EQ(h.dst, 7u);
        EXPECT_EQ(h.tag, 0x80000001u);
        EXPECT_EQ(h.request, 0xfffffffeu);
      }
    }
  }
  const WireHeader zero = switchyard::detail::make_wire_header(WireKind::kEager, 0, 0, 0, 0, 0, 0, 0);
  EXPECT_EQ(zero.size, 0u);
  EXPECT_EQ(zero.kind, WireKind::kEager);
  EXPECT_EQ(zero.src | zero.dst | zero.tag | zero.request, 0u);
}

TEST(WireLayout, PayloadOnTheWireByKind) {
  WireHeader h{};
  h.size = 1000;
  h.kind = WireKind::kEager;
  EXPECT_EQ(wire_payload_bytes(h), 1000u);
  h.kind = WireKind::kActive;
  EXPECT_EQ(wire_payload_bytes(h), 1000u);
  h.kind = WireKind::kRendezvous;  // the sender's address, not the message
  EXPECT_EQ(wire_payload_bytes(h), 8u);
  h.kind = WireKind::kSendDone;
  EXPECT_EQ(wire_payload_bytes(h), 0u);
}

// copy_bytes at every size up to past its fixed-move cases: each byte
// copied, none beyond n written, at offsets that misalign both ends.
TEST(CopyBytes, EveryByteAndNothingBeyond) {
  for (std::size_t offset = 0; offset < 3; ++offset) {
    for (std::uint64_t n = 0; n <= 70; ++n) {
      std::vector<std::byte> from(n + 8), to(n + 8, std::byte{0xee});
      sytest::fill_pattern(from.data(), from.size(), n);
      switchyard::detail::copy_bytes(to.data() + offset, from.data() + offset, n);
      for (std::size_t i = 0; i < to.size(); ++i) {
        const bool inside = i >= offset && i < offset + n;
        ASSERT_EQ(to[i], inside ? from[i] : std::byte{0xee}) << "n " << n << ", offset " << offset << ", byte " << i;
      }
    }
  }
}

TEST(PacketSlots, BoundaryValues) {
  EXPECT_EQ(packet_slots(0), 2u);
  EXPECT_EQ(packet_slots(1), 3u);
  EXPECT_EQ(packet_slots(16), 3u);
  EXPECT_EQ(packet_slots(17), 4u);
  EXPECT_EQ(packet_slots(1024), 66u);
  EXPECT_EQ(packet_slots(std::uint64_t{1} << 20), 2u + (std::uint64_t{1} << 16));
  const std::uint64_t big = (std::uint64_t{5} << 29);  // 2.5 GiB
  EXPECT_EQ(payload_slots(big), (big + 15) / 16);
  static_assert(packet_slots(16) == 3 && packet_slots(17) == 4, "usable in constant expressions");
}

TEST(PacketSlots, IsTheSmallestCountThatHoldsThePayload) {
  for (std::uint64_t s = 0; s <= 5000; ++s) {
    const std::uint64_t k = payload_slots(s);
    ASSERT_GE(k * sizeof(Slot), s) << "too few slots for " << s << " bytes";
    if (k > 0) {
      ASSERT_LT((k - 1) * sizeof(Slot), s) << "too many slots for " << s << " bytes";
    }
  }
}

TEST(Channel, SingleSlotFifo) {
  Channel ch(8);
  EXPECT_FALSE(ch.has_slots());
  for (std::uint64_t i = 0; i < 5; ++i) {
    const Slot s = make_slot(i);
    ASSERT_EQ(ch.push(&s, 1), 1u);
  }
  EXPECT_TRUE(ch.has_slots());
  Slot out[8];
  ASSERT_EQ(ch.pop(out, 8), 5u);
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(check_slot(out[i], i), "");
  EXPECT_FALSE(ch.has_slots());
  EXPECT_EQ(ch.pop(out, 8), 0u);
}

// Reading in place: front() is what is unread of the next filled cell,
// untouched; take_front() of part of it leaves the rest to the next front()
// or pop(), of all of it frees the cell (the producer may refill it), and
// slots come out once each, in order.
TEST(Channel, FrontReadsInPlaceAndHandsTheRestToPop) {
  Channel ch(2);
  EXPECT_TRUE(ch.front().empty());
  Slot in[6];
  for (std::uint64_t i = 0; i < 6; ++i) in[i] = make_slot(i);
  ASSERT_EQ(ch.push(in, 6), 6u);  // two cells of 3: the ring is full
  EXPECT_EQ(ch.push(in, 1), 0u);
  auto cell = ch.front();
  ASSERT_EQ(cell.size(), Channel::kSlotsPerCell);
  for (std::uint64_t i = 0; i < cell.size(); ++i) EXPECT_EQ(check_slot(cell[i], i), "");
  ch.take_front(1);  // part: the next front() goes on from there
  cell = ch.front();
  ASSERT_EQ(cell.size(), 2u);
  EXPECT_EQ(check_slot(cell[0], 1), "");
  ch.take_front(2);  // the rest: the first cell back to the producer
  const Slot next = make_slot(6);
  EXPECT_EQ(ch.push(&next, 1), 1u);
  cell = ch.front();
  ASSERT_EQ(cell.size(), 3u);
  EXPECT_EQ(check_slot(cell[0], 3), "");
  ch.take_front(1);  // part: the rest is pop()'s
  Slot out[8];
  ASSERT_EQ(ch.pop(out, 1), 1u);
  EXPECT_EQ(check_slot(out[0], 4), "");
  cell = ch.front();  // and what pop() left is front()'s again
  ASSERT_EQ(cell.size(), 1u);
  EXPECT_EQ(check_slot(cell[0], 5), "");
  ch.take_front(1);
  cell = ch.front();
  ASSERT_EQ(cell.size(), 1u);
  EXPECT_EQ(check_slot(cell[0], 6), "");
  ASSERT_EQ(ch.pop(out, 8), 1u);
  EXPECT_EQ(check_slot(out[0], 6), "");
  EXPECT_TRUE(ch.front().empty());
  EXPECT_FALSE(ch.has_slots());
}

TEST(Channel, CapacityIsRespectedAndNeverOverwritten) {
  // A ring of C cells holds C pushes of at most Channel::kSlotsPerCell slots:
  // C * kSlotsPerCell slots pushed a full cell at a time, C pushed one at a time.
  for (std::size_t cells : {1u, 2u, 7u, 64u}) {
    for (std::size_t per_push : {std::size_t{1}, Channel::kSlotsPerCell}) {
      Channel ch(cells);
      const std::size_t cap = cells * per_push;
      std::vector<Slot> in;
      for (std::size_t i = 0; i < cap; ++i) in.push_back(make_slot(i));
      for (std::size_t i = 0; i < cap; i += per_push) {
        ASSERT_EQ(ch.push(in.data() + i, per_push), per_push) << "capacity " << cap;
      }
      const Slot extra = make_slot(999);
      EXPECT_EQ(ch.push(&extra, 1), 0u) << "a full ring of " << cells << " cells accepted another slot";
      std::vector<Slot> out(cap + 4);
      ASSERT_EQ(ch.pop(out.data(), out.size()), cap);
      for (std::size_t i = 0; i < cap; ++i) EXPECT_EQ(check_slot(out[i], i), "");
    }
  }
}

TEST(Channel, BatchPushTakesWhatFitsInOrder) {
  static_assert(Channel::kSlotsPerCell == 3, "the counts below assume cells of 3 slots");
  Channel ch(2);  // 6 slots
  std::vector<Slot> in;
  for (std::uint64_t i = 0; i < 10; ++i) in.push_back(make_slot(i));
  EXPECT_EQ(ch.push(in.data(), in.size()), 6u);
  Slot out[2];
  ASSERT_EQ(ch.pop(out, 2), 2u);  // pops at most `max`: part of the first cell
  for (std::uint64_t i = 0; i < 2; ++i) EXPECT_EQ(check_slot(out[i], i), "");
  EXPECT_EQ(ch.push(in.data() + 6, 4), 0u) << "a cell read in part is not free yet";
  ASSERT_EQ(ch.pop(out, 2), 2u);  // the first cell's last slot, the second's first
  for (std::uint64_t i = 0; i < 2; ++i) EXPECT_EQ(check_slot(out[i], i + 2), "");
  EXPECT_EQ(ch.push(in.data() + 6, 4), 3u) << "the first cell is free again";
  std::vector<Slot> rest(10);
  ASSERT_EQ(ch.pop(rest.data(), rest.size()), 5u);
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(check_slot(rest[i], i + 4), "");
  EXPECT_FALSE(ch.has_slots());
}

TEST(Channel, WrapAroundManyTimes) {
  Channel ch(3);  // 3 cells: a push of up to 7 slots fits
  std::uint64_t next_in = 0, next_out = 0;
  std::vector<Slot> buf(8);
  for (int round = 0; round < 1000; ++round) {
    const std::size_t n = 1 + round % 7;
    std::vector<Slot> in;
    for (std::size_t i = 0; i < n; ++i) in.push_back(make_slot(next_in++));
    ASSERT_EQ(ch.push(in.data(), n), n);
    const std::size_t got = ch.pop(buf.data(), buf.size());
    ASSERT_EQ(got, n);
    for (std::size_t i = 0; i < got; ++i) ASSERT_EQ(check_slot(buf[i], next_out++), "");
  }
}

// push_packet writes a packet as append_packet lays it out (header, payload
// from the slot after it), over as many cells as it takes, whole or not at
// all, in order with what push() pushed around it.
TEST(Channel, PushPacketLaysOutAsStagedAndRefusesWhatDoesNotFitWhole) {
  Channel ch(4);  // one cell for the slot pushed before each packet, 3 for it: up to 112 payload bytes
  std::uint64_t key = 0;
  std::vector<Slot> out(16);
  for (std::size_t bytes : {0u, 1u, 8u, 16u, 17u, 48u, 63u, 64u, 65u, 100u, 112u}) {
    SCOPED_TRACE(std::to_string(bytes) + " payload bytes");
    WireHeader h{};
    h.kind = WireKind::kEager;
    h.size = bytes;
    h.tag = static_cast<switchyard::Tag>(++key);
    std::vector<std::byte> payload(bytes);
    sytest::fill_pattern(payload.data(), payload.size(), key);
    const Slot before = make_slot(key);
    ASSERT_EQ(ch.push(&before, 1), 1u);
    ASSERT_TRUE(ch.push_packet(h, payload));
    const std::size_t slots = packet_slots(bytes);
    ASSERT_EQ(ch.pop(out.data(), out.size()), 1 + slots);
    EXPECT_EQ(check_slot(out[0], key), "");
    WireHeader got;
    std::memcpy(&got, &out[1], sizeof got);
    EXPECT_EQ(got.tag, h.tag);
    EXPECT_EQ(got.size, bytes);
    if (bytes) {
      EXPECT_EQ(std::memcmp(&out[1 + kHeaderSlots], payload.data(), bytes), 0);
    }
  }
  // 3 cells taken: a packet of 2 cells does not fit, one of 1 cell does.
  const Slot filler[9] = {};
  ASSERT_EQ(ch.push(filler, 9), 9u);
  WireHeader h{};
  h.kind = WireKind::kEager;
  h.size = 64;  // 6 slots: 2 cells
  const std::vector<std::byte> payload(64, std::byte{5});
  EXPECT_FALSE(ch.push_packet(h, payload)) << "a packet of 2 cells went into a ring with 1 free";
  h.size = 8;  // 3 slots: 1 cell
  EXPECT_TRUE(ch.push_packet(h, std::span(payload).first(8)));
  EXPECT_EQ(ch.pop(out.data(), out.size()), 12u);
  EXPECT_FALSE(ch.has_slots()) << "the refused packet left part of itself";
}

// One producer thread, one consumer thread, as the runtime uses it: every slot
// arrives once, in order, intact, even with a one-line ring.
void spsc_stress(std::size_t capacity, std::uint64_t count) {
  Channel ch(capacity);
  std::atomic<bool> failed{false};
  std::thread producer([&] {
    std::vector<Slot> batch;
    std::uint64_t i = 0;
    while (i < count && !failed.load(std::memory_order_relaxed)) {
      const std::uint64_t before = i;
      batch.clear();
      for (std::uint64_t j = i; j < std::min(count, i + 1 + i % 7); ++j) batch.push_back(make_slot(j));
      i += ch.push(batch.data(), batch.size());
      // A full ring: let the consumer run (on a busy machine it may share our core).
      if (i == before) std::this_thread::yield();
    }
  });
  std::vector<Slot> out(16);
  std::uint64_t next = 0;
  std::string error;
  while (next < count && error.empty()) {
    const std::size_t n = ch.pop(out.data(), 1 + next % out.size());
    for (std::size_t i = 0; i < n && error.empty(); ++i) error = check_slot(out[i], next++);
    if (n == 0) std::this_thread::yield();
  }
  if (!error.empty()) failed = true;
  producer.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(next, count);
  EXPECT_FALSE(ch.has_slots()) << "slots beyond the ones pushed";
}

TEST(Channel, ConcurrentProducerConsumerCapacity1) { spsc_stress(1, 100'000); }
TEST(Channel, ConcurrentProducerConsumerCapacity1024) { spsc_stress(1024, 1'000'000); }

}  // namespace
