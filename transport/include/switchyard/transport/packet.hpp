#pragma once
// The unit that crosses from one core to another: exactly one cache line.
// A message is one header packet followed by as many continuation packets as its
// eager payload needs; since only one thread pushes into a ring, the packets of a
// message are contiguous in it and the receiving worker reassembles them in order.

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace switchyard::detail {

inline constexpr std::size_t kCacheLine = 64;

enum class PacketKind : std::uint8_t {
  kMessage,   // point-to-point message: eager bytes follow, or `handle` names the sender's buffer
  kActive,    // active message: `tag` is the handler id, the body follows
  kSendDone,  // the receiver has copied a single-copy message; `handle` is the sender's SendState
};

struct PacketHeader {
  PacketKind kind;
  std::uint8_t single_copy : 1;  // kMessage only: the payload stays in the sender's buffer
  std::uint8_t synchronous : 1;  // kMessage only: the sender wants a kSendDone once the message is taken in
  std::uint16_t context;         // the communicator's context id
  std::uint32_t tag;
  std::uint32_t src;    // sending rank
  std::uint32_t dst;    // receiving rank
  std::uint64_t size;   // payload bytes of the whole message (64-bit: messages over 4 GiB are legal)
  void* handle;         // sender-side state for single-copy messages and completions
};

inline constexpr std::size_t kHeaderInlineBytes = kCacheLine - sizeof(PacketHeader);

struct alignas(kCacheLine) Packet {
  union {
    struct {
      PacketHeader header;
      std::array<std::byte, kHeaderInlineBytes> inline_bytes;  // first eager bytes
    } head;
    std::array<std::byte, kCacheLine> continuation;            // further eager bytes
  };
};
static_assert(sizeof(PacketHeader) == 32);
static_assert(sizeof(Packet) == kCacheLine && alignof(Packet) == kCacheLine,
              "a packet is one cache line: a ring slot never shares a line with its neighbour");
static_assert(std::is_trivially_copyable_v<Packet>, "Boost.Lockfree rings copy packets bytewise");

// Number of packets that carry a message of `eager_bytes` payload.
constexpr std::uint64_t packets_for(std::uint64_t eager_bytes) noexcept {
  return eager_bytes <= kHeaderInlineBytes ? 1 : 1 + (eager_bytes - kHeaderInlineBytes + kCacheLine - 1) / kCacheLine;
}

}  // namespace switchyard::detail
