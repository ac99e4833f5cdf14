#pragma once
// The state of a compiled exchange on one communicator of a job
// (compiled_exchange.hpp), split by who writes it: a member's slot by its process,
// a core's progress and program by that core's thread, the node's staging by
// its leader and, once, by whichever core lays it out first.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "copy_bytes.hpp"
#include "group.hpp"
#include "job.hpp"
#include "line_vector.hpp"
#include "node_staging_pool.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/compiled_exchange.hpp"
#include "switchyard/process.hpp"
#include "switchyard/trace.hpp"
#include "watch_awaiter.hpp"
#include "worker.hpp"
#include "worker_mutex.hpp"

namespace switchyard::detail {

// The most bytes copy_small_bytes copies.
constexpr std::uint64_t kSmallStepBytes = 128;

// copy_bytes for n of at most kSmallStepBytes (a halo's few doubles): above
// 32 bytes, 16-byte moves from both ends, which overlap in the middle. For the loop of
// a program of such pieces alone (CompiledCoreProgram::small), where they cost
// half a call of memcpy; inlined in every loop, they would make copy_bytes
// too large to inline in the others.
[[gnu::always_inline]] inline void copy_small_bytes(std::byte* to, const std::byte* from, std::uint64_t n) noexcept {
  const auto moves = [&](std::uint64_t each_end) {
    for (std::uint64_t at = 0; at < each_end; at += 16) {
      std::memcpy(to + at, from + at, 16);
      std::memcpy(to + n - each_end + at, from + n - each_end + at, 16);
    }
  };
  if (n <= 32) {
    copy_bytes(to, from, n);
  } else if (n > 64) {
    moves(64);
  } else {
    moves(32);
  }
}

// Where every one of `steps` is a single piece and all are of one size, 8
// or 16 bytes (an exchange's messages of one size), that size, else 0: the
// pieces are then copied with their size fixed (a staged pair's, a small
// program's).
inline std::uint64_t one_piece_size(std::span<const CopyStep> steps) noexcept {
  if (steps.empty()) return 0;
  const std::uint64_t first = steps.front().bytes;
  if (first != 8 && first != 16) return 0;
  for (const CopyStep& st : steps) {
    if (st.count != 1 || st.bytes != first) return 0;
  }
  return first;
}

// Whether n bytes at a and b are equal. Up to 64 bytes as copy_bytes moves
// them: fixed-size loads, which the compiler inlines, where a call of memcmp
// with a variable size costs more than a small compare itself (a halo's
// pieces of up to 8 doubles).
inline bool same_bytes(const std::byte* a, const std::byte* b, std::uint64_t n) noexcept {
  const auto word = [](const std::byte* at) {
    std::uint64_t w;
    std::memcpy(&w, at, sizeof w);
    return w;
  };
  if (n > 64) return std::memcmp(a, b, n) == 0;
  if (n > 32) return same_bytes(a, b, 32) && same_bytes(a + n - 32, b + n - 32, 32);  // overlapping halves
  if (n >= 16) {  // four 8-byte compares, overlapping unless n is 32
    const std::byte *a2 = a + n - 16, *b2 = b + n - 16;
    return ((word(a) ^ word(b)) | (word(a + 8) ^ word(b + 8)) | (word(a2) ^ word(b2)) |
            (word(a2 + 8) ^ word(b2 + 8))) == 0;
  }
  if (n >= 8) return ((word(a) ^ word(b)) | (word(a + n - 8) ^ word(b + n - 8))) == 0;
  return std::memcmp(a, b, n) == 0;
}

// `count` pieces of `bytes` each, the k-th from `from + k * from_stride` to
// `to + k * to_stride`: a strided step, or a staged piece packed into or
// unpacked from its contiguous place in a staging buffer. Pieces of one or
// two doubles (a redistribution's runs) are one move each: copy_bytes would
// make two overlapping ones, doubling the stores of a copy that is nothing
// but stores. Those go four to a turn of the loop (a grid's column face is
// tens of single doubles): the loop's own adds and branch would otherwise
// cost as much as the moves.
inline void copy_strided(std::byte* to, std::uint64_t to_stride, const std::byte* from, std::uint64_t from_stride,
                         std::uint32_t count, std::uint64_t bytes) noexcept {
  auto pieces = [&]<std::size_t Bytes>(std::integral_constant<std::size_t, Bytes>) {
    std::uint32_t k = 0;
    for (; k + 4 <= count; k += 4, to += 4 * to_stride, from += 4 * from_stride) {
      std::memcpy(to, from, Bytes);
      std::memcpy(to + to_stride, from + from_stride, Bytes);
      std::memcpy(to + 2 * to_stride, from + 2 * from_stride, Bytes);
      std::memcpy(to + 3 * to_stride, from + 3 * from_stride, Bytes);
    }
    for (; k < count; ++k, to += to_stride, from += from_stride) std::memcpy(to, from, Bytes);
  };
  if (bytes == 16) {
    pieces(std::integral_constant<std::size_t, 16>{});
  } else if (bytes == 8) {
    pieces(std::integral_constant<std::size_t, 8>{});
  } else {
    for (std::uint32_t k = 0; k < count; ++k, to += to_stride, from += from_stride) copy_bytes(to, from, bytes);
  }
}

// The order in which both ends of staged pieces lay them out in a buffer,
// each from the same pieces: by sender, receiver, then where they start.
inline bool staging_order(const CopyStep& a, const CopyStep& b) noexcept {
  return std::tie(a.src, a.dst, a.src_region, a.src_offset, a.dst_region, a.dst_offset) <
         std::tie(b.src, b.dst, b.src_region, b.src_offset, b.dst_region, b.dst_offset);
}

// A member's publication. Written by the member's process (on its core's
// thread) before its core's copier stores `published`; read by other cores
// after they acquire that store. A run stores only what changed since the
// member's last run: a plan run again on the same buffers leaves the line
// shared in the caches of the cores that read it, instead of taking it back
// and making each of them miss on it once per run.
struct alignas(kCacheLine) CompiledMemberSlot {
  const std::span<const std::byte>* send = nullptr;
  const std::span<std::byte>* recv = nullptr;
  const CompiledMember* part = nullptr;

