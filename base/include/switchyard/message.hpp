#pragma once
/// @file
/// What a receive hands back: the payload bytes with their source and tag.
/// Small payloads live inside the object; larger ones in one heap block that is
/// never zero-filled, so a single-copy receive touches each byte exactly once.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>

#include "switchyard/types.hpp"

namespace switchyard {

/// A message's tag, chosen by its sender; a receive matches it (see kFirstReservedTag).
using Tag = std::uint32_t;
/// Names a communicator in every packet: messages match only receives posted on
/// the same communicator. The job's world communicator is context 0. 64 bits:
/// a library's duplicate of a communicator across nodes is named from its key
/// (GroupRegistry::library_id), which takes 63 of them.
using ContextId = std::uint64_t;
/// A receive's source that matches a message from any rank (MPI_ANY_SOURCE).
inline constexpr Rank kAnySource = std::numeric_limits<Rank>::max();
/// Tags at or above this value are reserved for switchyard's own collectives.
inline constexpr Tag kFirstReservedTag = Tag{1} << 31;

namespace detail {

class ByteBuffer {
 public:
  static constexpr std::size_t kInlineBytes = 48;

  ByteBuffer() = default;
  explicit ByteBuffer(std::uint64_t size) { resize_uninitialized(size); }
  // Built from `other` at once, not default-made (inline_ zeroed) and then assigned: on every receive's path.
  ByteBuffer(ByteBuffer&& other) noexcept : size_(other.size_), heap_(std::move(other.heap_)) {
    if (!heap_) std::memcpy(inline_, other.inline_, kInlineBytes);
    other.size_ = 0;
  }
  ByteBuffer& operator=(ByteBuffer&& other) noexcept {
    if (this != &other) {
      size_ = other.size_;
      heap_ = std::move(other.heap_);
      // A fixed-size copy compiles to three vector moves; a size_-long one is a call into libc.
      if (!heap_) std::memcpy(inline_, other.inline_, kInlineBytes);
      other.size_ = 0;
    }
    return *this;
  }

  void resize_uninitialized(std::uint64_t size) {
    heap_.reset();
    size_ = size;
    if (size > kInlineBytes) heap_.reset(new std::byte[size]);  // default-initialised: no zero fill
  }
  std::byte* data() noexcept { return heap_ ? heap_.get() : inline_; }
  const std::byte* data() const noexcept { return heap_ ? heap_.get() : inline_; }
  std::uint64_t size() const noexcept { return size_; }

 private:
  std::uint64_t size_ = 0;
  std::unique_ptr<std::byte[]> heap_;
  alignas(16) std::byte inline_[kInlineBytes]{};  // zeroed: moves copy all of it
};

}  // namespace detail

/// A received message: its payload, and the rank and tag it was sent with. Moved, never copied.
class Message {
 public:
  Message() = default;
  /// For the runtime: a message of `source` with `tag` and the payload `bytes`,
  /// moved in once (by value, it was moved twice: into the parameter, then here).
  Message(Rank source, Tag tag, detail::ByteBuffer&& bytes) : source_(source), tag_(tag), bytes_(std::move(bytes)) {}

  /// The sender's rank, in the communicator the message was received on.
  Rank source() const noexcept { return source_; }
  /// The tag it was sent with.
  Tag tag() const noexcept { return tag_; }
  /// The payload's size in bytes.
  std::uint64_t size() const noexcept { return bytes_.size(); }
  /// The payload.
  std::span<const std::byte> bytes() const noexcept { return {bytes_.data(), static_cast<std::size_t>(bytes_.size())}; }
  /// The payload, writable: the message owns it.
  std::span<std::byte> bytes() noexcept { return {bytes_.data(), static_cast<std::size_t>(bytes_.size())}; }

 private:
  Rank source_ = 0;
  Tag tag_ = 0;
  detail::ByteBuffer bytes_;
};

}  // namespace switchyard
