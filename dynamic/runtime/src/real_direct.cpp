// Direct broadcasting's router (section 3.4): a packet of class j (tree T^j,
// chosen when it was generated) that reaches node v from w is handed on to
// every other neighbour of v in T^j, each link with its own FIFO queue and
// one send in flight at a time; v's own packets go to all its T^j neighbours.
// A link carries each packet once: on a tree, "neither sent to w nor received
// from w" is exactly "not from w".
//
// Ending: a router whose producer has finished tells every other router how
// many requests its node generated (directly, not on a tree). A router is done
// once it knows every count, has received every other node's packets, and has
// nothing queued or in flight: nothing can reach it any more.

#include <algorithm>

#include "real_routers.hpp"

namespace switchyard::dynamic::detail {

namespace {

// Packets of one size, first in first out, in one growing ring of bytes.
class PacketQueue {
 public:
  explicit PacketQueue(std::size_t packet_bytes) : packet_(packet_bytes) {}
  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }
  void push(std::span<const std::byte> packet) {
    if (size_ * packet_ == bytes_.size()) grow();
    std::copy(packet.begin(), packet.end(), bytes_.begin() + ((head_ + size_) % capacity()) * packet_);
    ++size_;
  }
  std::span<const std::byte> front() const noexcept { return {bytes_.data() + head_ * packet_, packet_}; }
  void pop() noexcept {
    head_ = (head_ + 1) % capacity();
    --size_;
  }

 private:
  std::size_t capacity() const noexcept { return bytes_.size() / packet_; }
  void grow() {
    std::vector<std::byte> bigger(std::max<std::size_t>(16, 2 * capacity()) * packet_);
    for (std::size_t i = 0; i < size_; ++i) {
      std::copy_n(bytes_.begin() + ((head_ + i) % capacity()) * packet_, packet_, bigger.begin() + i * packet_);
    }
    bytes_ = std::move(bigger);
    head_ = 0;
  }
  std::size_t packet_;
  std::vector<std::byte> bytes_;
  std::size_t head_ = 0, size_ = 0;
};

// Packets a router handles in a row before it lets the other processes of its core run.
constexpr std::uint64_t kBusyTurns = 64;

struct Link {
  Link(TreeLink l, std::size_t packet_bytes)
      : peer(l.peer), tree(l.tree), queue(packet_bytes), in_flight(packet_bytes) {}
  Rank peer;
  std::uint32_t tree;
  PacketQueue queue;
  std::vector<std::byte> in_flight;  // the packet being sent: the queue may grow under it
  SendTicket send;
};

class DirectRouter {
 public:
  DirectRouter(Process& p, Communicator routers, Rank producer, const std::vector<TreeLink>& links, Ledger& ledger,
               std::size_t packet_bytes)
      : p_(p),
        routers_(routers),
        producer_(producer),
        ledger_(ledger),
        from_producer_buffer_(packet_bytes),
        from_peers_buffer_(packet_bytes),
        expected_(routers.size(), -1) {
    for (const TreeLink& l : links) links_.emplace_back(l, packet_bytes);
    expected_[routers.rank()] = 0;
  }

  Task<void> run() {
    from_producer_ = p_.world().post_recv_into(producer_, from_producer_buffer_, kRequestTag);
    from_peers_ = routers_.post_recv_into(kAnySource, from_peers_buffer_, kForwardTag);
    for (std::uint64_t busy_turns = 0;; ++busy_turns) {
      pump();
      if (finished()) break;
      // finished() too: the last event may be a send completing with nothing queued behind it.
      const auto something = [this] {
        return from_producer_.done() || from_peers_.done() || link_free() || finished();
      };
      // Only when nothing is there yet: where symmetric transfer is not a tail
      // call (ASan builds), a wait_until that completes at once resumes this
      // loop one frame deeper, and a busy router overflowed the stack.
      if (!something()) {
        co_await p_.wait_until(something, "a packet, or room on a tree link");
        busy_turns = 0;
      } else if (busy_turns == kBusyTurns) {
        // Always work to do: the producer of this core (and the application's
        // feed) must still run, and the watchdog sees a process that yields.
        co_await p_.yield();
        busy_turns = 0;
      }
      if (from_producer_.valid() && p_.test(from_producer_)) take_from_producer();
      if (p_.test(from_peers_)) take_from_peer();
    }
    co_await p_.wait_all(std::span(notices_));
  }

 private:
  void take_from_producer() {
    const PacketHeader h = header_of(from_producer_buffer_);
    if (h.kind == PacketKind::kDone) {
      from_producer_ = RecvTicket{};
      producer_done_ = true;
      notice_ = h;
      for (Rank r = 0; r < routers_.size(); ++r) {
        if (r != routers_.rank()) {
          notices_.push_back(routers_.post_send(r, std::as_bytes(std::span(&notice_, 1)), kForwardTag));
        }
      }
      return;
    }
    forward(from_producer_buffer_, h.tree, routers_.rank());
    from_producer_ = p_.world().post_recv_into(producer_, from_producer_buffer_, kRequestTag);
  }

  void take_from_peer() {
    const PacketHeader h = header_of(from_peers_buffer_);
    const Rank from = from_peers_.source();
    if (h.kind == PacketKind::kDone) {
      expected_[h.origin] = static_cast<std::int64_t>(h.sequence);
    } else {
      ledger_.receive(from_peers_buffer_);
      forward(from_peers_buffer_, h.tree, from);
    }
    from_peers_ = routers_.post_recv_into(kAnySource, from_peers_buffer_, kForwardTag);
  }

  // Onto every link of the packet's tree but the one it came on.
  void forward(std::span<const std::byte> packet, std::uint32_t tree, Rank from) {
    for (Link& l : links_) {
      if (l.tree == tree && l.peer != from) l.queue.push(packet);
    }
  }

  bool idle(Link& l) { return !l.send.valid() || p_.test(l.send); }
  bool link_free() {
    return std::any_of(links_.begin(), links_.end(), [this](Link& l) { return !l.queue.empty() && idle(l); });
  }

  void pump() {
    for (Link& l : links_) {
      if (l.queue.empty() || !idle(l)) continue;
      std::copy(l.queue.front().begin(), l.queue.front().end(), l.in_flight.begin());
      l.queue.pop();
      l.send = routers_.post_send(l.peer, l.in_flight, kForwardTag);
    }
  }

  bool finished() {
    if (!producer_done_) return false;
    for (Rank r = 0; r < routers_.size(); ++r) {
      if (expected_[r] < 0) return false;
      if (r != routers_.rank() && ledger_.received_from(r) != static_cast<std::uint64_t>(expected_[r])) return false;
    }
    return std::all_of(links_.begin(), links_.end(), [this](Link& l) { return l.queue.empty() && idle(l); });
  }

  Process& p_;
  Communicator routers_;
  Rank producer_;
  Ledger& ledger_;
  std::vector<Link> links_;
  std::vector<std::byte> from_producer_buffer_, from_peers_buffer_;
  RecvTicket from_producer_, from_peers_;
  bool producer_done_ = false;
  PacketHeader notice_;  // this node's done notice, being sent to every other router
  std::vector<SendTicket> notices_;
  std::vector<std::int64_t> expected_;  // requests each node generated, -1 until its notice came
};

}  // namespace

Task<void> direct_router(Process& p, Communicator routers, Rank producer, const std::vector<TreeLink>& links,
                         Ledger& ledger, std::size_t packet_bytes) {
  DirectRouter router(p, routers, producer, links, ledger, packet_bytes);
  co_await router.run();
}

}  // namespace switchyard::dynamic::detail
