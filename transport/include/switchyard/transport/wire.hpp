#pragma once
/// @file
/// What crosses from one core to another: a stream of 16-byte slots. A packet
/// is a 32-byte header (two slots) followed by its payload rounded up to whole
/// slots, so payloads start 16-byte aligned and a message of up to 16 bytes
/// takes three slots: one cell (cache line) of the ring (channel.hpp).
///
/// Packet kinds:
/// @verbatim
///   kEager       a message whose payload follows the header
///   kRendezvous  a message whose payload stays in the sender's buffer; the
///                payload is that buffer's address (8 bytes): a receiver on the
///                same machine copies straight out of it, once
///   kSendDone    the receiver has taken in message `request` of the sender
///                (rendezvous, or a synchronous send); no payload
///   kActive      an active message: `tag` is the handler id, the body follows
///   kLockTry     a test-and-set of the busy lock of `dst` (on `context`) by
///                `src`, a process of another node; no payload. The receiver's
///                core arbitrates it with the same CPU atomic its node's
///                processes use, and answers with a kLockReply
///   kLockReply   the answer to kLockTry `request` of `dst`: kGranted in flags
///                if the lock was free and is now the requester's; no payload
///   kLockRelease `src` gives back the busy lock of `dst` it was granted; no
///                payload, no answer
/// @endverbatim

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "switchyard/cache_line.hpp"
#include "switchyard/message.hpp"

namespace switchyard::detail {

struct alignas(16) Slot {
  std::byte bytes[16];
};
static_assert(sizeof(Slot) == 16 && std::is_trivially_copyable_v<Slot>, "rings copy slots bytewise");

enum class WireKind : std::uint8_t { kEager, kRendezvous, kSendDone, kActive, kLockTry, kLockReply, kLockRelease };

// Index of a send in its sender core's request pool: what a kSendDone names,
// instead of a pointer that would mean nothing on another machine.
using RequestId = std::uint32_t;

// The most payload bytes a packet names (WireHeader::size's 48 bits, 256 TiB):
// larger messages are refused when sent.
inline constexpr std::uint64_t kMaxMessageBytes = (std::uint64_t{1} << 48) - 1;

struct WireHeader {
  static constexpr std::uint8_t kSynchronous = 1;  // the sender wants a kSendDone once the message is taken in
  static constexpr std::uint8_t kGranted = 2;  // kLockReply: the busy lock is the requester's

  std::uint64_t size : 48;  // the message's payload bytes (over 4 GiB is legal; up to kMaxMessageBytes)
  std::uint64_t flags : 8;
  WireKind kind : 8;
  ContextId context;  // the communicator's
  Rank src;  // the sender's rank in the job
  Rank dst;  // the receiver's rank in the job
  Tag tag;  // kActive: the handler id
  RequestId request;  // kRendezvous, synchronous kEager, kSendDone, kLockTry, kLockReply: the sender's request
};
static_assert(sizeof(WireHeader) == 2 * sizeof(Slot) && std::is_trivially_copyable_v<WireHeader>,
              "a header is two slots");

// A header made whole from four 64-bit words, in registers, and written as
// two 16-byte halves: what copies it (a memcpy into a ring cell or a staging
// buffer) reads 16-byte halves, and the store buffer forwards a load only
// from a store that covers it. Setting the bitfields one by one instead
// wrote parts of a word and read the word back, and 8-byte stores read back
// as 16-byte loads stalled each copy (perf annotate of bench_latency's burst).
// The words are laid out as the x86-64 psABI places WireHeader's fields,
// bitfields from the low bits up; test_channel checks every field.
inline WireHeader make_wire_header(WireKind kind, std::uint8_t flags, std::uint64_t size, ContextId context, Rank src,
                                   Rank dst, Tag tag, RequestId request) noexcept {
  static_assert(sizeof(ContextId) == 8 && sizeof(Rank) == 4 && sizeof(Tag) == 4 && sizeof(RequestId) == 4,
                "the four words below");
  using Half = std::uint64_t __attribute__((vector_size(16)));
  const Half low{size | std::uint64_t{flags} << 48 | std::uint64_t{static_cast<std::uint8_t>(kind)} << 56, context};
  const Half high{std::uint64_t{src} | std::uint64_t{dst} << 32, std::uint64_t{tag} | std::uint64_t{request} << 32};
  WireHeader h;
  std::memcpy(reinterpret_cast<std::byte*>(&h), &low, sizeof low);
  std::memcpy(reinterpret_cast<std::byte*>(&h) + sizeof low, &high, sizeof high);
  return h;
}

inline constexpr std::size_t kHeaderSlots = sizeof(WireHeader) / sizeof(Slot);

// Payload bytes the packet carries in the ring (a rendezvous carries an address, not the message).
constexpr std::uint64_t wire_payload_bytes(const WireHeader& h) noexcept {
  switch (h.kind) {
    case WireKind::kRendezvous:
      return sizeof(std::uint64_t);
    case WireKind::kSendDone:
    case WireKind::kLockTry:
    case WireKind::kLockReply:
    case WireKind::kLockRelease:
      return 0;
    case WireKind::kEager:
    case WireKind::kActive:
      break;
  }
  return h.size;
}

constexpr std::uint64_t payload_slots(std::uint64_t bytes) noexcept {
  return (bytes + sizeof(Slot) - 1) / sizeof(Slot);
}
// Slots a packet with `bytes` of payload takes in a ring.
constexpr std::uint64_t packet_slots(std::uint64_t bytes) noexcept { return kHeaderSlots + payload_slots(bytes); }

}  // namespace switchyard::detail
