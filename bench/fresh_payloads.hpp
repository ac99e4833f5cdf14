#pragma once
// Payloads that change with every exchange, for the lines that time a loop of
// exchanges (bench_exchange's BM_ExchangeLoop and BM_ExchangeHaloLoop) and for
// their floors. A real loop sends new values every time (a halo's ghosts
// after each sweep); a payload written once would let each run's copies read
// lines that stayed in the reading core's cache, and a run that skipped a
// copy would leave last run's bytes, which are the same.
//
// ExchangeBuffers' payload (payload.hpp) has word k of a message at key + (k +
// 1) γ, the message's key plus a Weyl sequence. Exchange g's message has the
// key plus g times an odd constant instead, so every word differs from one
// exchange to the next. stamp(g) writes the process's outgoing messages so
// (an add and a store a word), check(g) compares every word of its incoming
// messages with what exchange g must have put there: every byte of every
// exchange is checked. Messages are whole words (the loop lines' 16-byte
// messages and halos of doubles); others are refused.

#include <switchyard/schedulers/payload.hpp>
#include <switchyard/splitmix64.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace sybench {

static_assert(std::endian::native == std::endian::little, "a wrong byte is found in a word's bytes, low first");

class FreshPayloads {
 public:
  // Process b.rank()'s side, its send buffers as ExchangeBuffers filled them;
  // its receive buffers get the payloads of exchange 0.
  explicit FreshPayloads(switchyard::schedulers::ExchangeBuffers& b) : me_(b.rank()) {
    namespace sys = switchyard::schedulers;
    for (std::size_t i = 0; i < b.row().size(); ++i) outgoing_.push_back(message(b.row()[i].peer, b.send_buffer(i)));
    for (std::size_t i = 0; i < b.column().size(); ++i) {
      const std::span<std::byte> into = b.recv_buffer(i);
      sys::fill_payload(into, b.seed(), b.column()[i].peer, me_);
      incoming_.push_back(message(b.column()[i].peer, into));
    }
  }

  // Exchange g's outgoing messages, written into the send buffers.
  void stamp(std::uint64_t g) noexcept {
    const std::uint64_t add = g * kStep;
    for (const Message& m : outgoing_) {
      const std::uint64_t first = m.key + add;
      for (std::uint32_t k = 0; k < m.words; ++k) m.at[k] = first + (k + 1) * kGamma;
    }
  }

  // The first byte of the incoming messages that is not what exchange g sent.
  std::optional<switchyard::schedulers::PayloadMismatch> check(std::uint64_t g) const noexcept {
    if (wrong_bits(g) == 0) [[likely]]
      return std::nullopt;
    return first_mismatch(g);
  }

  // check()'s work when it finds nothing wrong, whatever the buffers hold:
  // nonzero where a word differs (for timing the stamps and checks alone).
  std::uint64_t wrong_bits(std::uint64_t g) const noexcept {
    const std::uint64_t add = g * kStep;
    std::uint64_t wrong = 0;
    for (const Message& m : incoming_) {
      const std::uint64_t first = m.key + add;
      for (std::uint32_t k = 0; k < m.words; ++k) wrong |= m.at[k] ^ (first + (k + 1) * kGamma);
    }
    return wrong;
  }

 private:
  // Odd, so g * kStep differs for every g < 2^64, and not a small multiple of
  // kGamma, so exchange g's words are no other exchange's words shifted along.
  static constexpr std::uint64_t kStep = 0xD1B54A32D192ED03ULL;
  static constexpr std::uint64_t kGamma = switchyard::kSplitMix64Gamma;  // the payload's Weyl step
  struct Message {
    std::uint64_t* at;  // its first word
    std::uint64_t key;  // its payload's key: word k of exchange 0 is key + (k + 1) γ
    std::uint32_t words;
    switchyard::Rank peer;  // its sender or receiver
  };

  // ExchangeBuffers aligns every message to a cache line, so its words are
  // aligned; its first word, key + γ, gives the key.
  static Message message(switchyard::Rank peer, std::span<const std::byte> bytes) {
    if (bytes.size() % 8 != 0 || bytes.empty()) {
      throw std::invalid_argument("FreshPayloads: a message of " + std::to_string(bytes.size()) +
                                  " bytes, not whole 8-byte words");
    }
    auto* at = reinterpret_cast<std::uint64_t*>(const_cast<std::byte*>(bytes.data()));  // the process's own buffer
    return {at, at[0] - kGamma, static_cast<std::uint32_t>(bytes.size() / 8), peer};
  }

  switchyard::schedulers::PayloadMismatch first_mismatch(std::uint64_t g) const noexcept {
    for (const Message& m : incoming_) {
      for (std::uint64_t o = 0; o < std::uint64_t{m.words} * 8; ++o) {
        const std::uint64_t word = m.key + g * kStep + (o / 8 + 1) * kGamma;
        const auto expected = static_cast<std::uint8_t>(word >> (8 * (o % 8)));  // the word's bytes, low first
        const auto got = static_cast<std::uint8_t>(reinterpret_cast<const std::byte*>(m.at)[o]);
        if (got != expected) return {m.peer, me_, o, std::uint64_t{m.words} * 8, expected, got};
      }
    }
    return {};
  }

  switchyard::Rank me_;
  std::vector<Message> outgoing_, incoming_;
};

}  // namespace sybench
