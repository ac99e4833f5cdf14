#pragma once
// Exchange hooks whose messages lie scattered over one send region and one
// receive region of their process, in strided runs, as a caller whose data
// are not message buffers (an array redistribution) holds them; they describe
// that memory (exchange_hooks.hpp) or, as hooks that only pack, do not. Either
// way they also pack into and unpack out of buffers of their own, for the
// runs that use buffers. Each run's every received byte is checked, and every
// byte of the receive region outside the blocks must be left as it was.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange_hooks.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <vector>

namespace sytest {

// Where one side's messages lie in its region: message e of k in blocks of
// `block` bytes, block q at byte (q k + e) block (the messages' blocks
// interleaved), and its last, shorter block after all those, in a tail that
// holds the messages' last blocks one after another. `block` 0: every message
// whole in the tail, contiguous. Three bytes of gap end the region.
class ScatteredLayout {
 public:
  ScatteredLayout(std::span<const switchyard::schedulers::MatrixEntry> entries, std::uint64_t block) {
    const std::uint64_t k = entries.size();
    std::uint64_t most_blocks = 0;
    for (const auto& e : entries) most_blocks = std::max(most_blocks, block ? e.bytes / block : 0);
    std::uint64_t tail = most_blocks * k * block;
    first_.push_back(0);
    for (std::uint64_t e = 0; e < k; ++e) {
      const std::uint64_t blocks = block ? entries[e].bytes / block : 0, rest = entries[e].bytes - blocks * block;
      if (blocks) runs_.push_back({e * block, block, k * block, blocks});
      if (rest) runs_.push_back({tail, rest, 0, 1});
      tail += rest;
      first_.push_back(runs_.size());
    }
    size_ = tail + 3;
  }
  std::uint64_t size() const noexcept { return size_; }
  std::span<const switchyard::schedulers::StridedRun> runs(std::size_t e) const {
    return std::span<const switchyard::schedulers::StridedRun>(runs_).subspan(first_[e], first_[e + 1] - first_[e]);
  }
  // Calls f(region offset, message offset, bytes) for each block of message e, in order.
  template <class F>
  void for_each_block(std::size_t e, F&& f) const {
    std::uint64_t at = 0;
    for (const auto& r : runs(e)) {
      for (std::uint64_t q = 0; q < r.count; ++q, at += r.length) f(r.offset + q * r.stride, at, r.length);
    }
  }

 private:
  std::vector<switchyard::schedulers::StridedRun> runs_;
  std::vector<std::size_t> first_;
  std::uint64_t size_ = 0;
};

class ScatteredHooks : public switchyard::schedulers::ExchangeHooks {
 public:
  using Bytes = std::vector<std::byte>;
  static constexpr std::byte kGap{0x5a};

  // Process me's messages of m, payloads seeded with `seed`, in blocks of
  // send_block and recv_block bytes (ScatteredLayout).
  ScatteredHooks(const switchyard::schedulers::CommMatrix& m, switchyard::Rank me, std::uint64_t seed,
                 std::uint64_t send_block, std::uint64_t recv_block, bool describe)
      : me_(me),
        seed_(seed),
        describe_(describe),
        row_(m.row(me).begin(), m.row(me).end()),
        column_(m.column(me)),
        send_layout_(row_, send_block),
        recv_layout_(column_, recv_block),
        send_region_(send_layout_.size()),
        recv_region_(recv_layout_.size()),
        gap_(recv_region_.size(), true) {
    std::uint64_t most = 0;
    for (const auto& e : row_) send_staging_.emplace_back(e.bytes), most = std::max(most, e.bytes);
    for (const auto& e : column_) recv_staging_.emplace_back(e.bytes), most = std::max(most, e.bytes);
    scratch_.resize(most);
    for (std::size_t j = 0; j < column_.size(); ++j) {
      recv_layout_.for_each_block(j, [&](std::uint64_t at, std::uint64_t, std::uint64_t n) {
        std::fill_n(gap_.begin() + static_cast<std::ptrdiff_t>(at), n, false);
      });
    }
  }

