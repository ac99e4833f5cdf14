#pragma once
// Internal: the sends and receives one round of a task keeps in flight, their
// tickets in the worker's frame cache (no allocation once a call of that size
// has run), and the check that every message had the size its block needs.

#include <cstdint>
#include <span>
#include <string>

#include "members.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/detail/pooled_array.hpp"
#include "switchyard/primitives/call_options.hpp"

namespace switchyard::primitives::detail {

class Pending {
 public:
  Pending(const Communicator& comm, std::size_t max_sends, std::size_t max_receives, const char* task)
      : comm_(comm), sends_(max_sends), receives_(max_receives), expected_(max_receives), task_(task) {}

  void send(Rank dst, std::span<const std::byte> bytes, Tag tag = 0) {
    sends_.emplace(send_count_++, [&] { return comm_.post_send(dst, bytes, tag); });
  }
  void receive(Rank src, std::span<std::byte> bytes, Tag tag = 0) {
    expected_[receive_count_] = bytes.size();
    receives_.emplace(receive_count_++, [&] { return comm_.post_recv_into(src, bytes, tag); });
  }
  // The runs of `buffer`'s blocks, one message each (tags 0 and 1); empty runs send nothing.
  void send_runs(Rank dst, std::span<const std::byte> buffer, std::size_t block, const Runs& runs) {
    for (int i = 0; i < 2; ++i) {
      if (runs[i].count > 0) send(dst, buffer.subspan(runs[i].first * block, runs[i].count * block), i);
    }
  }
  void receive_runs(Rank src, std::span<std::byte> buffer, std::size_t block, const Runs& runs) {
    for (int i = 0; i < 2; ++i) {
      if (runs[i].count > 0) receive(src, buffer.subspan(runs[i].first * block, runs[i].count * block), i);
    }
  }
  // The runs of a range of blocks held contiguously in `buffer` (a relay's
  // subtree), matched with the runs of another member's buffer: same tags, same split.
  void send_contiguous(Rank dst, std::span<const std::byte> buffer, std::size_t block, const Runs& runs) {
    std::size_t offset = 0;
    for (int i = 0; i < 2; ++i) {
      if (runs[i].count > 0) send(dst, buffer.subspan(offset * block, runs[i].count * block), i);
      offset += runs[i].count;
    }
  }
  void receive_contiguous(Rank src, std::span<std::byte> buffer, std::size_t block, const Runs& runs) {
    std::size_t offset = 0;
    for (int i = 0; i < 2; ++i) {
      if (runs[i].count > 0) receive(src, buffer.subspan(offset * block, runs[i].count * block), i);
      offset += runs[i].count;
    }
  }
  // Waits for everything posted, checks the sizes received, and starts over.
  Task<void> wait() {
    Process& p = comm_.process();
    co_await p.wait_all(receives_.span().first(receive_count_));
    for (std::size_t i = 0; i < receive_count_; ++i) {
      if (receives_[i].size() != expected_[i]) {
        invalid(task_, "rank " + std::to_string(comm_.rank()) + " received " + std::to_string(receives_[i].size()) +
                           " bytes from rank " + std::to_string(receives_[i].source()) + " where its block needs " +
                           std::to_string(expected_[i]) + " (members passed different block sizes)");
      }
    }
    co_await p.wait_all(sends_.span().first(send_count_));
    send_count_ = receive_count_ = 0;
  }

 private:
  const Communicator& comm_;
  switchyard::detail::PooledArray<SendTicket> sends_;
  switchyard::detail::PooledArray<RecvTicket> receives_;
  switchyard::detail::PooledArray<std::uint64_t> expected_;
  std::size_t send_count_ = 0;
  std::size_t receive_count_ = 0;
  const char* task_;
};

}  // namespace switchyard::primitives::detail
