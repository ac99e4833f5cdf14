#pragma once
// The ring between two cores: a bounded lock-free single-producer /
// single-consumer queue of 16-byte slots, one per ordered pair of cores, as in
// Seastar. Only the worker thread of the source core pushes and only the
// worker thread of the destination core pops, so no slot is contended and no
// compare-and-swap is needed.
//
// Why not Boost.Lockfree's spsc_queue (the ring before this one): a message
// through it crosses four cache lines in series. The producer loads the
// consumer's index (written by the consumer's last pop: a miss), writes the
// slots (a line the consumer read last: a miss), stores its write index (a
// line the consumer spins on); the consumer then misses on that index and on
// the slots. bench_latency's BM_RingOneWay_CrossCore measured 4-5 cache-line
// transfers per one way through it (docs/benchmarks.md, "The ring of one-line
// cells").
//
// Here the ring is an array of cells, each one cache line: a sequence word,
// a slot count and up to kSlotsPerCell slots (a header and 16 bytes of
// payload: a small message is one cell). The producer fills a cell and then
// stores its sequence word; the consumer spins on the sequence word of the
// cell it expects next, so the line it spins on is the line that carries the
// data: one line crosses per small message. The producer learns free room
// from the consumer's published position, kept as last seen (as
// rigtorp/SPSCQueue does) and reloaded only when that view says the ring is
// full; the consumer's private state and its published position live on
// their own lines.
//
// A push fills whole cells but never appends to a cell pushed before (the
// consumer may be reading it), so a ring of C cells holds between C and
// C * kSlotsPerCell slots. A sender that finds the ring full keeps its
// packets staged and pushes them as room appears; it never drops or
// overwrites.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "copy_bytes.hpp"
#include "switchyard/assert.hpp"
#include "switchyard/transport/wire.hpp"

namespace switchyard::detail {

class alignas(kCacheLine) Channel {
 public:
  static constexpr std::size_t kSlotsPerCell = (kCacheLine - 2 * sizeof(std::uint64_t)) / sizeof(Slot);

  explicit Channel(std::size_t capacity_cells)
      : producer_{std::make_unique<Cell[]>(capacity_cells), capacity_cells},
        consumer_{producer_.cells.get(), capacity_cells} {}

  // Producer side: pushes as many of `count` slots as fit, in order, a cell
  // at a time; returns how many.
  std::size_t push(const Slot* slots, std::size_t count) noexcept {
    Producer& p = producer_;
    std::size_t pushed = 0;
    while (pushed < count) {
      if (p.position - p.popped_seen == p.capacity) {
        touch_consumer_index();
        if (p.position - p.popped_seen == p.capacity) break;
      }
      // Never a cell the consumer has not popped; the cell follows the position.
      SWITCHYARD_ASSERT(p.position - p.popped_seen < p.capacity);
      SWITCHYARD_ASSERT(p.cell == p.position % p.capacity);
      Cell& cell = p.cells[p.cell];
      const std::size_t n = std::min(kSlotsPerCell, count - pushed);
      std::memcpy(cell.slots, slots + pushed, n * sizeof(Slot));
      cell.count = n;
      // Release: pairs with the acquire load of this cell's sequence in
      // ready(); a consumer that sees position + 1 sees the slots and count
      // written above. Its own cell's line: the store's line is the data's.
      cell.sequence.store(++p.position, std::memory_order_release);
      if (++p.cell == p.capacity) p.cell = 0;
      pushed += n;
    }
    return pushed;
  }
  // Producer side: one packet (header, then payload rounded up to whole
  // slots) written straight into its cells, whole or not at all: what a
  // running process posts when nothing of its core waits for this ring, with
  // no trip through a staging buffer. Whether it fitted.
  bool push_packet(const WireHeader& header, std::span<const std::byte> payload) noexcept {
    Producer& p = producer_;
    const std::size_t slots = packet_slots(payload.size());
    const std::size_t cells = (slots + kSlotsPerCell - 1) / kSlotsPerCell;
    if (p.position + cells - p.popped_seen > p.capacity) {
      touch_consumer_index();
      if (p.position + cells - p.popped_seen > p.capacity) return false;
    }
    SWITCHYARD_ASSERT(p.cell == p.position % p.capacity);
    const std::byte* from = payload.data();
    std::size_t left = payload.size();
    for (std::size_t i = 0; i < cells; ++i) {
      Cell& cell = p.cells[p.cell];
      auto* to = reinterpret_cast<std::byte*>(cell.slots);
      std::size_t room = sizeof cell.slots;
      if (i == 0) {
        std::memcpy(to, &header, sizeof header);
        to += sizeof header;
        room -= sizeof header;
      }
      const std::size_t n = std::min(room, left);
      copy_bytes(to, from, n);  // the last slot's padding is left as it was: nobody reads it
      from += n;
      left -= n;
      cell.count = std::min(kSlotsPerCell, slots - i * kSlotsPerCell);
      // Release: as in push().
      cell.sequence.store(++p.position, std::memory_order_release);
      if (++p.cell == p.capacity) p.cell = 0;
    }
    return true;
  }