  void publish(const std::span<const std::byte>* s, const std::span<std::byte>* r, const CompiledMember* p) noexcept {
    if (send != s) send = s;
    if (recv != r) recv = r;
    if (part != p) part = p;
  }
};
static_assert(kOwnsCacheLines<CompiledMemberSlot>, "each member writes its slot from its own core");

// What a member's run counts, on its own core: kept off its slot, which other
// cores read every run.
struct alignas(kCacheLine) CompiledMemberRun {
  std::uint64_t runs = 0;  // this member's runs in the job: the run number it is in
  std::uint64_t inquiries = 0;  // receiver_locks: test-and-sets for its messages in this run (its core's copier counts)
  // Its last run's region lists, sends then receives, as the bytes of their
  // spans, or the number of the binding it ran (CompiledBinding; 0: none): a run
  // whose lists hold the same spans, or of the same binding, leaves its
  // core's resolved copies (CompiledCoreProgram::resolved) good, and is found so
  // by one memcmp, or one compare.
  std::vector<std::byte> last_regions;
  std::uint64_t binding = 0;
  CompiledProgramCache* cache = nullptr;  // its options' `programs`, read by its core's copier

  // Whether this run's regions (of the binding `bound`, 0: none) differ from the last run's kept ones.
  bool regions_differ(const CompiledRegions& r, std::uint64_t bound) const {
    if (bound != 0 || binding != 0) return binding != bound;
    const std::span<const std::byte> send = std::as_bytes(r.send), recv = std::as_bytes(r.recv);
    return last_regions.size() != send.size() + recv.size() ||
           (!send.empty() && std::memcmp(last_regions.data(), send.data(), send.size()) != 0) ||
           (!recv.empty() && std::memcmp(last_regions.data() + send.size(), recv.data(), recv.size()) != 0);
  }
  // Keeps them for the next run's comparison. Allocates only when the number
  // of regions changes.
  void keep_regions(const CompiledRegions& r, std::uint64_t bound) {
    binding = bound;
    if (bound != 0) {
      last_regions.clear();
      return;
    }
    const std::span<const std::byte> send = std::as_bytes(r.send), recv = std::as_bytes(r.recv);
    last_regions.resize(send.size() + recv.size());
    if (!send.empty()) std::memcpy(last_regions.data(), send.data(), send.size());
    if (!recv.empty()) std::memcpy(last_regions.data() + send.size(), recv.data(), recv.size());
  }
};
static_assert(kOwnsCacheLines<CompiledMemberRun>, "written on its member's core alone");
static_assert(sizeof(CompiledMemberRun) == kCacheLine, "one line: a run's arrival touches one line of its member's");

// Written by its core's copier alone, read by every core of the node.
struct alignas(kCacheLine) CompiledCoreProgress {
  // The last run whose regions this core's participants have all published.
  // Release by the copier after its members' slots are written; acquire by
  // the cores that copy out of or into them (Worker::watch or a direct load).
  std::atomic<std::uint64_t> published{0};
  // strict_phases: phases this core has copied over the job's runs,
  // (run - 1) * phases + phase + 1; the same release/acquire pairing.
  std::atomic<std::uint64_t> phases_done{0};
  // The last run whose pieces for other nodes this core has packed. Release
  // after the packing; acquire by the node's leader before it sends them.
  std::atomic<std::uint64_t> packed{0};
  // How many of the job's runs so far found a participant of this core with
  // regions at other addresses than in its last run. Relaxed: stored before
  // `published` (release) and read after acquiring it, which orders it; it
  // changes only between the runs of the cores that read it.
  std::atomic<std::uint64_t> regions_moved{0};
  // The last run whose steps this core has all copied (its pieces from other
  // nodes unpacked too). Release after the copies; acquire by the cores whose
  // members' regions they read or wrote, before those members' runs
  // complete, and by the node's leader before it lets the next run's pieces
  // from other nodes land in the staging buffers. On a line of its own: the
  // other cores poll `published` every run, and where none reads `copied`
  // (staged pairs learn it from `published`: staging_busy) its store then
  // finds its line still in this core's cache, rather than waiting for it
  // (with every store after it) as a store to the polled line does.
  alignas(kCacheLine) std::atomic<std::uint64_t> copied{0};
};
static_assert(kOwnsCacheLines<CompiledCoreProgress>, "a core's progress words share no line with another core's");

// Consecutive steps of a core's program with one core at their other end (and,
// in the phase orders, one phase).
struct CopyBlock {
  std::uint32_t peer_core = 0;
  std::uint32_t phase = 0;
  std::size_t begin = 0, end = 0;
};

// A piece of a message between nodes, at this node's end: its member's region
// and offset, and its place in the staging buffer of the other node.
// A strided step's pieces lie one after the other in the buffer.
struct StagedPiece {
  Rank member = 0;
  std::uint32_t region = 0;
  std::uint64_t member_offset = 0;
  std::uint32_t buffer = 0;  // index of the other node in NodeStaging::nodes
  std::uint32_t count = 1;
  std::uint64_t buffer_offset = 0;
  std::uint64_t bytes = 0;  // of each piece
  std::uint64_t member_stride = 0;
};

// A step's end in `sender`'s or the receiver's member, at `at` in buffer
// `buffer`: how both ends of a staging buffer (between nodes, or a staged
// pair of cores) note its pieces.
inline StagedPiece staged_end(const CopyStep& st, bool sender, std::uint32_t buffer, std::uint64_t at) noexcept {
  return sender ? StagedPiece{st.src, st.src_region, st.src_offset, buffer, st.count, at, st.bytes, st.src_stride}
                : StagedPiece{st.dst, st.dst_region, st.dst_offset, buffer, st.count, at, st.bytes, st.dst_stride};
}

// The pieces of one ordered pair of cores on one node that go through a
// staging area of the sending core's instead of straight between the
// members (CompiledEngine::stage_pairs): at one end of the pair, its
// members' ends of the pieces, laid out as the other end lays them out.
// The sender's core packs its members' pieces when it publishes, and its
// run then waits for no reader: the receiver's core unpacks them from the
// area once it has seen that publication. The area has two halves, used by
// runs of odd and even numbers: the sender writes a half again two runs
// later, once the receiver's core has said that it unpacked it (`copied`, or
// its publication of the run after: staging_busy). A pair fills cache lines
// of its own, as the area's halves do: it is read on every run, and a line it
// shared with data another core writes would be taken from this core's cache
// each time.
struct alignas(kCacheLine) StagedPair {
  // A line of the staging area: the halves start on lines of their own, so
  // that the other core reading one half never shares a line with the half
  // being packed, nor with whatever the heap put beside the area.
  struct alignas(kCacheLine) Line {
    std::byte bytes[kCacheLine];
  };
  // Where run `run`'s half starts in an area: `bytes` rounded up to whole lines.
  std::uint64_t half_offset(std::uint64_t run) const noexcept {
    return (run & 1) * ((bytes + kCacheLine - 1) / kCacheLine * kCacheLine);
  }
  // The sender's end: run `run`'s half of its area.
  std::byte* half(std::uint64_t run) const noexcept {
    return reinterpret_cast<std::byte*>(area.get()) + half_offset(run);
  }

