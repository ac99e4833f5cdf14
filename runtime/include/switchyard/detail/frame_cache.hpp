#pragma once
// FrameCache: where coroutine frames (and PooledArray scratch) come from.
//
// Frames of runtime calls are born and die on the same worker thread thousands
// of times a second, and a job of n processes makes n main frames and, when
// they all meet in a collective, n frames of each level of that call at once.
// malloc is slow at both: every frame is an aligned allocation (memalign: a
// search, a split and a free of the remainder) and every new page of it a page
// fault, each far dearer than a frame's work on a virtual machine
// (docs/benchmarks.md, "Figures behind the runtime's comments"). So:
// - a frame is a block of whole 64-byte granules in one of 32 size classes
//   (frames up to 2 KiB), taken from a per-thread free list: a pointer pop;
// - a list that is empty takes a batch from the shared pool (blocks given
//   back by threads that ended or by lists over their cap), else carves
//   blocks from its thread's 2 MiB chunk with a pointer bump;
// - chunks are aligned to 2 MiB and advised as huge pages: one page fault
//   backs 2 MiB of frames where malloc took 512;
// - blocks are never returned to the operating system: a process that ran a
//   job of n processes keeps their frames for the next job (the pages are then
//   already backed), as the per-thread cache of freed frames always did. A
//   thread that ends hands its blocks and the rest of its chunk to the shared
//   pool, so a new Runtime's workers start from them (and its lanes, below,
//   whole to the next threads).
// Blocks are whole cache lines: the frames of processes on different cores are
// made by one thread (the one that calls Runtime::run), and a line shared by
// two of them would travel between the cores on every write. Nor do two
// cores' frames lie near each other: the hardware prefetchers fetch lines
// near the ones a core reads, and took them from the core that was writing
// them (docs/benchmarks.md, "Each core's processes on pages of its own"). So
// a thread's blocks are kept in lanes: what it makes while a LaneScope names a
// lane comes from slabs of whole pages that lane alone carves from the back
// of the thread's chunk, large enough that two lanes' blocks are far apart
// (slabs of a few pages still cost), and goes back to that lane's lists when
// freed. Runtime::run makes each core's processes and frames in a lane of
// their own; everything else is lane 0's. Frames over 2 KiB come from
// operator new, as do frames made while the thread is ending.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SWITCHYARD_FRAME_CACHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWITCHYARD_FRAME_CACHE_ASAN 1
#endif
#endif
#if defined(SWITCHYARD_FRAME_CACHE_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace switchyard::detail {

class FrameCache {
 public:
  static constexpr std::uint32_t kLanes = 64;  // lane 0 and one for each core, modulo kLanes - 1

  // While it lives, what the thread makes comes from `lane`'s pages (for
  // lane_of_core's lanes; 0 is the default).
  class LaneScope {
   public:
    explicit LaneScope(std::uint32_t lane) noexcept : previous_(std::exchange(lanes().current, lane % kLanes)) {}
    ~LaneScope() { lanes().current = previous_; }
    LaneScope(const LaneScope&) = delete;
    LaneScope& operator=(const LaneScope&) = delete;

   private:
    std::uint32_t previous_;
  };
  static std::uint32_t lane_of_core(std::uint32_t core) noexcept { return 1 + core % (kLanes - 1); }

  static void* allocate(std::size_t size) {
    const std::size_t cls = class_of(size);
    Lanes& l = lanes();
    State& st = l.current == 0 ? l.home : lane(l, l.current);
    if (cls >= kClasses || st.dead) [[unlikely]]
      return from_heap(size);
    Block* b = st.free[cls];
    if (b) [[likely]] {
      st.free[cls] = b->next;
      --st.count[cls];
    } else {
      b = refill(l, st, l.current, cls);
    }
    unpoison(b);
    return frame_of(b);
  }

  static void deallocate(void* frame) noexcept {
    Block* b = block_of(frame);
    if (b->size_class == kHeapBlock) [[unlikely]] {
      ::operator delete (b, std::align_val_t{kGranule});
      return;
    }
    poison(b);
    const std::size_t cls = b->size_class;
    Lanes& l = lanes();
    if (b->lane != 0 && !l.other[b->lane]) b->lane = 0;  // a lane this thread never made: its default's block now
    State& st = b->lane == 0 ? l.home : *l.other[b->lane];
    if (!st.dead && st.count[cls] < kMaxCached) [[likely]] {
      b->next = st.free[cls];
      if (!b->next) st.last[cls] = b;
      st.free[cls] = b;
      ++st.count[cls];
      return;
    }
    Shared& sh = shared();
    std::lock_guard lock(sh.mutex);
    sh.give(b);
  }

  // For objects that start on a cache line (alignas(kCacheLine), like Process): the
  // block's frame shifted to its second granule's start.
  static void* allocate_line_aligned(std::size_t size) {
    return static_cast<std::byte*>(allocate(size + kLineOffset)) + kLineOffset;
  }
  static void deallocate_line_aligned(void* object) noexcept {
    deallocate(static_cast<std::byte*>(object) - kLineOffset);
  }