  // Consumer side: pops up to `max` slots, in order; returns how many.
  std::size_t pop(Slot* out, std::size_t max) noexcept {
    Consumer& c = consumer_;
    // Relaxed: only this thread writes popped.
    const std::uint64_t start = c.popped.load(std::memory_order_relaxed);
    std::uint64_t position = start;
    std::size_t taken = 0;
    while (taken < max && ready(position)) {
      const Cell& cell = c.cells[c.cell];
      // A filled cell holds 1 to kSlotsPerCell slots, and the consumer is
      // inside it; the cell follows the position.
      SWITCHYARD_ASSERT(cell.count >= 1 && cell.count <= kSlotsPerCell && c.offset < cell.count);
      SWITCHYARD_ASSERT(c.cell == position % c.capacity);
      const std::size_t n = std::min<std::size_t>(cell.count - c.offset, max - taken);
      std::memcpy(out + taken, cell.slots + c.offset, n * sizeof(Slot));
      taken += n;
      c.offset += n;
      if (c.offset < cell.count) break;  // `max` cut the cell: the rest comes next time
      c.offset = 0;
      ++position;
      if (++c.cell == c.capacity) c.cell = 0;
    }
    // Release: pairs with the acquire load in touch_consumer_index(); the
    // cells counted are read before the producer may refill them.
    if (position != start) c.popped.store(position, std::memory_order_release);
    return taken;
  }
  // Consumer side: whether a slot is there to pop.
  bool has_slots() const noexcept { return ready(consumer_.popped.load(std::memory_order_relaxed)); }
  // Whether every cell pushed was popped whole: with neither end running (a
  // job over, its workers gone), the ring can serve the next job as it is.
  bool empty() const noexcept {
    // Relaxed: the ends have stopped, and their last stores happened before this call.
    return consumer_.popped.load(std::memory_order_relaxed) == producer_.position && consumer_.offset == 0;
  }

  // Consumer side, reading in place (no copy out of the ring): the slots of
  // the next filled cell not read yet, else an empty span. They stay the
  // consumer's, unchanged, until take_front().
  std::span<const Slot> front() const noexcept {
    const Consumer& c = consumer_;
    if (!ready(c.popped.load(std::memory_order_relaxed))) return {};
    const Cell& cell = c.cells[c.cell];
    // A filled cell holds 1 to kSlotsPerCell slots, and the consumer is inside it.
    SWITCHYARD_ASSERT(cell.count >= 1 && cell.count <= kSlotsPerCell && c.offset < cell.count);
    return {cell.slots + c.offset, static_cast<std::size_t>(cell.count - c.offset)};
  }
  // Consumer side: the first `slots` of front() are read; all of them: the cell goes back to the producer.
  void take_front(std::size_t slots) noexcept {
    Consumer& c = consumer_;
    const std::size_t count = c.cells[c.cell].count;
    SWITCHYARD_ASSERT(c.offset + slots <= count);
    c.offset += slots;
    if (c.offset < count) return;  // the rest is front()'s or pop()'s, later
    c.offset = 0;
    if (++c.cell == c.capacity) c.cell = 0;
    // Release: as in pop(); the cell was read before the producer may refill it.
    c.popped.store(c.popped.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

 private:
  struct alignas(kCacheLine) Cell {
    std::atomic<std::uint64_t> sequence{0};  // the producer's position after filling it: 1, 2, ...
    std::uint64_t count = 0;  // slots it holds: written before sequence
    Slot slots[kSlotsPerCell];
  };
  static_assert(sizeof(Cell) == kCacheLine, "a cell is one cache line: its sequence word travels with its slots");

  struct alignas(kCacheLine) Producer {  // the producer's alone
    std::unique_ptr<Cell[]> cells;
    std::size_t capacity = 0;
    std::size_t cell = 0;  // where the next push writes
    std::uint64_t position = 0;  // cells pushed so far
    std::uint64_t popped_seen = 0;  // the consumer's `popped` as last loaded
  };
  struct alignas(kCacheLine) Consumer {  // the consumer's, and `popped`, which the producer reads when full
    const Cell* cells = nullptr;
    std::size_t capacity = 0;
    std::size_t cell = 0;  // the cell the next pop reads
    std::size_t offset = 0;  // slots of that cell already popped
    std::atomic<std::uint64_t> popped{0};  // cells popped so far
  };

  // Producer side: reloads the consumer's position, only when the view kept
  // says the ring is full. Never ahead of need: the consumer stores that
  // position on every pop, so a load of it is a miss on the consumer's line,
  // one more transfer between cores; reloading it after every answer taken
  // put that transfer on every ping-pong's path.
  void touch_consumer_index() noexcept {
    // Acquire: pairs with the release store of popped in pop(); the consumer
    // has finished reading the cells it counts before this side refills them.
    const std::uint64_t seen = consumer_.popped.load(std::memory_order_acquire);
    // The consumer's position only grows, and never passes what was pushed.
    SWITCHYARD_ASSERT(seen >= producer_.popped_seen && seen <= producer_.position);
    producer_.popped_seen = seen;
  }
  // Consumer side: whether the cell at `position` is filled.
  bool ready(std::uint64_t position) const noexcept {
    // Acquire: pairs with the release store in push(); the cell's slots and
    // count are visible once its sequence reads position + 1 (a stale value
    // from the previous lap is position + 1 - capacity).
    return consumer_.cells[consumer_.cell].sequence.load(std::memory_order_acquire) == position + 1;
  }

  Producer producer_;
  Consumer consumer_;
};
static_assert(kOwnsCacheLines<Channel>, "the producer's and the consumer's state share no line with a neighbour");

}  // namespace switchyard::detail
