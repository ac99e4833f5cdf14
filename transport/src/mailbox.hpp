#pragma once
// A process's mailbox: the messages that arrived before their receive was
// posted (unexpected), and the receives posted before their message arrived.
// Owned by the worker of the process's core, the only thread that touches it;
// cross-core traffic has already been serialised by the rings.
//
// Matching follows MPI: within one communicator (context id), an arriving
// message goes to the oldest posted receive that accepts it, else it waits as
// unexpected; a new receive takes the oldest unexpected message it accepts,
// else it waits as posted. Both lists are FIFO, so messages from one sender to
// one receiver on one communicator are taken in the order they were sent.
// Both lists are intrusive: queueing allocates nothing.

#include <cstdint>
#include <utility>

#include "switchyard/assert.hpp"
#include "switchyard/message.hpp"
#include "switchyard/transport/requests.hpp"

namespace switchyard::detail {

// A message that arrived before its receive: where its payload is, and what
// its sender is owed once it is taken in.
struct Envelope {
  static constexpr std::size_t kInlineBytes = 32;

  ContextId context = 0;
  Rank src = 0;  // the sender's job rank
  Tag tag = 0;
  std::uint64_t size = 0;
  const std::byte* remote = nullptr;  // rendezvous: the sender's buffer, copied from when taken in
  std::byte* staged = nullptr;  // eager: a copy of the payload, in `small` or the endpoint's staging pool
  bool owes_send_done = false;  // rendezvous or synchronous: the sender's request completes on take-in
  bool from_network = false;  // a rendezvous from another node: the payload is fetched when taken in
  RequestId request = 0;  // ... that request
  RequestId id = 0;
  Envelope* next = nullptr;
  alignas(16) std::byte small[kInlineBytes];  // small eager payloads live here: no trip to the pool

  // Where `bytes` of eager payload go: `small`, or a block of the pool.
  template <class Pool>
  std::byte* stage(Pool& pool, std::uint64_t bytes) {
    staged = bytes <= kInlineBytes ? small : pool.acquire(bytes);
    return staged;
  }
  template <class Pool>
  void unstage(Pool& pool) {
    if (staged && staged != small) pool.release(staged, size);
    staged = nullptr;
  }
};

inline bool accepts(const RecvState& r, ContextId context, Rank src, Tag tag) noexcept {
  return r.context == context && (r.src == kAnySource || r.src == src) && r.tag == tag;
}

class Mailbox {
 public:
  // The oldest posted receive that accepts a message of (context, src, tag),
  // taken off the list; nullptr if none. An arrival that finds its receive
  // needs no envelope.
  RecvState* match_posted(ContextId context, Rank src, Tag tag) noexcept {
    RecvState* prev = nullptr;
    for (RecvState* r = posted_head_; r; prev = r, r = r->next) {
      if (accepts(*r, context, src, tag)) {
        unlink(posted_head_, posted_tail_, posted_, prev, r);
        return r;
      }
    }
    return nullptr;
  }
  void queue_unexpected(Envelope* e) noexcept { append(unexpected_head_, unexpected_tail_, unexpected_, e); }
  // An arrived message: the posted receive it matches, or nullptr after queueing `e` as unexpected.
  RecvState* arrive(Envelope* e) noexcept {
    if (RecvState* r = match_posted(e->context, e->src, e->tag)) return r;
    queue_unexpected(e);
    return nullptr;
  }

  // A new receive: the oldest unexpected message it accepts, taken off the
  // list, or nullptr after queueing `r` as posted.
  Envelope* post(RecvState* r) noexcept {
    Envelope* prev = nullptr;
    for (Envelope* e = unexpected_head_; e; prev = e, e = e->next) {
      if (accepts(*r, e->context, e->src, e->tag)) {
        unlink(unexpected_head_, unexpected_tail_, unexpected_, prev, e);
        return e;
      }
    }
    append(posted_head_, posted_tail_, posted_, r);
    return nullptr;
  }

  // Takes a posted receive back, unmatched; false if it was not posted.
  bool withdraw(RecvState* target) noexcept {
    RecvState* prev = nullptr;
    for (RecvState* r = posted_head_; r; prev = r, r = r->next) {
      if (r == target) {
        unlink(posted_head_, posted_tail_, posted_, prev, r);
        return true;
      }
    }
    return false;
  }

  // Takes every unexpected message for which pred(e) holds off the list, and hands it to take(e).
  template <class Pred, class Take>
  void remove_unexpected_if(Pred&& pred, Take&& take) {
    Envelope* prev = nullptr;
    for (Envelope* e = unexpected_head_; e;) {
      Envelope* next = e->next;
      if (pred(*e)) {
        unlink(unexpected_head_, unexpected_tail_, unexpected_, prev, e);
        take(e);
      } else {
        prev = e;
      }
      e = next;
    }
  }

  // Receives posted on `context` and not matched, plus messages on it with a
  // user tag (below kFirstReservedTag) that arrived and were never taken: what
  // a process that frees the communicator has left behind (a scan, for free()).
  std::size_t left_on(ContextId context) const noexcept {
    std::size_t n = 0;
    for (const RecvState* r = posted_head_; r; r = r->next) n += r->context == context;
    for (const Envelope* e = unexpected_head_; e; e = e->next) n += e->context == context && e->tag < kFirstReservedTag;
    return n;
  }

  std::size_t unexpected_count() const noexcept { return unexpected_; }
  std::size_t posted_count() const noexcept { return posted_; }
  // Empties both lists, handing every unexpected message to `drop` (their
  // items belong to the endpoint's pools).
  template <class Drop>
  void clear(Drop&& drop) {
    for (Envelope* e = unexpected_head_; e;) drop(std::exchange(e, e->next));
    *this = Mailbox{};
  }

 private:
  template <class T>
  static void append(T*& head, T*& tail, std::size_t& count, T* item) noexcept {
    SWITCHYARD_ASSERT((head == nullptr) == (tail == nullptr) && (head == nullptr) == (count == 0));
    SWITCHYARD_ASSERT(item != tail);  // an item is in at most one list, once
    item->next = nullptr;
    (tail ? tail->next : head) = item;
    tail = item;
    ++count;
  }
  template <class T>
  static void unlink(T*& head, T*& tail, std::size_t& count, T* prev, T* item) noexcept {
    SWITCHYARD_ASSERT(count > 0 && (prev ? prev->next : head) == item);  // prev is item's predecessor
    (prev ? prev->next : head) = item->next;
    if (tail == item) tail = prev;
    item->next = nullptr;
    --count;
  }

  RecvState* posted_head_ = nullptr;
  RecvState* posted_tail_ = nullptr;
  Envelope* unexpected_head_ = nullptr;
  Envelope* unexpected_tail_ = nullptr;
  std::size_t posted_ = 0, unexpected_ = 0;
};

}  // namespace switchyard::detail
