// The static-to-dynamic wrapper's router (real_static_to_dynamic.hpp) and its two
// instances, the PMNB of indirect broadcasting and the PMNS of scattering.

#include <algorithm>
#include <array>

#include "real_routers.hpp"
#include "switchyard/primitives/multinode.hpp"

namespace switchyard::dynamic {

namespace {

// The senders of a period (the routers with a request) and the largest count.
struct PeriodSenders {
  std::vector<Rank> senders;
  std::uint64_t most = 0;
  void of(std::span<const std::uint64_t> counts) {
    senders.clear();
    most = 0;
    for (Rank r = 0; r < counts.size(); ++r) {
      if (counts[r] == 0) continue;
      senders.push_back(r);
      most = std::max(most, counts[r]);
    }
  }
};

// Hands on the packets of every other sender: sender j's block holds counts[senders[j]] of them.
void receive_blocks(const PeriodSenders& s, Rank me, std::span<const std::uint64_t> counts,
                    std::span<const std::byte> blocks, std::size_t packet_bytes,
                    const std::function<void(std::span<const std::byte>)>& receive) {
  const std::size_t block = s.most * packet_bytes;
  for (std::size_t j = 0; j < s.senders.size(); ++j) {
    if (s.senders[j] == me) continue;
    for (std::uint64_t q = 0; q < counts[s.senders[j]]; ++q) {
      receive(blocks.subspan(j * block + q * packet_bytes, packet_bytes));
    }
  }
}

// What both instances keep from period to period: their senders, and the
// primitives' scratch memory, so that a period allocates nothing once the
// largest one has been seen.
class PaddedPeriods : public RealStaticAlgorithm {
 protected:
  primitives::CallOptions call_options() {
    primitives::CallOptions options;
    options.workspace = &workspace_;
    return options;
  }
  PeriodSenders period_;
  std::vector<std::byte> send_, recv_;

 private:
  primitives::Workspace workspace_;
};

class PmnbBroadcast final : public PaddedPeriods {
 public:
  std::size_t request_bytes(std::size_t packet_bytes, Rank) const override { return packet_bytes; }

  Task<void> run(Communicator routers, std::span<const std::uint64_t> counts, std::span<const std::byte> mine,
                 std::size_t packet_bytes, const std::function<void(std::span<const std::byte>)>& receive) override {
    period_.of(counts);
    const std::size_t block = period_.most * packet_bytes;
    send_.assign(block, std::byte{0});
    std::copy(mine.begin(), mine.end(), send_.begin());
    recv_.resize(period_.senders.size() * block);
    const primitives::CallOptions options = call_options();
    co_await primitives::pmnb(routers, period_.senders, send_, recv_, options);
    receive_blocks(period_, routers.rank(), counts, recv_, packet_bytes, receive);
  }
};

class PmnsScatter final : public PaddedPeriods {
 public:
  std::size_t request_bytes(std::size_t packet_bytes, Rank nodes) const override { return packet_bytes * nodes; }

  Task<void> run(Communicator routers, std::span<const std::uint64_t> counts, std::span<const std::byte> mine,
                 std::size_t packet_bytes, const std::function<void(std::span<const std::byte>)>& receive) override {
    const Rank n = routers.size();
    period_.of(counts);
    const std::size_t block = period_.most * packet_bytes;
    // Block d: this router's packets for d, request by request.
    send_.assign(n * block, std::byte{0});
    const std::size_t request = packet_bytes * n;
    for (std::uint64_t q = 0; q < counts[routers.rank()]; ++q) {
      for (Rank d = 0; d < n; ++d) {
        std::copy_n(mine.begin() + q * request + d * packet_bytes, packet_bytes,
                    send_.begin() + d * block + q * packet_bytes);
      }
    }
    recv_.resize(period_.senders.size() * block);
    const primitives::CallOptions options = call_options();
    co_await primitives::pmns(routers, period_.senders, send_, recv_, options);
    receive_blocks(period_, routers.rank(), counts, recv_, packet_bytes, receive);
  }
};

}  // namespace

std::unique_ptr<RealStaticAlgorithm> real_pmnb_broadcast() { return std::make_unique<PmnbBroadcast>(); }
std::unique_ptr<RealStaticAlgorithm> real_pmns_scatter() { return std::make_unique<PmnsScatter>(); }

namespace detail {

namespace {

// What a router holds between periods: the requests its producer handed over.
class RequestQueue {
 public:
  RequestQueue(Process& p, Rank producer, std::size_t request_bytes)
      : p_(p), producer_(producer), request_bytes_(request_bytes), inbox_(request_bytes) {}