  std::uint32_t core = 0;  // the core at the other end
  std::uint64_t bytes = 0;  // one run's pieces, in one half of the area
  std::vector<StagedPiece> pieces;  // in the pair's layout; buffer_offset into a half
  std::unique_ptr<Line[]> area;  // the sender's end: both halves
  // Per piece, its member's address as this core last found it, good while
  // this core's `regions_moved` is still `resolved_with` (the pieces' members
  // are this core's own).
  std::vector<std::byte*> member_at;
  // Where every piece is single and of one size (an exchange's messages of
  // 8 or 16 bytes), that size: piece i is then at i times it in a half, and a
  // run reads nothing of the pieces but member_at. Otherwise 0.
  std::uint64_t piece_bytes = 0;
  std::uint64_t resolved_with = ~std::uint64_t{0};
  // The receiver's end: the sender's area, found in this job's first run.
  // The sender's end: the last run the receiver's core was seen to have copied.
  const std::byte* from_area = nullptr;
  std::uint64_t copied_seen = 0;
  // The sender's end: the first run whose packing compares each piece with
  // what its half held two runs before (pack_staged); 0: every run.
  std::uint64_t compare_from = 0;
};
static_assert(kOwnsCacheLines<StagedPair>, "read on every run: no line shared with another core's data");

// How this node's pieces to and from the other nodes travel: one message each
// way per node pair and run, which the node's leader (its lowest participant)
// sends and receives. Both ends lay a buffer out alike, with no word between
// them: its pieces in staging_order. Laid out once per job by
// the first core to need it (under CompiledExchangeState::staging_mutex), read-only
// after, but for the buffers, which come from the Runtime's pool and go back
// to it with the exchange (at the end of the job).
struct NodeStaging {
  explicit NodeStaging(NodeStagingPool& from) : pool(&from) {}
  NodeStaging(const NodeStaging&) = delete;
  NodeStaging& operator=(const NodeStaging&) = delete;
  ~NodeStaging() {
    for (auto* buffers : {&out, &in}) {
      for (StagingBuffer& b : *buffers) pool->give_back(std::move(b));
    }
  }

