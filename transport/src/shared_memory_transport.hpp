#pragma once
// The transport between the cores of one machine, batched as in Seastar.
//
// Sending: post() appends the packet to a staging buffer per destination core
// (owner-private, so hot in this core's cache); publish() (a packet a running
// process posted: at once) and flush() (what the worker's own poll posted, at
// the end of the poll, and whatever a full ring left) move a staging buffer
// into its ring with one bulk push (one store of the ring's write index) and
// then check the destination's doorbell once: a relaxed load while the peer is
// awake, no fence (doorbell.hpp says why no wake-up is lost). A destination
// whose staged packets pass kAutoFlushSlots is pushed at once. A running
// process's packet (post_published) skips the staging buffer: it is written
// straight into the ring's cells when nothing waits before it towards that
// core and the ring has room for it whole.
//
// Receiving: poll() drains each incoming ring in bulk pops of up to
// kBatchSlots into a batch buffer and hands each packet to the sink straight
// from there; only a packet cut by the end of a batch (or by a ring that could
// take only part of it) is reassembled in a per-ring buffer first.

#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "channel.hpp"
#include "doorbell.hpp"
#include "switchyard/assert.hpp"
#include "transport.hpp"

namespace switchyard::detail {

// The rings and doorbells of one job on one machine: ring (from, to) for every
// ordered pair of cores, and each core's doorbell (owned by its worker). A
// job's rings serve the next job on the same workers where they are left
// empty (reusable): no cores² rings allocated and zeroed per job, and their
// lines still in the cores that use them.
class RingSet {
 public:
  RingSet(std::vector<Doorbell*> doorbells, std::size_t capacity_lines);
  std::uint32_t cores() const noexcept { return static_cast<std::uint32_t>(doorbells_.size()); }
  Channel& ring(std::uint32_t from, std::uint32_t to) noexcept { return *rings_[from * cores() + to]; }
  Doorbell& doorbell(std::uint32_t core) noexcept { return *doorbells_[core]; }
  std::size_t capacity_lines() const noexcept { return capacity_lines_; }
  std::size_t capacity_slots() const noexcept { return capacity_lines_ * Channel::kSlotsPerCell; }
  // Whether another job of `capacity_lines` may take these rings: the same
  // capacity, and nothing left in any of them (no job runs on them).
  bool reusable(std::size_t capacity_lines) const noexcept;

 private:
  std::vector<Doorbell*> doorbells_;
  std::vector<std::unique_ptr<Channel>> rings_;  // none on the diagonal
  std::size_t capacity_lines_;
};

// A growable array of slots that never zero-fills: what a sender stages and a
// receiver reassembles. Its capacity stays between uses.
class SlotBuffer {
 public:
  Slot* data() noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  void clear() noexcept { size_ = 0; }
  // Appends n uninitialised slots and returns the first.
  Slot* extend(std::size_t n);
  void append(const Slot* from, std::size_t n);
  // Appends one packet (header, then payload rounded up to whole slots); returns its slots.
  std::size_t append_packet(const WireHeader& header, std::span<const std::byte> payload);
  // Removes the first n slots, moving the rest to the front.
  void drop_front(std::size_t n) noexcept;

