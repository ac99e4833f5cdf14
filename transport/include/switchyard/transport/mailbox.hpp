#pragma once
// A process's mailbox: where arrived messages wait to be taken in, and where the
// process's posted receives wait for their message. It is owned by the worker
// thread of the process's core, which is the only thread that ever touches it,
// so it needs no atomics: cross-core traffic has already been serialised by the
// core-to-core ring (channel.hpp) before it reaches here.
//
// Matching follows MPI: within one communicator (context id), an arriving message goes to the oldest posted receive
// that accepts it, else it waits as unexpected; a new receive takes the oldest
// unexpected message it accepts, else it waits as posted. Both lists are FIFO,
// so messages from one sender to one receiver are taken in the order they were sent.

#include <cstdint>
#include <deque>
#include <span>

#include "switchyard/transport/message.hpp"

namespace switchyard::detail {

// A send in flight, owned by the sending process. For a single-copy send the
// receiver copies straight out of `data` and then reports completion.
struct SendState {
  const std::byte* data = nullptr;
  std::uint64_t size = 0;
  Rank dst = 0;
  Tag tag = 0;
  void* owner = nullptr;        // the sending Process; completion wakes it
  std::uint64_t ring_seq = 0;   // eager cross-core send: done once the outbound ring has taken this packet
  bool done = false;
};

struct Envelope {
  ContextId context = 0;
  Rank src = 0;  // the sender's rank in the job
  Tag tag = 0;
  std::uint64_t size = 0;
  SendState* single_copy = nullptr;  // set: the payload is still in the sender's buffer
  SendState* completes = nullptr;    // the send to complete once the message is taken in (single-copy or synchronous)
  ByteBuffer eager;                  // otherwise: the payload, already copied out of the ring
};

// A receive posted by a process; filled in when its message is matched.
struct RecvState {
  ContextId context = 0;
  Rank src = kAnySource;  // the job rank it accepts, or kAnySource
  Tag tag = 0;
  Rank source = 0;        // once done: the sender's rank in the receive's communicator
  std::span<std::byte> target;  // where to put the payload; empty span and !has_target: a new Message
  bool has_target = false;
  bool matched = false;
  bool done = false;       // payload in place (or the message was refused as too large)
  bool truncated = false;  // the message did not fit `target`; nothing was copied
  Envelope envelope;
  Message result;
};

inline bool accepts(const RecvState& r, const Envelope& e) noexcept {
  return r.context == e.context && (r.src == kAnySource || r.src == e.src) && r.tag == e.tag;
}

class Mailbox {
 public:
  // Delivers an arrived message. Returns the posted receive it completed the
  // match of, or nullptr if it now waits as unexpected.
  RecvState* arrive(Envelope&& e) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if (accepts(**it, e)) {
        RecvState* r = *it;
        erase(posted_, it);
        r->envelope = std::move(e);
        r->matched = true;
        return r;
      }
    }
    unexpected_.push_back(std::move(e));
    return nullptr;
  }

  // Posts a receive. Returns true if an unexpected message matched it at once.
  bool post(RecvState* r) {
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
      if (accepts(*r, *it)) {
        r->envelope = std::move(*it);
        erase(unexpected_, it);
        r->matched = true;
        return true;
      }
    }
    posted_.push_back(r);
    return false;
  }

  // Takes a posted receive back, unmatched; returns false if it was not posted.
  bool withdraw(RecvState* r) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if (*it == r) {
        erase(posted_, it);
        return true;
      }
    }
    return false;
  }

  std::size_t unexpected_count() const noexcept { return unexpected_.size(); }
  std::size_t posted_count() const noexcept { return posted_.size(); }
  void clear() {
    unexpected_.clear();
    posted_.clear();
  }

 private:
  // Nearly every match is at the front; deque::erase is only cheap at the ends.
  template <class Deque>
  static void erase(Deque& d, typename Deque::iterator it) {
    if (it == d.begin()) {
      d.pop_front();
    } else {
      d.erase(it);
    }
  }

  std::deque<Envelope> unexpected_;
  std::deque<RecvState*> posted_;
};

}  // namespace switchyard::detail