  NodeStagingPool* pool;
  std::vector<std::uint32_t> nodes;  // the other nodes this node exchanges pieces with
  std::vector<Rank> leaders;  // each one's leader
  Rank leader = 0;  // this node's
  std::vector<StagingBuffer> out, in;  // per other node
  std::vector<std::vector<StagedPiece>> pack, unpack;  // per worker: its members' pieces
  std::vector<std::uint32_t> staging_cores;  // workers with pieces to pack or unpack, and the leader's
};

// A core's share of the exchange: touched by that core's thread alone (its
// `arrived` and `done` every run), on lines of its own.
struct alignas(kCacheLine) CompiledCoreProgram {
  std::uint32_t participants = 0, arrived = 0;
  std::uint64_t done = 0;  // the last run this core has completed: its participants may return
  // Whether this core's run is complete, by the run's parity: set by its
  // copier with `done`, cleared by the first participant to arrive at the run
  // two later. The flag its parked participants wait on
  // (Process::suspend_until): nothing else wakes them. The copier queues them
  // to be checked when their turn comes (Worker::notify_each), after it may
  // have arrived at the next run itself; none arrives at the run after that
  // before each of them has returned from this one, so the flag holds until
  // they are checked.
  bool finished[2] = {false, false};
  bool compiled = false;
  bool crosses_nodes = false;  // some participant of the node has a step with another node
  LineVector<Process*> members;  // the participants on this core
  // This run's participants in the order they arrived (arrive() fills it, the
  // copier reads it): the copier wakes them last-come first, so that a
  // process resumes while what it touched last is still in the core's cache,
  // and the next run's order runs backwards through this one's.
  LineVector<Process*> arrivals;
  std::vector<CopyStep> steps;  // the program within the node, in order
  std::vector<std::uint32_t> step_core;  // per step: the core at its other end
  std::vector<CopyBlock> blocks;
  // phases, pulling, where a member takes several strided steps (a
  // redistribution's messages, whose pieces interleave in its memory, three
  // to a cache line at fig9's P=4): the rounds the program runs in, and per
  // step the pieces it copies in each (its last round fewer, its rounds past
  // its last piece none; a step of one piece copies it in the first). Each
  // round copies the steps in the program's order, so the phases keep their
  // order within it; pulled, no two cores write one member, so rounds change
  // no contention, only how often each receiver's lines pass through the cache.
  // A traced run copies each step whole, as one span.
  std::uint32_t rounds = 1;
  std::vector<std::uint32_t> round_share;
  // Every step a single piece of at most kSmallStepBytes, and all of them
  // together at most kSmallProgramBytes, which the caches keep from one run
  // to the next (copy_resolved).
  bool small = false;
  // Where the program is small and its steps are all of one size, 8 or 16
  // bytes (an exchange's messages of one size), that size: each step is then
  // one move of it, with no size to test. Otherwise 0.
  std::uint64_t small_step_bytes = 0;
  // Pairs of this core and another whose pieces go through a staging area
  // (StagedPair): those this core sends on, and those it receives. Their
  // steps are not in `steps`, and their other cores not in `sources` or
  // `readers`: no core waits for another's copies for them.
  LineVector<StagedPair> staged_out, staged_in;
  bool traced = false;  // compiled for a job that records a trace: nothing staged
  LineVector<std::uint32_t> sources;  // cores this program copies out of or into
  LineVector<std::uint32_t> readers;  // cores that copy out of or into this core's members
  LineVector<std::uint32_t> others;  // strict_phases: every other core with participants
  LineVector<std::size_t> deferred;  // any: blocks whose peer had not published, per run
  LineVector<std::uint64_t> seen_published;  // per core: the last run this core has seen it publish
  // Per step, its addresses as the last run found them: good while neither
  // core at its two ends has had regions move since (`resolved_with`, per
  // core: its `regions_moved` then; none at first). A run copies a step from
  // here, or resolves it through the slots and keeps what it found. With its
  // size and count beside them, a step of one piece is copied from these 32
  // bytes alone, not from its 64-byte CopyStep too: at n=512 a core's steps
  // are 256 KiB, half of its L2, read once per run.
  struct Resolved {
    std::byte* to = nullptr;
    const std::byte* from = nullptr;
    std::uint64_t bytes = 0;  // of each piece
    std::uint32_t count = 0;  // pieces; more than one: their strides are the step's
  };
  static_assert(sizeof(Resolved) == 32, "two kept steps to a cache line");
  std::vector<Resolved> resolved;
  LineVector<std::uint64_t> resolved_with;
  // The same for this core's pieces between nodes (NodeStaging::pack[core]
  // and unpack[core]): each one's member address, good while this core's
  // `regions_moved` is still `staged_with` (the pieces are its members' alone).
  std::vector<const std::byte*> packed_from;
  std::vector<std::byte*> unpacked_into;
  std::uint64_t staged_with = ~std::uint64_t{0};
  bool regions_moved = false;  // this run: set by a participant whose regions moved, cleared when published
  // This core's `published` and `regions_moved` (CompiledCoreProgress) as it
  // last stored them, for its own reads: the other cores poll that line, and
  // each read of it here missed as if another core had written it, on the
  // run's path (docs/benchmarks.md, stop 71).
  std::uint64_t published_run = 0, regions_moves = 0;
  NodeStaging* staging = nullptr;  // crosses_nodes: the node's, once laid out
  // receiver_locks: per sender (a member of this core with steps), its steps'
  // range in `steps` and, per run, its pending steps in `pending`.
  struct Sender {
    Rank rank = 0;
    std::size_t begin = 0, end = 0, left = 0;
  };
  LineVector<Sender> senders;
  LineVector<std::uint32_t> pending;
  // What the program was compiled for (CompiledProgramCache): per participant,
  // the worker it is on (kNoCore: another node), and the parts of `members`
  // in their order. The cache it goes back to at the end of the job, if any.
  std::vector<std::uint32_t> layout;
  std::vector<const CompiledMember*> parts;
  std::shared_ptr<CompiledProgramCache> home;
};
static_assert(kOwnsCacheLines<CompiledCoreProgram>, "the cores' programs lie side by side in one vector");

// Exchanges what a core's compiling made (all of it: what it was made for
// too), leaving the job's own (members, per-run counts, staging) in place.
inline void swap_compiled(CompiledCoreProgram& a, CompiledCoreProgram& b) noexcept {
  using std::swap;
  swap(a.compiled, b.compiled);
  swap(a.steps, b.steps);
  swap(a.step_core, b.step_core);
  swap(a.blocks, b.blocks);
  swap(a.rounds, b.rounds);
  swap(a.round_share, b.round_share);
  swap(a.small, b.small);
  swap(a.staged_out, b.staged_out);
  swap(a.staged_in, b.staged_in);
  swap(a.traced, b.traced);
  swap(a.sources, b.sources);
  swap(a.readers, b.readers);
  swap(a.others, b.others);
  swap(a.deferred, b.deferred);
  swap(a.seen_published, b.seen_published);
  swap(a.resolved, b.resolved);
  swap(a.resolved_with, b.resolved_with);
  swap(a.packed_from, b.packed_from);
  swap(a.unpacked_into, b.unpacked_into);
  swap(a.senders, b.senders);
  swap(a.pending, b.pending);
  swap(a.layout, b.layout);
  swap(a.parts, b.parts);
}

}  // namespace switchyard::detail

