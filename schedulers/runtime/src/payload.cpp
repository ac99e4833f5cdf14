#include "switchyard/schedulers/payload.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "switchyard/splitmix64.hpp"

namespace switchyard::schedulers {

namespace {

using switchyard::splitmix64_finalize;
constexpr std::uint64_t kGamma = switchyard::kSplitMix64Gamma;

std::uint64_t message_key(std::uint64_t seed, Rank src, Rank dst) noexcept {
  return splitmix64_finalize(splitmix64_finalize(seed + kGamma) ^ ((std::uint64_t{src} << 32) | dst));
}

// Word k of a message: the Weyl sequence key + (k + 1)·γ of its well-mixed key
// (SplitMix64's state, not finalised). Any word can be had on its own; odd γ
// makes every word of a message distinct, and another message's key (another
// pair, run or sequence number) is unrelated, so a byte from another message or
// offset does not match. One add a word, so filling and checking vectorise and
// run near memory speed; finalising every word (two multiplies and three
// shifts) made them cost more than the copy they check, a soak's main cost.
inline std::uint64_t word(std::uint64_t key, std::uint64_t k) noexcept { return key + (k + 1) * kGamma; }

// Calls f(position in the span, word bytes, first byte of the word, byte count)
// for each 8-byte word of the message overlapping [offset, offset + size).
template <class F>
void for_each_word(std::uint64_t size, std::uint64_t key, std::uint64_t offset, F&& f) {
  std::uint64_t pos = 0;
  std::uint64_t k = offset / 8;
  std::uint64_t skip = offset % 8;
  while (pos < size) {
    const std::uint64_t w = word(key, k++);
    const std::uint64_t n = std::min<std::uint64_t>(8 - skip, size - pos);
    if (!f(pos, w, skip, n)) return;
    pos += n;
    skip = 0;
  }
}

// Whole words k0, k0 + 1, ... : the hot loops. A constant-size copy per word
// compiles to one load or store; the byte-exact loop above called memcpy and
// memcmp for every 8 bytes, which made filling and checking most of a soak's time.
void fill_words(std::byte* out, std::uint64_t words, std::uint64_t key, std::uint64_t k0, std::uint64_t flip) noexcept {
  for (std::uint64_t i = 0; i < words; ++i) {
    const std::uint64_t w = word(key, k0 + i) ^ flip;
    std::memcpy(out + 8 * i, &w, 8);
  }
}
bool words_match(const std::byte* in, std::uint64_t words, std::uint64_t key, std::uint64_t k0) noexcept {
  std::uint64_t diff = 0;
  for (std::uint64_t i = 0; i < words; ++i) {
    std::uint64_t got;
    std::memcpy(&got, in + 8 * i, 8);
    diff |= got ^ word(key, k0 + i);
  }
  return diff == 0;
}

// Bytes [offset, offset + out.size()) of the message: a partial word at each
// end byte by byte, whole words between.
void fill(std::span<std::byte> out, std::uint64_t key, std::uint64_t offset, std::uint64_t flip) {
  const std::uint64_t head = std::min<std::uint64_t>(out.size(), (8 - offset % 8) % 8);
  const std::uint64_t whole = (out.size() - head) / 8;
  auto partial = [&](std::uint64_t pos, std::uint64_t count) {
    for_each_word(count, key, offset + pos,
                  [&](std::uint64_t at, std::uint64_t w, std::uint64_t skip, std::uint64_t n) {
                    w ^= flip;
                    std::memcpy(out.data() + pos + at, reinterpret_cast<const std::byte*>(&w) + skip, n);
                    return true;
                  });
  };
  partial(0, head);
  fill_words(out.data() + head, whole, key, (offset + head) / 8, flip);
  partial(head + whole * 8, out.size() - head - whole * 8);
}

// Byte by byte: for the partial words at the ends, and to locate a mismatch.
std::optional<std::uint64_t> first_wrong_byte_exact(std::span<const std::byte> in, std::uint64_t key,
                                                    std::uint64_t offset) {
  std::optional<std::uint64_t> bad;
  for_each_word(in.size(), key, offset, [&](std::uint64_t pos, std::uint64_t w, std::uint64_t skip, std::uint64_t n) {
    const auto* want = reinterpret_cast<const std::byte*>(&w) + skip;
    for (std::uint64_t j = 0; j < n; ++j) {
      if (in[pos + j] != want[j]) {
        bad = pos + j;
        return false;
      }
    }
    return true;
  });
  return bad;
}

}  // namespace

void fill_payload(std::span<std::byte> out, std::uint64_t seed, Rank src, Rank dst, std::uint64_t offset) {
  fill(out, message_key(seed, src, dst), offset, 0);
}

void fill_poison(std::span<std::byte> out, std::uint64_t seed, Rank src, Rank dst, std::uint64_t offset) {
  fill(out, message_key(seed, src, dst), offset, ~std::uint64_t{0});
}

std::optional<std::uint64_t> first_wrong_byte(std::span<const std::byte> in, std::uint64_t seed, Rank src, Rank dst,
                                              std::uint64_t offset) {
  const std::uint64_t key = message_key(seed, src, dst);
  const std::uint64_t head = std::min<std::uint64_t>(in.size(), (8 - offset % 8) % 8);
  if (auto bad = first_wrong_byte_exact(in.first(head), key, offset)) return bad;
  // Whole words a block at a time; the block that differs is searched byte by byte.
  constexpr std::uint64_t kBlockWords = 256;
  std::uint64_t pos = head;
  while (in.size() - pos >= 8) {
    const std::uint64_t words = std::min<std::uint64_t>(kBlockWords, (in.size() - pos) / 8);
    if (!words_match(in.data() + pos, words, key, (offset + pos) / 8)) {
      return pos + *first_wrong_byte_exact(in.subspan(pos, words * 8), key, offset + pos);
    }
    pos += words * 8;
  }
  if (auto bad = first_wrong_byte_exact(in.subspan(pos), key, offset + pos)) return pos + *bad;
  return std::nullopt;
}

std::string PayloadMismatch::describe() const {
  char bytes[64];
  std::snprintf(bytes, sizeof bytes, " is 0x%02x, expected 0x%02x", got, expected);
  return "byte " + std::to_string(offset) + " of the " + std::to_string(size) + "-byte message " + std::to_string(src) +
         " -> " + std::to_string(dst) + bytes;
}

namespace {

// Messages start on their own cache line: the receiver's core writes one while
// other cores read the sender's neighbouring ones.
constexpr std::uint64_t kAlign = 64;

std::optional<std::size_t> find(std::span<const MatrixEntry> entries, Rank peer) noexcept {
  auto it =
      std::lower_bound(entries.begin(), entries.end(), peer, [](const MatrixEntry& e, Rank r) { return e.peer < r; });
  if (it == entries.end() || it->peer != peer) return std::nullopt;
  return static_cast<std::size_t>(it - entries.begin());
}

}  // namespace

void ExchangeBuffers::FreeBlock::operator()(std::byte* p) const noexcept {
  ::operator delete[](p, std::align_val_t{kAlign});
}

ExchangeBuffers::Block ExchangeBuffers::layout(std::span<const MatrixEntry> entries, std::vector<std::uint64_t>& at) {
  at.resize(entries.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    at[i] = total;
    total += (entries[i].bytes + kAlign - 1) / kAlign * kAlign;
  }
  return Block(static_cast<std::byte*>(::operator new[](total, std::align_val_t{kAlign})));
}

ExchangeBuffers::ExchangeBuffers(Rank me, std::span<const MatrixEntry> row, std::span<const MatrixEntry> column,
                                 std::uint64_t seed)
    : me_(me), seed_(seed), row_(row.begin(), row.end()), column_(column.begin(), column.end()) {
  auto sorted = [](std::span<const MatrixEntry> v) {
    return std::adjacent_find(v.begin(), v.end(),
                              [](const MatrixEntry& a, const MatrixEntry& b) { return a.peer >= b.peer; }) == v.end();
  };
  if (!sorted(row_) || !sorted(column_)) {
    throw InvalidArgument("switchyard: ExchangeBuffers of rank " + std::to_string(me) +
                          ": row and column must be sorted by peer, without duplicates");
  }
  send_ = layout(row_, send_at_);
  recv_ = layout(column_, recv_at_);
  for (std::size_t i = 0; i < row_.size(); ++i) {
    fill_payload({send_.get() + send_at_[i], static_cast<std::size_t>(row_[i].bytes)}, seed_, me_, row_[i].peer);
  }
  poison();
}

ExchangeBuffers::ExchangeBuffers(const CommMatrix& m, Rank me, std::uint64_t seed)
    : ExchangeBuffers(me, m.row(me), m.column(me), seed) {}

std::optional<std::size_t> ExchangeBuffers::recv_index(Rank src) const noexcept { return find(column_, src); }
std::optional<std::size_t> ExchangeBuffers::send_index(Rank dst) const noexcept { return find(row_, dst); }

std::vector<std::span<const std::byte>> ExchangeBuffers::send_buffers() const {
  std::vector<std::span<const std::byte>> spans;
  spans.reserve(row_.size());
  for (std::size_t i = 0; i < row_.size(); ++i) spans.push_back(send_buffer(i));
  return spans;
}

std::vector<std::span<std::byte>> ExchangeBuffers::recv_buffers() {
  std::vector<std::span<std::byte>> spans;
  spans.reserve(column_.size());
  for (std::size_t i = 0; i < column_.size(); ++i) spans.push_back(recv_buffer(i));
  return spans;
}

void ExchangeBuffers::poison() {
  for (std::size_t i = 0; i < column_.size(); ++i) fill_poison(recv_buffer(i), seed_, column_[i].peer, me_);
}

std::optional<PayloadMismatch> ExchangeBuffers::verify() const {
  for (std::size_t i = 0; i < column_.size(); ++i) {
    const auto in = recv_buffer(i);
    if (auto bad = first_wrong_byte(in, seed_, column_[i].peer, me_)) {
      PayloadMismatch m{column_[i].peer, me_, *bad, in.size(), 0, std::to_integer<std::uint8_t>(in[*bad])};
      std::byte want;
      fill_payload({&want, 1}, seed_, m.src, m.dst, *bad);
      m.expected = std::to_integer<std::uint8_t>(want);
      return m;
    }
  }
  return std::nullopt;
}

}  // namespace switchyard::schedulers
