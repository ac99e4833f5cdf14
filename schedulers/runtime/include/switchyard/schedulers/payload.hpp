#pragma once
/// @file
/// The payloads of an exchange and their verification.
///
/// Byte o of the message src -> dst in a run seeded with `seed` is a pure
/// function of (seed, src, dst, o): byte o % 8 of word o / 8 of a Weyl sequence
/// (+ the SplitMix64 γ per word) from a key mixed of (seed, src, dst). Any byte
/// of the message can be produced or checked on its own, so a piece of a split
/// message (RS_NH) is checked where it lands, and a byte from another message,
/// another offset or another run never matches.
///
/// ExchangeBuffers holds one process's side of an exchange: a send buffer per
/// entry of its row of the communication matrix, filled once, and a receive
/// buffer per entry of its column. Before each repetition the receive buffers
/// are poisoned with the bitwise complement of the payload they should receive,
/// so that every byte a transfer failed to write is wrong, whatever its value.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"

namespace switchyard::schedulers {

/// Writes bytes [offset, offset + out.size()) of the message src -> dst into `out`.
void fill_payload(std::span<std::byte> out, std::uint64_t seed, Rank src, Rank dst, std::uint64_t offset = 0);
/// The same bytes, each complemented: what a receive buffer holds before its message lands.
void fill_poison(std::span<std::byte> out, std::uint64_t seed, Rank src, Rank dst, std::uint64_t offset = 0);
/// Position in `in` of the first byte that differs from bytes [offset, ...) of
/// the message src -> dst, or nullopt if every byte is right.
std::optional<std::uint64_t> first_wrong_byte(std::span<const std::byte> in, std::uint64_t seed, Rank src, Rank dst,
                                              std::uint64_t offset = 0);

/// The first wrong byte of a received message, and what it should have been.
struct PayloadMismatch {
  Rank src = 0;  ///< the message's sender
  Rank dst = 0;  ///< its receiver
  std::uint64_t offset = 0;  ///< into the message
  std::uint64_t size = 0;  ///< of the message
  std::uint8_t expected = 0;  ///< the payload's byte
  std::uint8_t got = 0;  ///< the byte received
  /// "byte 17 of the 1024-byte message 3 -> 5 is 0x12, expected 0x34"
  std::string describe() const;
};

/// A received message whose bytes are wrong: what makes an exchange fail.
class PayloadError : public Error {
 public:
  /// what(): `context`, then the mismatch described.
  PayloadError(const std::string& context, const PayloadMismatch& m)
      : Error(context + ": " + m.describe()), mismatch_(m) {}
  const PayloadMismatch& mismatch() const noexcept { return mismatch_; }  ///< the wrong byte

 private:
  PayloadMismatch mismatch_;
};

/// One process's send and receive buffers for an exchange (see the file's description).
class ExchangeBuffers {
 public:
  /// `row` and `column` are process me's row and column of the matrix, sorted by
  /// peer (CommMatrix::row and CommMatrix::column). Fills the send buffers and
  /// poisons the receive buffers; allocate on the process's own core, where the
  /// pages are then first touched.
  ExchangeBuffers(Rank me, std::span<const MatrixEntry> row, std::span<const MatrixEntry> column, std::uint64_t seed);
  /// Process me's buffers for matrix m.
  ExchangeBuffers(const CommMatrix& m, Rank me, std::uint64_t seed);

  Rank rank() const noexcept { return me_; }  ///< the process, me
  std::uint64_t seed() const noexcept { return seed_; }  ///< the payloads' seed
  std::span<const MatrixEntry> row() const noexcept { return row_; }  ///< destinations and sizes
  std::span<const MatrixEntry> column() const noexcept { return column_; }  ///< sources and sizes

  /// The message to row()[i].peer.
  std::span<const std::byte> send_buffer(std::size_t i) const noexcept {
    return {send_.get() + send_at_[i], static_cast<std::size_t>(row_[i].bytes)};
  }
  /// The buffer for the message from column()[i].peer.
  std::span<std::byte> recv_buffer(std::size_t i) noexcept {
    return {recv_.get() + recv_at_[i], static_cast<std::size_t>(column_[i].bytes)};
  }
  /// The same, read-only.
  std::span<const std::byte> recv_buffer(std::size_t i) const noexcept {
    return {recv_.get() + recv_at_[i], static_cast<std::size_t>(column_[i].bytes)};
  }
  /// Every send_buffer(i), in row() order: the send spans ExchangePlan::run and bind take.
  std::vector<std::span<const std::byte>> send_buffers() const;
  /// Every recv_buffer(i), in column() order: the receive spans they take.
  std::vector<std::span<std::byte>> recv_buffers();
  /// Index into column() of the message from src, if there is one. O(log d).
  std::optional<std::size_t> recv_index(Rank src) const noexcept;
  /// Index into row() of the message to dst, if there is one. O(log d).
  std::optional<std::size_t> send_index(Rank dst) const noexcept;

  /// Before a repetition: every receive buffer holds the complement of its message.
  void poison();
  /// Checks every byte of every receive buffer; the first wrong one in column order.
  std::optional<PayloadMismatch> verify() const;

 private:
  Rank me_;
  std::uint64_t seed_;
  std::vector<MatrixEntry> row_, column_;
  struct FreeBlock {
    void operator()(std::byte* p) const noexcept;
  };
  using Block = std::unique_ptr<std::byte[], FreeBlock>;  ///< cache-line aligned, never zero-filled
  static Block layout(std::span<const MatrixEntry> entries, std::vector<std::uint64_t>& at);

  std::vector<std::uint64_t> send_at_, recv_at_;  ///< offsets of each message in its block
  Block send_, recv_;
};

}  // namespace switchyard::schedulers