namespace switchyard {

// compiled_exchange.hpp. Each core's kept program by worker index; taken by
// that core's copier in a job's first run, given back when the job's
// exchange state goes. Under a mutex: twice per core and job.
class CompiledProgramCache : public std::enable_shared_from_this<CompiledProgramCache> {
 public:
  // Swaps core's kept program into `prog` if there is one and fits(it).
  template <class Fits>
  bool take(std::uint32_t core, detail::CompiledCoreProgram& prog, Fits&& fits) {
    const std::lock_guard lock(mutex_);
    if (core >= kept_.size() || !kept_[core].compiled || !fits(kept_[core])) return false;
    detail::swap_compiled(kept_[core], prog);
    return true;
  }
  // Keeps `prog`'s compiled part (replacing one kept already).
  void keep(std::uint32_t core, detail::CompiledCoreProgram& prog) {
    const std::lock_guard lock(mutex_);
    if (kept_.size() <= core) kept_.resize(core + 1);
    detail::swap_compiled(kept_[core], prog);
  }

 private:
  detail::WorkerMutex mutex_;
  std::vector<detail::CompiledCoreProgram> kept_;
};

}  // namespace switchyard

namespace switchyard::detail {

class CompiledExchangeState final : public GroupAttachment {
 public:
  // `g`: the communicator, whose first `participants` members run the exchange.
  CompiledExchangeState(const Group& g, Rank participants, std::uint32_t workers,
                        const CompiledExchangeOptions& options)
      : participants_(participants),
        options_(options),
        slots_(g.members().cores, g.member_pages()),
        member_runs_(g.members().cores, g.member_pages()),
        progress_(std::make_unique<CompiledCoreProgress[]>(workers)),
        programs_(workers) {}
  // Gives each compiled program back to its cache, for the next job.
  ~CompiledExchangeState() override {
    for (std::uint32_t w = 0; w < programs_.size(); ++w) {
      CompiledCoreProgram& prog = programs_[w];
      if (prog.compiled && prog.home) prog.home->keep(w, prog);
    }
  }
  CompiledExchangeState(const CompiledExchangeState&) = delete;
  CompiledExchangeState& operator=(const CompiledExchangeState&) = delete;

  Rank participants() const noexcept { return participants_; }
  const CompiledExchangeOptions& options() const noexcept { return options_; }
  CompiledMemberSlot& slot(Rank r) noexcept { return slots_[r]; }
  CompiledMemberRun& member_run(Rank r) noexcept { return member_runs_[r]; }
  CompiledCoreProgress& progress(std::uint32_t core) noexcept { return progress_[core]; }
  CompiledCoreProgram& program(std::uint32_t core) noexcept { return programs_[core]; }
  std::uint32_t cores() const noexcept { return static_cast<std::uint32_t>(programs_.size()); }

  // Whether the communicator has members on several nodes; then this node's
  // leader (its lowest participant) and the worker it is on. Set when made.
  bool spans_nodes = false;
  Rank leader = 0;
  std::uint32_t leader_core = 0;
  // The last run whose messages between nodes have all gone and come: release
  // by this node's leader once its sends and receives are complete; acquire
  // by the cores before they unpack, and before they let the next run pack.
  alignas(kCacheLine) std::atomic<std::uint64_t> exchanged{0};
  WorkerMutex staging_mutex;  // guards the making of `staging`
  std::unique_ptr<NodeStaging> staging;  // jobs across nodes
  // What abandoned split runs' regions and parts live in (CompiledRun::abandon),
  // kept until the job ends; each process that abandons one adds it.
  WorkerMutex abandoned_mutex;
  std::vector<std::shared_ptr<const void>> abandoned;