  // Gives the calling thread its chunk now and faults its first page in (the
  // huge page, where the kernel grants one): a worker thread calls it before
  // it runs any job, so that the first frame of its first job does not pay
  // for the page (dear when the kernel compacts memory to find one), as a
  // barrier's first call otherwise would, on one core only.
  static void reserve_for_this_thread() {
    State& st = lanes().home;
    if (st.dead || st.bump != st.end) return;
    new_chunk(st);
    *static_cast<volatile char*>(static_cast<void*>(st.bump)) = 0;
  }

  // Bytes of chunks taken from the system so far, by every thread: what the
  // cache holds, in use or free. For tests and benchmarks of reuse.
  static std::size_t reserved_bytes() {
    Shared& sh = shared();
    std::lock_guard lock(sh.mutex);
    return sh.chunks.size() * kChunk;
  }

 private:
  static constexpr std::size_t kGranule = 64;
  static constexpr std::size_t kClasses = 32;  // frames up to 2 KiB are pooled
  static constexpr std::size_t kChunk = std::size_t{2} << 20;  // one huge page
  static constexpr std::size_t kBatch = 256;  // blocks moved from the shared pool at a time
  static constexpr std::uint32_t kHeapBlock = ~std::uint32_t{0};  // size_class of a block from operator new
  static constexpr std::size_t kSlab = 64 * 1024;  // whole pages: what a lane carves from its thread's chunk at a time
  // Blocks kept per class and thread: a list only holds what was once live at
  // the same time on its thread, so this bounds nothing in ordinary use (a
  // thread that frees what others made, past it, gives to the shared pool).
  static constexpr std::uint32_t kMaxCached = 1u << 20;

  struct alignas(16) Block {
    Block* next;
    std::uint32_t size_class;
    std::uint32_t lane;  // whose lists it goes back to
  };
  static constexpr std::size_t kLineOffset = kGranule - sizeof(Block);
  // One lane of a thread. Trivially destructible, so a frame freed during
  // thread exit still finds it.
  struct State {
    Block* free[kClasses];
    Block* last[kClasses];  // the tail of free[c] when it is not empty: a thread's list is handed over whole
    std::uint32_t count[kClasses];
    char* bump;  // the unused rest of this lane's memory: [bump, end) (lane 0: of the thread's chunk)
    char* end;
    bool dead;  // the thread is ending: its lists went to the shared pool
  };
  // A thread's lanes: its default, in its thread_local storage, and the others
  // made on first use (a few per thread that runs jobs), kept in `Shared`.
  struct Lanes {
    State home;  // lane 0
    State* other[kLanes];  // lanes 1 to kLanes - 1; other[0] unused
    std::uint32_t current;  // the lane that allocate() takes from (LaneScope)
  };
  // Process-wide, never destroyed (thread_local destructors of the main thread
  // run after nothing else would keep it alive); guarded by `mutex`.
  struct Shared {
    std::mutex mutex;
    Block* free[kClasses] = {};
    std::size_t count[kClasses] = {};
    std::vector<std::pair<char*, char*>> spare;  // the rests of the chunks of threads that ended
    std::vector<void*> chunks;  // every chunk, kept reachable (leak checkers)
    std::vector<std::unique_ptr<State>> made_lanes;  // every lane but the defaults, kept reachable (leak checkers)
    std::vector<State*> free_lanes;  // of threads that ended, with their free blocks and the rest of their slabs
    void give(Block* b) noexcept { give(b, b, 1); }
    // The list first..last of `n` blocks of one class.
    void give(Block* first, Block* last, std::size_t n) noexcept {
      last->next = std::exchange(free[first->size_class], first);
      count[first->size_class] += n;
    }
  };
  // A thread that ends gives its default lane's blocks and the rest of its
  // chunk to the shared pool. The other lanes serve the next threads as they are, their free blocks and
  // the rest of their slabs with them, so that threads that come and go (a
  // thread per job) keep as many lanes as run at once. What the ending thread
  // frees after this goes to its default's lists, which are dead: to the
  // shared pool.
  struct Drain {
    ~Drain() {
      Lanes& l = lanes();
      Shared& sh = shared();
      std::lock_guard lock(sh.mutex);
      if (l.home.bump != l.home.end) sh.spare.emplace_back(l.home.bump, l.home.end);
      State& home = l.home;
      for (std::size_t c = 0; c < kClasses; ++c) {
        if (home.free[c]) sh.give(std::exchange(home.free[c], nullptr), home.last[c], home.count[c]);
        home.count[c] = 0;
      }
      home.bump = home.end = nullptr;
      home.dead = true;
      for (State*& st : l.other) {
        if (st) sh.free_lanes.push_back(std::exchange(st, nullptr));
      }
    }
  };
  // Lane `i` (1 to kLanes - 1) of this thread, made on its first use (from
  // an ended thread's, where there is one); the default where the thread is ending.
  static State& lane(Lanes& l, std::uint32_t i) {
    if (l.other[i]) [[likely]]
      return *l.other[i];
    if (l.home.dead) return l.home;
    Shared& sh = shared();
    std::lock_guard lock(sh.mutex);
    if (sh.free_lanes.empty()) {
      sh.made_lanes.reserve(sh.made_lanes.size() + 1);  // before the lane: a throw here leaks nothing
      sh.made_lanes.push_back(std::make_unique<State>());
      sh.free_lanes.push_back(sh.made_lanes.back().get());
    }
    l.other[i] = sh.free_lanes.back();
    sh.free_lanes.pop_back();
    return *l.other[i];
  }
  static Lanes& lanes() noexcept {
    static thread_local Lanes l{};
    static thread_local Drain drain;
    (void)drain;
    return l;
  }
  static Shared& shared() noexcept {
    static Shared* const sh = new Shared;
    return *sh;
  }