 private:
  std::unique_ptr<Slot[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

class SharedMemoryTransport final : public Transport {
 public:
  static constexpr std::size_t kBatchSlots = 512;  // 8 KiB: a bulk pop stays in L1
  static constexpr std::size_t kAutoFlushSlots = 1024;  // 16 KiB staged towards one core: push now

  SharedMemoryTransport();
  // For a job: this worker is core `core` of `rings`.
  void attach(RingSet& rings, std::uint32_t core);
  void detach();

  std::uint64_t post(const Route& to, const WireHeader& header, std::span<const std::byte> payload) override;
  bool accepted(const Route& to, std::uint64_t seq) const override { return seq <= out_[to.core].pushed + window_; }
  bool publish(const Route& to) override;
  // Into the ring at once, without staging, when nothing waits before it
  // towards that core and the ring has room; else post() and publish().
  // Inline, called on this final class (the endpoint's same-node sends): the
  // header the caller builds goes into the ring's cell from its registers,
  // with no call between the stores that build it and the load that copies it.
  std::uint64_t post_published(const Route& to, const WireHeader& header, std::span<const std::byte> payload) override {
    assert(to.core != core_ && payload.size() == wire_payload_bytes(header));
    Outbox& out = out_[to.core];
    if (out.head != out.staged.size() || !out.ring->push_packet(header, payload)) [[unlikely]]
      return post_and_push(out, to, header, payload);
    const std::size_t slots = packet_slots(payload.size());
    out.posted += slots;
    out.pushed += slots;
    out.doorbell->ring();
    return out.posted;
  }
  bool flush() override;
  bool poll(ArrivalSink& sink) override;
  // What a process waiting for a message from core `from` reads itself,
  // while it runs: that ring's packets, where they lie and in order, up to
  // the one that sets `done`, as long as they are messages or completions of
  // sends (kEager, kRendezvous, kSendDone), whose delivery runs no handler.
  // It stops before any other kind, before a packet that runs past its cell,
  // and at once while the poll holds part of a packet cut by a batch's end:
  // those are the worker's poll's, later, with all that follows them.
  void deliver_until(std::uint32_t from, ArrivalSink& sink, const bool& done) {
    Inbox& in = in_[from];
    SWITCHYARD_ASSERT(from != core_ && in.ring);
    if (!in.partial.empty()) return;
    stats_.slots_received += deliver_in_place(*in.ring, sink, [&](const WireHeader& h) {
      return !done && (h.kind == WireKind::kEager || h.kind == WireKind::kRendezvous || h.kind == WireKind::kSendDone);
    });
  }
  bool has_arrivals() const override {
    for (const Inbox& i : in_) {
      if (i.ring && i.ring->has_slots()) return true;
    }
    return false;
  }
  // Outboxes with slots not in their ring are those a full ring left, and
  // those posted to since the last flush: the same count as has_staged().
  bool has_backlog() const override { return has_staged(); }
  bool has_staged() const override { return staged_outboxes_ != 0; }
  const TransportStats& stats() const override { return stats_; }
  // The job's end, once every worker has left it (on one thread): every
  // packet core `from` posted towards core `to` that `to` never took (the
  // rest of one it holds in part, what is in their ring, what no ring took
  // yet) to sink, in order. Leaves them taken.
  static void hand_over_untaken(SharedMemoryTransport& from, SharedMemoryTransport& to, Channel& ring,
                                ArrivalSink& sink);

 private:
  struct Outbox {  // this core's packets towards one other core; owner-private
    Channel* ring = nullptr;
    Doorbell* doorbell = nullptr;
    SlotBuffer staged;
    std::size_t head = 0;  // staged[head, size) is not in the ring yet
    std::uint64_t posted = 0;  // slots posted so far: a packet's sequence number is its last slot's
    std::uint64_t pushed = 0;  // slots the ring has taken
  };
  struct Inbox {  // one other core's packets towards this one; owner-private
    Channel* ring = nullptr;
    SlotBuffer partial;  // the slots so far of a packet cut by a batch's end
  };

  bool push(Outbox& out);
  // post_published() when something waits before the packet or the ring is full: staged, then pushed.
  std::uint64_t post_and_push(Outbox& out, const Route& to, const WireHeader& header,
                              std::span<const std::byte> payload);
  void parse(Inbox& in, const Slot* slots, std::size_t count, ArrivalSink& sink);
  // The packets whole in the ring's next cells, handed to sink where they
  // lie, cell after cell, while no packet runs past its cell's end and
  // take(header) holds before each. The slots taken so; poll() pops the rest.
  template <class Take>
  static std::size_t deliver_in_place(Channel& ring, ArrivalSink& sink, Take&& take) {
    std::size_t taken = 0;
    for (std::span<const Slot> cell; !(cell = ring.front()).empty();) {
      std::size_t i = 0;
      while (cell.size() - i >= kHeaderSlots) {
        const WireHeader h = header_at(&cell[i]);
        const std::size_t need = packet_slots(wire_payload_bytes(h));
        if (need > cell.size() - i || !take(h)) break;  // it runs on into the next cells, or is left
        deliver(h, &cell[i], sink);
        i += need;
      }
      taken += i;
      if (i != 0) ring.take_front(i);
      if (i != cell.size()) break;
    }
    return taken;
  }
  // The header that starts at `header`.
  static WireHeader header_at(const Slot* header) noexcept {
    WireHeader h;
    std::memcpy(&h, header, sizeof h);
    return h;
  }
  // Slots of the packet whose header starts at `header`.
  static std::size_t slots_of(const Slot* header) noexcept {
    return packet_slots(wire_payload_bytes(header_at(header)));
  }
  static void deliver(const WireHeader& h, const Slot* packet, ArrivalSink& sink) {
    sink.arrived(h, {reinterpret_cast<const std::byte*>(packet + kHeaderSlots),
                     static_cast<std::size_t>(wire_payload_bytes(h))});
  }
  static void deliver(const Slot* packet, ArrivalSink& sink) { deliver(header_at(packet), packet, sink); }

  std::vector<Outbox> out_;  // by destination core; none for this core
  std::vector<Inbox> in_;  // by source core
  std::unique_ptr<Slot[]> batch_;
  std::uint64_t window_ = 0;  // the ring's capacity in slots
  std::uint32_t core_ = 0;
  std::uint32_t staged_outboxes_ = 0;  // outboxes with slots not in their ring yet: flush() has work
  TransportStats stats_;
};

}  // namespace switchyard::detail
