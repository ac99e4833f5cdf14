#pragma once
/// @file
/// Sends and receives in flight, and the pools they live in. A request lives in
/// the pool of the core of the process that made it, at a stable address, and is
/// named across cores by its index there (RequestId), never by a pointer. Every
/// field is touched only by that core's worker thread.

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "switchyard/assert.hpp"
#include "switchyard/message.hpp"
#include "switchyard/transport/wire.hpp"

namespace switchyard::detail {

struct SendState {
  const std::byte* data = nullptr;  // the caller's buffer, until done
  std::uint64_t size = 0;
  Rank owner = 0;  // the sending process (job rank): completion wakes it
  Rank dst = 0;  // for diagnostics
  Tag tag = 0;
  RequestId id = 0;
  std::uint32_t core = 0;  // an eager send waiting for room: the destination core
  std::uint64_t seq = 0;  // ... and its packet's sequence number towards that core
  bool done = false;
  bool over_network = false;  // its payload is an MPI_Issend from `data`: MPI may read it until done
  bool granted = false;  // a busy-lock request (Endpoint::try_remote_lock), once done: the answer
  SendState* next_waiting = nullptr;  // the destination core's FIFO of eager sends waiting for room
};

// The id of the one SendState of an endpoint that every buffered send
// complete at once shares (Endpoint::send): no request of the pool, nothing
// to give back, and no id that a packet could name.
inline constexpr RequestId kSharedCompleteSend = ~RequestId{0};

struct RecvState {
  ContextId context = 0;
  Rank src = kAnySource;  // the job rank it accepts, or kAnySource
  Tag tag = 0;
  Rank owner = 0;  // the receiving process (job rank)
  std::span<std::byte> target;  // where the payload goes; with !has_target into `payload`
  bool has_target = false;
  bool done = false;  // payload in place (or refused as too large)
  bool truncated = false;  // the message did not fit `target`; nothing was copied
  Rank sender = 0;  // once done: the sender's job rank
  std::uint64_t size = 0;  // once done: the message's size
  ByteBuffer payload;  // once done, without a target: the message
  RequestId id = 0;
  RecvState* next = nullptr;  // the mailbox's list of posted receives
};

// Objects of one kind (with a RequestId `id`) at stable addresses, recycled
// through a free list: after warm-up, acquiring and releasing allocate nothing.
template <class T>
class RequestPool {
 public:
  T* acquire() {
    if (free_.empty()) {
      T& t = items_.emplace_back();
      t.id = static_cast<RequestId>(items_.size() - 1);
      return &t;
    }
    T* t = free_.back();
    free_.pop_back();
    return t;
  }
  void release(T* t) {
    SWITCHYARD_ASSERT(t->id < items_.size() && &items_[t->id] == t);  // this pool's
    SWITCHYARD_ASSERT(free_.size() < items_.size());  // not released twice over
    free_.push_back(t);
  }
  T& operator[](RequestId id) noexcept {
    SWITCHYARD_ASSERT(id < items_.size());
    return items_[id];
  }
  // Forgets every request (a new job); memory is kept.
  void reset() {
    free_.clear();
    for (T& t : items_) free_.push_back(&t);
  }

 private:
  std::deque<T> items_;  // deque: growing never moves an item
  std::vector<T*> free_;
};

}  // namespace switchyard::detail