 private:
  const Rank participants_;
  const CompiledExchangeOptions options_;
  MemberLines<CompiledMemberSlot> slots_;
  MemberLines<CompiledMemberRun> member_runs_;
  std::unique_ptr<CompiledCoreProgress[]> progress_;  // by worker
  std::vector<CompiledCoreProgram> programs_;  // by worker
};

// A staged piece's address in its member's send (`sender`) or receive
// regions, as published, through the member's slot. A send region is only
// read through it.
inline std::byte* member_address(CompiledExchangeState& s, const StagedPiece& piece, bool sender) {
  const CompiledMemberSlot& slot = s.slot(piece.member);
  std::byte* region = sender ? const_cast<std::byte*>(slot.send[piece.region].data()) : slot.recv[piece.region].data();
  return region + piece.member_offset;
}

// The runtime's side of run_compiled_exchange: it reaches the processes, workers
// and groups of the job (friend of Process and Communicator).
struct CompiledEngine {
  // CompiledRun: its making, and its awaiting's three calls.
  static CompiledRun make_run(const Communicator& comm, std::uint64_t key, Rank participants,
                              const CompiledMember& mine, CompiledRegions regions,
                              const CompiledExchangeOptions& options, CompiledRegionCheck check) noexcept {
    return CompiledRun(comm, key, participants, mine, regions, options, check);
  }
  static bool arrive(CompiledRun& r);
  // arrive()'s path where the run looks its state up, or publishes its regions.
  [[gnu::noinline]] static bool arrive_publishing(CompiledRun& r);
  // The member, its run's state looked up and its regions published, arrives at its core.
  static bool arrive_at_core(CompiledRun& r, CompiledExchangeState& s, CompiledMemberRun& counts);
  static bool copy_at_once(CompiledRun& r);
  static void publish_member(CompiledRun& r, CompiledExchangeState& s, CompiledMemberRun& counts,
                             CompiledCoreProgram& prog, Rank me);
  static CompiledExchangeState& bound_state(CompiledBinding& b, Process& p, const Group& g, Rank me);
  static std::coroutine_handle<> suspend(CompiledRun& r, std::coroutine_handle<> awaiter);
  // suspend() for a copier, a leader or a run that waits for its readers: in its task (out of line).
  [[gnu::noinline]] static std::coroutine_handle<> suspend_in_task(CompiledRun& r, std::coroutine_handle<> awaiter);
  static CompiledRunStats resume(CompiledRun& r);
  // resume() of a run that went on in its task (out of line: see suspend_in_task).
  [[gnu::noinline]] static CompiledRunStats resume_from_task(CompiledRun& r);
  // What member `me`'s run counted.
  static CompiledRunStats stats_of(CompiledExchangeState& s, Rank me);
  static Task<void> prepare(Communicator comm, std::uint64_t key, Rank participants, const CompiledMember* mine,
                            CompiledExchangeOptions options);
  // Split phase (CompiledRun::start): arrives and, for its core's copier on one
  // node, publishes the core; then, awaited, whether the run is complete
  // already (a parked participant whose core has copied).
  static void start(CompiledRun& r);
  static bool ready_after_start(CompiledRun& r);
  static void abandon(CompiledRun& r, const Communicator& comm, const std::string& why,
                      std::shared_ptr<const void> keep) noexcept;
  static void stop_readers_of(CompiledRun& r) noexcept;
  [[noreturn]] static void refuse_while_started(CompiledRun& r, const std::string& why);

  // Waits, parked, until core `peer` has published its members' regions of `run`.
  static WatchAwaiter peer_published(Process& p, CompiledExchangeState& s, std::uint32_t peer, std::uint64_t run) {
    return WatchAwaiter(p, s.progress(peer).published, run, "another core's buffers (compiled exchange)");
  }

  static void ring(Process& p, std::span<const std::uint32_t> cores) {
    for (std::uint32_t c : cores) p.job_.worker(c).doorbell().ring();
  }
  static void ring_staged(Process& p, const LineVector<StagedPair>& pairs) {
    for (const StagedPair& pair : pairs) p.job_.worker(pair.core).doorbell().ring();
  }
  [[noreturn, gnu::cold]] static void refuse(Rank me, const std::string& why);