  // Lane `i`, `st` (live: allocate() went to the heap for a dead one), out
  // of blocks of class `cls`. Lane 0 takes a batch from the shared pool where
  // it has blocks of the class, whose pages may be anyone's; the other lanes
  // carve pages of their own.
  [[gnu::noinline]] static Block* refill(Lanes& l, State& st, std::uint32_t i, std::size_t cls) {
    if (i == 0) {
      if (Block* head = take_batch(st, cls)) return head;
    }
    const std::size_t bytes = (cls + 1) * kGranule;
    if (static_cast<std::size_t>(st.end - st.bump) < bytes) {
      if (i == 0) {
        new_chunk(st);
      } else {
        new_slab(l.home, st);
      }
    }
    auto* b = reinterpret_cast<Block*>(std::exchange(st.bump, st.bump + bytes));
    b->size_class = static_cast<std::uint32_t>(cls);
    b->lane = i;
    return b;
  }

  // A batch of the shared pool's blocks of class `cls` for lane 0 `st`: the
  // first for the caller, the rest to the list. Null where it has none.
  static Block* take_batch(State& st, std::size_t cls) {
    Shared& sh = shared();
    std::lock_guard lock(sh.mutex);
    Block* head = sh.free[cls];
    if (!head) return nullptr;
    head->lane = 0;
    Block* last = head;
    std::size_t taken = 1;
    for (; taken < kBatch && last->next; ++taken) {
      last = last->next;
      last->lane = 0;
    }
    sh.free[cls] = std::exchange(last->next, nullptr);
    sh.count[cls] -= taken;
    st.free[cls] = head->next;
    st.last[cls] = last;
    st.count[cls] += static_cast<std::uint32_t>(taken - 1);
    return head;
  }

  // A slab of whole pages for `lane`, from the back of the thread's chunk
  // (lane 0, `home`, bumps from the front); what was left of the lane's last
  // slab, under the largest block, stays unused.
  static void new_slab(State& home, State& lane) {
    if (static_cast<std::size_t>(home.end - home.bump) < kSlab) new_chunk(home);
    home.end -= kSlab;
    lane.bump = home.end;
    lane.end = home.end + kSlab;
  }

  // The rest of a chunk too small for the block, or for a slab, is left
  // unused (under 64 KiB of 2 MiB).
  [[gnu::noinline]] static void new_chunk(State& st) {
    Shared& sh = shared();
    std::lock_guard lock(sh.mutex);
    if (!sh.spare.empty()) {
      std::tie(st.bump, st.end) = sh.spare.back();
      sh.spare.pop_back();
      if (static_cast<std::size_t>(st.end - st.bump) >= kSlab) return;
    }
    sh.chunks.reserve(sh.chunks.size() + 1);  // before the chunk: a throw here leaks nothing
    auto* chunk = static_cast<char*>(::operator new (kChunk, std::align_val_t{kChunk}));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    ::madvise(chunk, kChunk, MADV_HUGEPAGE);  // advice: without huge pages, 4 KiB ones
#endif
    sh.chunks.push_back(chunk);
    st.bump = chunk;
    st.end = chunk + kChunk;
  }

  [[gnu::noinline]] static void* from_heap(std::size_t size) {
    auto* b = static_cast<Block*>(::operator new (sizeof(Block) + size, std::align_val_t{kGranule}));
    b->size_class = kHeapBlock;
    return frame_of(b);
  }

  // Under AddressSanitizer a free block's frame is poisoned, so that a use of
  // a destroyed frame is reported as it would be with malloc.
  static void poison([[maybe_unused]] Block* b) noexcept {
#if defined(SWITCHYARD_FRAME_CACHE_ASAN)
    ASAN_POISON_MEMORY_REGION(frame_of(b), (b->size_class + 1) * kGranule - sizeof(Block));
#endif
  }
  static void unpoison([[maybe_unused]] Block* b) noexcept {
#if defined(SWITCHYARD_FRAME_CACHE_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(frame_of(b), (b->size_class + 1) * kGranule - sizeof(Block));
#endif
  }

  static std::size_t class_of(std::size_t size) noexcept {
    return (size + sizeof(Block) + kGranule - 1) / kGranule - 1;
  }
  static void* frame_of(Block* b) noexcept { return b + 1; }
  static Block* block_of(void* frame) noexcept { return static_cast<Block*>(frame) - 1; }
};

}  // namespace switchyard::detail
