#include "shared_memory_transport.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace switchyard::detail {

RingSet::RingSet(std::vector<Doorbell*> doorbells, std::size_t capacity_lines)
    : doorbells_(std::move(doorbells)), capacity_lines_(capacity_lines) {
  const std::uint32_t n = cores();
  rings_.resize(std::size_t{n} * n);
  for (std::uint32_t a = 0; a < n; ++a) {
    for (std::uint32_t b = 0; b < n; ++b) {
      if (a != b) rings_[a * n + b] = std::make_unique<Channel>(capacity_lines);
    }
  }
}

bool RingSet::reusable(std::size_t capacity_lines) const noexcept {
  return capacity_lines == capacity_lines_ &&
         std::all_of(rings_.begin(), rings_.end(), [](const auto& ring) { return !ring || ring->empty(); });
}

Slot* SlotBuffer::extend(std::size_t n) {
  if (size_ + n > capacity_) {
    const std::size_t capacity = std::max({size_ + n, 2 * capacity_, std::size_t{256}});
    std::unique_ptr<Slot[]> bigger(new Slot[capacity]);  // default-initialised: no zero fill
    if (size_) std::memcpy(bigger.get(), data_.get(), size_ * sizeof(Slot));
    data_ = std::move(bigger);
    capacity_ = capacity;
  }
  Slot* at = data_.get() + size_;
  size_ += n;
  return at;
}

void SlotBuffer::append(const Slot* from, std::size_t n) { std::memcpy(extend(n), from, n * sizeof(Slot)); }

std::size_t SlotBuffer::append_packet(const WireHeader& header, std::span<const std::byte> payload) {
  const std::size_t slots = packet_slots(payload.size());
  Slot* at = extend(slots);
  std::memcpy(at, &header, sizeof header);
  if (!payload.empty()) std::memcpy(at + kHeaderSlots, payload.data(), payload.size());
  return slots;
}

void SlotBuffer::drop_front(std::size_t n) noexcept {
  std::memmove(data_.get(), data_.get() + n, (size_ - n) * sizeof(Slot));
  size_ -= n;
}

SharedMemoryTransport::SharedMemoryTransport() : batch_(new Slot[kBatchSlots]) {}

void SharedMemoryTransport::attach(RingSet& rings, std::uint32_t core) {
  const std::uint32_t cores = rings.cores();
  core_ = core;
  window_ = rings.capacity_slots();
  stats_ = {};
  out_.resize(cores);
  in_.resize(cores);
  staged_outboxes_ = 0;
  for (std::uint32_t c = 0; c < cores; ++c) {
    Outbox& out = out_[c];
    out.staged.clear();
    out.head = 0;
    out.posted = out.pushed = 0;
    in_[c].partial.clear();
    const bool other = c != core;
    out.ring = other ? &rings.ring(core, c) : nullptr;
    out.doorbell = other ? &rings.doorbell(c) : nullptr;
    in_[c].ring = other ? &rings.ring(c, core) : nullptr;
  }
}

void SharedMemoryTransport::detach() {
  for (Outbox& out : out_) out.ring = nullptr, out.doorbell = nullptr;
  for (Inbox& in : in_) in.ring = nullptr;
}

std::uint64_t SharedMemoryTransport::post(const Route& to, const WireHeader& header,
                                          std::span<const std::byte> payload) {
  assert(to.core != core_ && payload.size() == wire_payload_bytes(header));
  Outbox& out = out_[to.core];
  if (out.head == out.staged.size()) ++staged_outboxes_;
  out.posted += out.staged.append_packet(header, payload);
  if (out.staged.size() - out.head >= kAutoFlushSlots) push(out);
  return out.posted;
}

bool SharedMemoryTransport::publish(const Route& to) { return push(out_[to.core]); }

std::uint64_t SharedMemoryTransport::post_and_push(Outbox& out, const Route& to, const WireHeader& header,
                                                   std::span<const std::byte> payload) {
  const std::uint64_t seq = post(to, header, payload);
  push(out);
  return seq;
}