 private:
  static CompiledExchangeState& state_of(Process& p, const Group& g, std::uint64_t key, Rank participants,
                                         const CompiledExchangeOptions& options);
  // The checks of a member's call, and its state.
  static CompiledExchangeState& enter(Process& p, const Group& g, Rank me, std::uint64_t key, Rank participants,
                                      const CompiledExchangeOptions& options);
  static void compile(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core);
  static void compile_anew(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core);
  static std::uint32_t core_of(const Group& g, const Job& job, Rank r);
  static bool compiled_for(const CompiledCoreProgram& kept, CompiledExchangeState& s, const Group& g, const Job& job,
                           const CompiledCoreProgram& prog);
  static void compile_senders(CompiledCoreProgram& prog);
  static bool writes_pages(const CompiledCoreProgram& prog);
  static bool is_small(const CompiledCoreProgram& prog);
  static std::vector<std::uint32_t> collect_steps(CompiledExchangeState& s, const Group& g, Process& p,
                                                  std::uint32_t core);
  static void order_steps(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint32_t core,
                          const std::vector<std::uint32_t>& ordinal);
  // Whether `peer`'s members have published their regions of this run: one
  // acquire of its `published` per run, remembered after (the store it pairs
  // with is made once per run).
  static bool published(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint32_t core, std::uint32_t peer,
                        std::uint64_t run) {
    if (peer == core || prog.seen_published[peer] >= run) return true;
    if (s.progress(peer).published.load(std::memory_order_acquire) < run) return false;
    prog.seen_published[peer] = run;
    return true;
  }
  // A block's steps; when the job records a trace, each one a "copy" span.
  static void copy(CompiledExchangeState& s, const Group& g, Process& p, CompiledCoreProgram& prog, const CopyBlock& b,
                   std::uint32_t core, std::uint64_t run) {
    if (p.trace_) [[unlikely]] {
      for (std::size_t i = b.begin; i < b.end; ++i) copy_traced(s, g, p, prog.steps[i], "copy");
      return;
    }
    const std::size_t steps = prog.steps.size();
    if (still_resolved(s, prog, core, b.peer_core)) {
      copy_resolved(prog, b);
      return;
    }
    for (std::size_t i = b.begin; i < b.end; ++i) {
      if (i + kSlotAhead < steps) prefetch_slots(s, prog.steps[i + kSlotAhead]);
      const std::size_t next = i + kRegionAhead;
      if (next < steps && published(s, prog, core, prog.step_core[next], run)) prefetch_regions(s, prog.steps[next]);
      resolve_and_copy(s, prog, i);
    }
  }
  // A block's steps at the addresses its last run found. The arrays are
  // read through locals: the copies store bytes, which may alias anything,
  // and would otherwise make each step load the vectors' pointers and ends
  // again. A program of small single pieces (CompiledCoreProgram::small) copies
  // each with a few moves and prefetches nothing: its data stays in the
  // caches from run to run, where a prefetch is two instructions per step
  // for nothing.
  static void copy_resolved(const CompiledCoreProgram& prog, const CopyBlock& b) {
    const CompiledCoreProgram::Resolved* const r = prog.resolved.data();
    const std::size_t begin = b.begin, end = b.end;
    if (prog.small) {
      switch (prog.small_step_bytes) {
        case 8:
          return copy_resolved_of<8>(r, begin, end);
        case 16:
          return copy_resolved_of<16>(r, begin, end);
        default:
          for (std::size_t i = begin; i < end; ++i) copy_small_bytes(r[i].to, r[i].from, r[i].bytes);
          return;
      }
    }
    const CopyStep* const st = prog.steps.data();
    const std::size_t ahead = std::min(end, prog.steps.size() > kDataAhead ? prog.steps.size() - kDataAhead : 0);
    std::size_t i = begin;
    for (; i < ahead; ++i) {
      prefetch_data(r[i + kDataAhead]);
      copy_at(r[i], st[i]);
    }
    for (; i < end; ++i) copy_at(r[i], st[i]);
  }
  // Steps [begin, end) of a small program whose steps are all `Bytes` bytes.
  template <std::size_t Bytes>
  static void copy_resolved_of(const CompiledCoreProgram::Resolved* r, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) std::memcpy(r[i].to, r[i].from, Bytes);
  }
  // Whether a block's resolved addresses still hold: no participant of its
  // own core or of its peer's has had regions move since they were found
  // (the peer's count read after its `published` was acquired).
  static bool still_resolved(CompiledExchangeState& s, const CompiledCoreProgram& prog, std::uint32_t core,
                             std::uint32_t peer) {
    return prog.resolved_with[core] == prog.regions_moves &&
           (peer == core || prog.resolved_with[peer] == s.progress(peer).regions_moved.load(std::memory_order_relaxed));
  }
  // After a run that copied every step through copy(): its addresses hold
  // until the regions of a core at either end move.
  static void keep_resolved(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint32_t core) {
    prog.resolved_with[core] = prog.regions_moves;
    for (std::uint32_t c : prog.sources) {
      prog.resolved_with[c] = s.progress(c).regions_moved.load(std::memory_order_relaxed);
    }
  }
  static void resolve_and_copy(CompiledExchangeState& s, CompiledCoreProgram& prog, std::size_t i) {
    prog.resolved[i] = addresses(s, prog.steps[i]);
    copy_at(prog.resolved[i], prog.steps[i]);
  }
  static void prefetch_data(const CompiledCoreProgram::Resolved& r) {
    __builtin_prefetch(r.from);
    __builtin_prefetch(r.to, 1);
  }
  // A step's addresses are three dependent loads (the members' slots, their
  // region lists, then the data), and a run's data pushes the slots and region
  // lists out of the caches (8 MiB at n=512 and 1 KiB): each step would wait
  // for them in turn. Loaded ahead instead, they arrive while earlier steps
  // copy, across blocks too (a receiver's blocks are a few steps each); a
  // region list only once its member's core has published it. Resolved, a
  // step's data is loaded ahead instead: 10 % faster at n=4096 and 1 KiB,
  // where it comes from memory, and the same at n=512 and n=32.
  static constexpr std::size_t kSlotAhead = 16, kRegionAhead = 8, kDataAhead = 8;
  static void prefetch_slots(CompiledExchangeState& s, const CopyStep& st) {
    __builtin_prefetch(&s.slot(st.src));
    __builtin_prefetch(&s.slot(st.dst));
  }
  static void prefetch_regions(CompiledExchangeState& s, const CopyStep& st) {
    __builtin_prefetch(&s.slot(st.src).send[st.src_region]);
    __builtin_prefetch(&s.slot(st.dst).recv[st.dst_region]);
  }
  static void copy_traced(CompiledExchangeState& s, const Group& g, Process& p, const CopyStep& st, const char* name);
  // A step's two addresses, through its members' slots and region lists.
  static CompiledCoreProgram::Resolved addresses(CompiledExchangeState& s, const CopyStep& st) {
    return {s.slot(st.dst).recv[st.dst_region].data() + st.dst_offset,
            s.slot(st.src).send[st.src_region].data() + st.src_offset, st.bytes, st.count};
  }
  // `st` is read only for a strided step's strides.
  static void copy_at(const CompiledCoreProgram::Resolved& r, const CopyStep& st) {
    if (r.count == 1) {
      copy_bytes(r.to, r.from, r.bytes);
    } else {
      copy_strided(r.to, st.dst_stride, r.from, st.src_stride, r.count, r.bytes);
    }
  }
  static void copy_step(CompiledExchangeState& s, const CopyStep& st) { copy_at(addresses(s, st), st); }
  // Round `round` of a block's steps (CompiledCoreProgram::rounds), their
  // addresses resolved in the first.
  static void copy_round(CompiledExchangeState& s, CompiledCoreProgram& prog, const CopyBlock& b, std::uint32_t core,
                         std::uint32_t round) {
    if (round == 0 && !still_resolved(s, prog, core, b.peer_core)) {
      for (std::size_t i = b.begin; i < b.end; ++i) prog.resolved[i] = addresses(s, prog.steps[i]);
    }
    for (std::size_t i = b.begin; i < b.end; ++i) {
      const CompiledCoreProgram::Resolved& r = prog.resolved[i];
      const std::uint64_t share = prog.round_share[i], first = share * round;
      if (first >= r.count) continue;
      const CopyStep& st = prog.steps[i];
      copy_strided(r.to + first * st.dst_stride, st.dst_stride, r.from + first * st.src_stride, st.src_stride,
                   static_cast<std::uint32_t>(std::min<std::uint64_t>(share, r.count - first)), r.bytes);
    }
  }
  static void lay_out_rounds(CompiledCoreProgram& prog);
  static bool copy_without_waiting(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                   std::uint64_t run);
  static Task<void> copy_program(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                 std::uint64_t run);
  static Task<void> copy_any(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                             std::uint64_t run);
  static Task<void> copy_phases(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                std::uint64_t run);
  static Task<void> copy_strict(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                std::uint64_t run);
  static Task<void> copy_under_receiver_locks(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                              std::uint64_t run);
  static std::size_t busy_lock_pass(CompiledExchangeState& s, const Group& g, Process& p,
                                    CompiledCoreProgram::Sender& sender, CompiledCoreProgram& prog, std::uint64_t run,
                                    std::uint32_t& unpublished);

