#pragma once
// Per-member lines of a communicator that each member writes on its own
// core (a Group's MemberState, a compiled exchange's slots and run counts),
// laid out so that no page holds lines of two cores' members.
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
#include <map>
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

// A job's pages of member lines: each of this node's cores has pages of its
// own, which only lines of members on that core fill; the members of other
// nodes (whose lines are never written here) share one more set. Every
// array of member lines of the job's communicators takes its lines from
// them, and gives them back when its communicator goes, for the next array
// of as many lines on that core: a job that makes and frees communicators
// by the thousand reuses the same lines, and a communicator costs its
// members' lines, not a page per core.
class MemberPages {
 public:
  static constexpr std::size_t kPageBytes = 4096;
  static constexpr std::size_t kChunkBytes = 4 * kPageBytes;  // taken at a time from the heap, per core

  explicit MemberPages(std::size_t cores) : cores_(cores + 1) {}
  ~MemberPages() {
    for (void* chunk : chunks_) ::operator delete (chunk, std::align_val_t{kPageBytes});
  }
  MemberPages(const MemberPages&) = delete;
  MemberPages& operator=(const MemberPages&) = delete;

  // `lines` consecutive lines on the pages of core `core` (here: one of this
  // node's; otherwise the other nodes'), and back.
  void* take(std::uint32_t core, bool here, std::size_t lines);
  void give_back(std::uint32_t core, bool here, void* first, std::size_t lines);

 private:
  struct Room {
    std::byte* next = nullptr;
    std::size_t bytes_left = 0;
    std::map<std::size_t, std::vector<void*>> given_back;  // by number of lines
  };
  Room& room(std::uint32_t core, bool here) noexcept { return cores_[here ? core : cores_.size() - 1]; }

  WorkerMutex mutex_;  // arrays are made and freed by whichever member asks, on any core
  std::vector<Room> cores_;  // by core of the job, and the other nodes' last
  std::vector<void*> chunks_;  // whole pages, freed with the job
};

// One T per member of a communicator, each core's on its pages (MemberPages).
template <class T>
class MemberLines {
  static_assert(sizeof(T) == kCacheLine && alignof(T) == kCacheLine, "one line per member");

 public:
  // `pages` must outlive the array (the job's registry holds both).
  MemberLines(const MemberCores& cores, MemberPages& pages)
      : pages_(pages), at_(std::make_unique<T*[]>(cores.core.size())), members_(static_cast<Rank>(cores.core.size())) {
    std::vector<T*> first(cores.count.size(), nullptr);
    for (std::uint32_t c = 0; c < cores.count.size(); ++c) {
      if (cores.count[c] == 0) continue;
      first[c] = static_cast<T*>(pages.take(c, cores.here[c], cores.count[c]));
      blocks_.push_back(Block{c, cores.here[c], first[c], cores.count[c]});
    }
    for (Rank r = 0; r < members_; ++r) at_[r] = ::new (static_cast<void*>(first[cores.core[r]] + cores.index[r])) T();
  }
  ~MemberLines() {
    for (Rank r = 0; r < members_; ++r) at_[r]->~T();
    for (const Block& b : blocks_) pages_.give_back(b.core, b.here, b.first, b.lines);
  }
  MemberLines(const MemberLines&) = delete;
  MemberLines& operator=(const MemberLines&) = delete;

  T& operator[](Rank comm_rank) const noexcept { return *at_[comm_rank]; }

 private:
  struct Block {
    std::uint32_t core;
    bool here;
    T* first;
    Rank lines;
  };
  MemberPages& pages_;
  std::unique_ptr<T*[]> at_;  // by comm rank
  Rank members_;
  std::vector<Block> blocks_;  // a core's lines each, given back at the end
};

}  // namespace switchyard::detail