  std::span<std::byte> inbox() noexcept { return inbox_; }
  Rank producer() const noexcept { return producer_; }
  bool producer_done() const noexcept { return producer_done_; }
  std::uint64_t count() const noexcept { return count_; }
  std::span<const std::byte> requests() const noexcept { return queued_; }
  void clear() {
    queued_.clear();
    count_ = 0;
  }
  // The message now in inbox(): a request, or the producer's done notice.
  void take() {
    if (header_of(inbox_).kind == PacketKind::kDone) {
      producer_done_ = true;
      return;
    }
    queued_.insert(queued_.end(), inbox_.begin(), inbox_.end());
    ++count_;
  }
  // Takes every request already in this core's endpoint, without waiting.
  void drain() {
    while (!producer_done_) {
      RecvTicket t = p_.world().post_recv_into(producer_, inbox_, kRequestTag);
      if (!p_.test(t)) return;  // the ticket's destructor withdraws the receive
      take();
    }
  }

 private:
  Process& p_;
  Rank producer_;
  std::size_t request_bytes_;
  std::vector<std::byte> inbox_;
  std::vector<std::byte> queued_;
  std::uint64_t count_ = 0;
  bool producer_done_ = false;
};

// The announcements (kWakeTag) a router sent to each router, and those it
// took. Two routers may announce one period: the later copy waits in the
// mailbox for a later wait, or for the end, where the router takes what is
// left (take_leftover_announcements), so that a pipeline's job ends with no
// message unreceived.
struct Announcements {
  explicit Announcements(Rank routers) : sent(routers, 0) {}
  std::vector<std::int64_t> sent;
  std::int64_t taken = 0;
};

// After an empty period: waits (in the kernel, if the whole core is idle)
// for a request from this router's producer, which it announces to the
// others, or for another router's announcement of period `next`.
Task<void> wait_for_work(Process& p, Communicator routers, RequestQueue& queue, std::uint64_t next,
                         Announcements& announcements) {
  std::array<RecvTicket, 2> tickets;
  std::uint64_t announced = 0;
  for (;;) {
    if (!queue.producer_done() && !tickets[0].valid()) {
      tickets[0] = p.world().post_recv_into(queue.producer(), queue.inbox(), kRequestTag);
    }
    if (!tickets[1].valid()) {
      tickets[1] = routers.post_recv_into(kAnySource, std::as_writable_bytes(std::span(&announced, 1)), kWakeTag);
    }
    const std::size_t k = co_await p.wait_any(std::span(tickets));
    if (k == 1) {
      tickets[1] = RecvTicket{};
      ++announcements.taken;
      if (announced < next) continue;  // of a period already run: two routers announced it
      // A request that came at the same time is taken now: dropping a completed ticket drops its message.
      if (tickets[0].valid() && p.test(tickets[0])) queue.take();
      co_return;
    }
    tickets[0] = RecvTicket{};
    queue.take();
    queue.drain();
    std::vector<SendTicket> sends;
    for (Rank r = 0; r < routers.size(); ++r) {
      if (r == routers.rank()) continue;
      sends.push_back(routers.post_send(r, std::as_bytes(std::span(&next, 1)), kWakeTag));
      ++announcements.sent[r];
    }
    co_await p.wait_all(std::span(sends));
    // One that came meanwhile is taken with its ticket (dropping a completed ticket drops its message).
    if (tickets[1].valid() && p.test(tickets[1])) ++announcements.taken;
    co_return;
  }
}

// At the end: every router learns how many announcements were sent to it,
// and takes those still in its mailbox or on their way.
Task<void> take_leftover_announcements(Communicator routers, const Announcements& announcements) {
  const std::vector<std::int64_t> sent_to = co_await routers.allreduce(announcements.sent);
  std::uint64_t announced = 0;
  for (std::int64_t k = announcements.taken; k < sent_to[routers.rank()]; ++k) {
    co_await routers.recv_into(kAnySource, std::as_writable_bytes(std::span(&announced, 1)), kWakeTag);
  }
}

}  // namespace

Task<void> wrapper_router(Process& p, Communicator routers, Rank producer, RealStaticAlgorithm& algorithm,
                          Ledger& ledger, std::size_t packet_bytes) {
  RequestQueue queue(p, producer, algorithm.request_bytes(packet_bytes, routers.size()));
  const std::function<void(std::span<const std::byte>)> receive = [&](std::span<const std::byte> packet) {
    ledger.receive(packet);
  };
  struct Prefix {
    std::uint64_t count;
    std::uint64_t producer_done;
  };
  std::vector<std::uint64_t> counts(routers.size());
  Announcements announcements(routers.size());
  for (std::uint64_t period = 1;; ++period) {
    queue.drain();
    const Prefix mine{queue.count(), queue.producer_done() ? 1u : 0u};
    const std::vector<Prefix> all = co_await routers.allgather_value(mine);
    std::uint64_t m = 0;
    bool all_done = true;
    for (Rank r = 0; r < all.size(); ++r) {
      counts[r] = all[r].count;
      m += all[r].count;
      all_done = all_done && all[r].producer_done;
    }
    if (m == 0 && all_done) {  // drained: no producer will generate again
      co_await take_leftover_announcements(routers, announcements);
      co_return;
    }
    if (m == 0) {
      co_await wait_for_work(p, routers, queue, period + 1, announcements);
      continue;
    }
    co_await algorithm.run(routers, counts, queue.requests(), packet_bytes, receive);
    queue.clear();
  }
}

}  // namespace detail
}  // namespace switchyard::dynamic