  // A run's part after its member's arrival: the core's copier's (the last
  // of its participants to arrive), and a node's leader's that is not its
  // core's copier.
  static Task<CompiledRunStats> copy_as_copier(Communicator comm, CompiledExchangeState& s, std::uint64_t run);
  static void say_copied(CompiledExchangeState& s, Process& p, CompiledCoreProgram& prog, std::uint32_t core,
                         std::uint64_t run);
  static bool readers_copied(CompiledExchangeState& s, const CompiledCoreProgram& prog, std::uint64_t run);
  static void end_core_run(Process& p, CompiledCoreProgram& prog, std::uint64_t run);
  static Task<CompiledRunStats> wait_for_readers(Communicator comm, CompiledExchangeState& s, std::uint64_t run);
  // The copier's step 2 up to its copies: the program compiled (first run),
  // moved regions announced, `published` stored and its readers rung. Once
  // per core and run: at the copier's start() (split phase) or in its task.
  static void publish_core(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core, std::uint64_t run);
  static Task<CompiledRunStats> wait_as_leader(Communicator comm, CompiledExchangeState& s, std::uint64_t run);

  // --- pairs of cores through staging areas (compiled_exchange_staged.cpp) ---
  // The core's staged pairs (StagedPair), compiled before its steps: every
  // ordered pair of cores of one node whose pieces, one run's, come to at
  // most kStagedPairBytes (more where they are smaller than a line on
  // average: lay_out_pair), where the exchange pulls in the order of its
  // peers' publications (CopyOrder::any or phases) and records no trace.
  // Both cores of a pair decide alike, from the same pieces: the sender's
  // from its members' outgoing steps, the receiver's from its incoming ones.
  static void stage_pairs(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core);
  static const StagedPair* staged_with(const LineVector<StagedPair>& pairs, std::uint32_t other) noexcept {
    for (const StagedPair& pair : pairs) {
      if (pair.core == other) return &pair;
    }
    return nullptr;
  }
  // A job's first run finds its pairs' areas and addresses again.
  static void restage_for_job(CompiledCoreProgram& prog) noexcept;
  // The first pair whose half that run `run` packs is not free yet (its
  // receiver's core has not copied run - 2, which unpacked it), or none.
  // Non-blocking; remembers what it saw. wait_staging_free waits until none.
  static StagedPair* staging_busy(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint64_t run);
  static Task<void> wait_staging_free(Process& p, CompiledExchangeState& s, CompiledCoreProgram& prog,
                                      std::uint64_t run);
  // Packs this core's staged pieces of run `run`, before the core publishes.
  static void pack_staged(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint32_t core, std::uint64_t run);
  // After run `run`: asks for the lines of the halves that run + 1 packs, to
  // own them (their receiver read them last), where this core has seen the
  // receiver publish `run` (it has unpacked them: staging_busy). So their
  // transfers overlap the next run's work, rather than holding up the
  // packing's stores, and every store after them, once they are made.
  static void claim_next_halves(const CompiledCoreProgram& prog, std::uint64_t run);
  // Unpacks a pair's pieces of run `run`, once its sender's core has published it.
  static void unpack_staged(CompiledExchangeState& s, StagedPair& pair, std::uint32_t core, std::uint64_t run);

  // --- between nodes (compiled_exchange_nodes.cpp) ---
  // The node's staging, laid out by the first core to ask once every core of
  // the node with participants has published (its first run).
  static Task<void> lay_out_staging(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                    std::uint64_t run);
  static std::unique_ptr<NodeStaging> make_staging(CompiledExchangeState& s, const Group& g, const Job& job);
  // This core's pieces, at the member addresses resolve_staged keeps.
  static void resolve_staged(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint32_t core);
  static void pack(const CompiledCoreProgram& prog, std::uint32_t core);
  static void unpack(const CompiledCoreProgram& prog, std::uint32_t core);
  // The leader's run: once every core has packed, the buffers go to the
  // other nodes' leaders and theirs come in; then `exchanged`.
  static Task<void> lead(CompiledExchangeState& s, Communicator comm, std::uint64_t run);
};

}  // namespace switchyard::detail
