#pragma once
// Per-member lines of a communicator that each member writes on its own
// core (a Group's MemberState, a compiled exchange's slots and run counts),
// laid out so that no page holds two cores' members.
//
// Why pages and not only lines: each member's line is its own, so no line is
// shared, but the hardware prefetchers fetch lines near those a core reads
// and take them from the core that is writing them. In rank order, round
// robin puts the cores' lines side by side; each core's members in a run of
// lines, the runs next to each other, still lose where a core has few
// members. Pages of each core's own measured faster for few members and for
// many (docs/benchmarks.md, stop 70).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "switchyard/cache_line.hpp"
#include "switchyard/message.hpp"
#include "worker_mutex.hpp"

namespace switchyard::detail {

// Which core each member of a communicator is on, and where among its core's members.
struct MemberCores {
  std::vector<std::uint32_t> core;  // by comm rank: its core of the job (RouteTable::global_core)
  std::vector<std::uint32_t> index;  // by comm rank: its place among its core's members, in comm-rank order
  std::vector<Rank> count;  // by core of the job: the members on it
  std::vector<bool> here;  // by core of the job: one of this node's
};

// A communicator's pages of member lines: each of this node's cores has
// pages of its own, which only lines of its members fill; the members of
// other nodes (whose lines are never written here) share one more set.
// Every array of member lines of the communicator takes its lines from
// them, so a core's pages hold the lines of all the arrays, and a
// communicator takes a page or so per core, not per array.
class MemberPages {
 public:
  static constexpr std::size_t kPageBytes = 4096;

  explicit MemberPages(std::size_t cores) : cores_(cores + 1) {}
  ~MemberPages() {
    for (void* chunk : chunks_) ::operator delete (chunk, std::align_val_t{kPageBytes});
  }
  MemberPages(const MemberPages&) = delete;
  MemberPages& operator=(const MemberPages&) = delete;

  // Room for `lines` consecutive lines on the pages of core `core` (here: one
  // of this node's; otherwise the other nodes').
  void* take(std::uint32_t core, bool here, std::size_t lines);

 private:
  struct Room {
    std::byte* next = nullptr;
    std::size_t bytes_left = 0;
  };
  WorkerMutex mutex_;  // arrays are made by whichever member asks first, on any core
  std::vector<Room> cores_;  // by core, and the other nodes' last
  std::vector<void*> chunks_;  // whole pages, freed with the communicator
};

// One T per member of a communicator, each core's on its pages (MemberPages).
template <class T>
class MemberLines {
  static_assert(sizeof(T) == kCacheLine && alignof(T) == kCacheLine, "one line per member");

 public:
  MemberLines(const MemberCores& cores, MemberPages& pages) : at_(std::make_unique<T*[]>(cores.core.size())) {
    std::vector<T*> first(cores.count.size(), nullptr);
    for (std::uint32_t c = 0; c < cores.count.size(); ++c) {
      if (cores.count[c] > 0) first[c] = static_cast<T*>(pages.take(c, cores.here[c], cores.count[c]));
    }
    for (Rank r = 0; r < cores.core.size(); ++r) {
      at_[r] = ::new (static_cast<void*>(first[cores.core[r]] + cores.index[r])) T();
    }
    members_ = static_cast<Rank>(cores.core.size());
  }
  ~MemberLines() {
    for (Rank r = 0; r < members_; ++r) at_[r]->~T();
  }
  MemberLines(const MemberLines&) = delete;
  MemberLines& operator=(const MemberLines&) = delete;

  T& operator[](Rank comm_rank) const noexcept { return *at_[comm_rank]; }

 private:
  std::unique_ptr<T*[]> at_;  // by comm rank
  Rank members_ = 0;
};

}  // namespace switchyard::detail