  // Before a run: every message in the send region, every receive poisoned,
  // the gaps of the receive region filled with kGap, the counts zero.
  void reset() {
    for (std::size_t i = 0; i < row_.size(); ++i) {
      const std::span<std::byte> message(scratch_.data(), row_[i].bytes);
      switchyard::schedulers::fill_payload(message, seed_, me_, row_[i].peer);
      copy_blocks(send_layout_, i, message, send_region_, true);
    }
    std::fill(recv_region_.begin(), recv_region_.end(), kGap);
    for (std::size_t j = 0; j < column_.size(); ++j) {
      const std::span<std::byte> message(scratch_.data(), column_[j].bytes);
      switchyard::schedulers::fill_poison(message, seed_, column_[j].peer, me_);
      copy_blocks(recv_layout_, j, message, recv_region_, true);
    }
    buffer_calls_ = hook_calls_ = 0;
  }
  // After a run: what is wrong in the receive region, or nullopt.
  std::optional<std::string> wrong() {
    for (std::size_t j = 0; j < column_.size(); ++j) {
      const std::span<std::byte> message(scratch_.data(), column_[j].bytes);
      copy_blocks(recv_layout_, j, message, recv_region_, false);
      if (auto at = switchyard::schedulers::first_wrong_byte(message, seed_, column_[j].peer, me_)) {
        return "rank " + std::to_string(me_) + ": byte " + std::to_string(*at) + " of the message from rank " +
               std::to_string(column_[j].peer) + " is wrong";
      }
    }
    for (std::size_t b = 0; b < recv_region_.size(); ++b) {
      if (gap_[b] && recv_region_[b] != kGap) {
        return "rank " + std::to_string(me_) + ": byte " + std::to_string(b) + " of its receive region was written";
      }
    }
    return std::nullopt;
  }
  // Calls in the last run to the buffers, and to before_send and after_receive.
  int buffer_calls() const noexcept { return buffer_calls_; }
  int hook_calls() const noexcept { return hook_calls_; }

  std::span<const std::byte> send_buffer(std::size_t i) override {
    ++buffer_calls_;
    return send_staging_[i];
  }
  std::span<std::byte> recv_buffer(std::size_t j) override {
    ++buffer_calls_;
    return recv_staging_[j];
  }
  void before_send(std::size_t i) override {
    ++hook_calls_;
    copy_blocks(send_layout_, i, send_staging_[i], send_region_, false);
  }
  void after_receive(std::size_t j) override {
    ++hook_calls_;
    copy_blocks(recv_layout_, j, recv_staging_[j], recv_region_, true);
  }
  bool describes_memory() const override { return describe_; }
  void describe_send(std::size_t i, std::vector<switchyard::schedulers::StridedRun>& runs) override {
    const auto mine = send_layout_.runs(i);
    runs.insert(runs.end(), mine.begin(), mine.end());
  }
  void describe_recv(std::size_t j, std::vector<switchyard::schedulers::StridedRun>& runs) override {
    const auto mine = recv_layout_.runs(j);
    runs.insert(runs.end(), mine.begin(), mine.end());
  }
  switchyard::schedulers::ExchangeMemory memory() override { return {send_region_, recv_region_}; }

 private:
  // Message e's bytes between `message` and its blocks in `region`: into the
  // region, or out of it.
  static void copy_blocks(const ScatteredLayout& layout, std::size_t e, std::span<std::byte> message, Bytes& region,
                          bool into_region) {
    layout.for_each_block(e, [&](std::uint64_t at, std::uint64_t from, std::uint64_t n) {
      std::byte* r = region.data() + at;
      std::byte* m = message.data() + from;
      into_region ? std::copy_n(m, n, r) : std::copy_n(r, n, m);
    });
  }

  switchyard::Rank me_;
  std::uint64_t seed_;
  bool describe_;
  std::vector<switchyard::schedulers::MatrixEntry> row_, column_;
  ScatteredLayout send_layout_, recv_layout_;
  Bytes send_region_, recv_region_, scratch_;
  std::vector<bool> gap_;  // per byte of the receive region: in no block
  std::vector<Bytes> send_staging_, recv_staging_;
  int buffer_calls_ = 0, hook_calls_ = 0;
};

}  // namespace sytest