bool SharedMemoryTransport::push(Outbox& out) {
  const std::size_t waiting = out.staged.size() - out.head;
  if (waiting == 0) return false;
  const std::size_t taken = out.ring->push(out.staged.data() + out.head, waiting);
  if (taken < waiting) ++stats_.ring_full;
  if (taken == 0) return false;
  out.head += taken;
  out.pushed += taken;
  if (out.head == out.staged.size()) {
    out.staged.clear();
    out.head = 0;
    --staged_outboxes_;
  } else if (out.head >= kAutoFlushSlots && out.head >= out.staged.size() - out.head) {
    // A ring that keeps taking only part: move the rest to the front rather
    // than grow forever, once the part taken is at least the part left, so
    // that each slot is moved at most once on average. (Moving the rest after
    // every partial push made a flood's backlog of B slots cost B^2 / ring
    // capacity slot moves: 1-lev-dir at p = 300, L = 400 B spent most of its
    // time in memmove.)
    out.staged.drop_front(out.head);
    out.head = 0;
  }
  out.doorbell->ring();
  return true;
}

bool SharedMemoryTransport::flush() {
  if (staged_outboxes_ == 0) return false;  // the common round: nothing to walk
  bool moved = false;
  for (Outbox& out : out_) {
    if (out.ring) moved |= push(out);
  }
  return moved;
}

bool SharedMemoryTransport::poll(ArrivalSink& sink) {
  bool any = false;
  for (std::uint32_t c = 0; c < in_.size(); ++c) {
    Inbox& in = in_[c];
    if (!in.ring) continue;
    // Small packets, a cell each (or several to a cell), are read where they
    // lie: no copy into the batch, the header read once.
    if (in.partial.empty()) {
      if (const std::size_t n = deliver_in_place(*in.ring, sink, [](const WireHeader&) { return true; })) {
        any = true;
        stats_.slots_received += n;
      }
    }
    for (;;) {
      const std::size_t n = in.ring->pop(batch_.get(), kBatchSlots);
      if (n == 0) break;
      any = true;
      stats_.slots_received += n;
      parse(in, batch_.get(), n, sink);
      if (n < kBatchSlots) break;
    }
  }
  return any;
}

void SharedMemoryTransport::parse(Inbox& in, const Slot* slots, std::size_t count, ArrivalSink& sink) {
  std::size_t i = 0;
  // First the rest of a packet the previous batch cut: its header, then its payload.
  if (!in.partial.empty()) {
    const std::size_t header_left = kHeaderSlots - std::min(kHeaderSlots, in.partial.size());
    const std::size_t take_header = std::min(header_left, count);
    in.partial.append(slots, take_header);
    i = take_header;
    if (in.partial.size() < kHeaderSlots) return;
    const std::size_t need = slots_of(in.partial.data());
    const std::size_t take = std::min(need - in.partial.size(), count - i);
    in.partial.append(slots + i, take);
    i += take;
    if (in.partial.size() < need) return;
    deliver(in.partial.data(), sink);
    in.partial.clear();
  }
  while (i < count) {
    const std::size_t left = count - i;
    if (left >= kHeaderSlots) {
      const std::size_t need = slots_of(slots + i);
      if (need <= left) {
        deliver(slots + i, sink);
        i += need;
        continue;
      }
    }
    in.partial.append(slots + i, left);  // cut by the batch's end
    return;
  }
}

void SharedMemoryTransport::hand_over_untaken(SharedMemoryTransport& from, SharedMemoryTransport& to, Channel& ring,
                                              ArrivalSink& sink) {
  Outbox& out = from.out_[to.core_];
  if (out.posted == 0) return;  // nothing posted this job (the common pair): no ring to read
  Inbox& in = to.in_[from.core_];
  for (std::size_t n; (n = ring.pop(to.batch_.get(), kBatchSlots)) != 0;) to.parse(in, to.batch_.get(), n, sink);
  to.parse(in, out.staged.data() + out.head, out.staged.size() - out.head, sink);
  if (out.head != out.staged.size()) --from.staged_outboxes_;
  out.staged.clear();
  out.head = 0;
}

}  // namespace switchyard::detail
