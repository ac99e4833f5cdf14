#include "described_memory.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "disjoint_runs.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/errors.hpp"

namespace switchyard::schedulers::detail {

namespace {

// A member that finds a peer's description missing waits for that peer's
// first run to record it. Only a plan's first run ever waits (later ones find
// every description kept), and only until its peers start their runs, so it
// polls rather than asking the runtime for a doorbell: for kYieldFor
// yielding (its core's other processes run in between), as a peer's
// description takes tens of microseconds, then asleep in its core's timer
// heap, whose wake-ups come 50 us or more late on a virtual machine. A peer
// that has not described after a minute never will: its hooks do not
// describe memory, or it runs another plan.
constexpr std::chrono::seconds kDescriptionWait{60};
constexpr std::chrono::microseconds kYieldFor{100}, kPoll{50};

// One step of such a wait, begun at `since`.
Task<void> poll_step(Process& p, std::chrono::steady_clock::time_point since) {
  if (std::chrono::steady_clock::now() - since < kYieldFor) {
    co_await p.yield();
  } else {
    co_await p.sleep_for(kPoll);
  }
}

// A description's and a program's states: a process claims one to make it, and
// hands it over made, or unclaimed again if making it threw.
enum State : std::uint8_t { kNone, kClaimed, kReady };

// One side of a member's description: its entries' runs, those of entry e at
// [first[e], first[e + 1]), none empty.
struct Described {
  std::vector<StridedRun> runs;
  std::vector<std::size_t> first{0};
  std::uint64_t extent = 0;  // the end of the furthest block, in bytes from the region's start
  std::span<const StridedRun> of(std::size_t e) const {
    return std::span<const StridedRun>(runs).subspan(first[e], first[e + 1] - first[e]);
  }
};

[[noreturn, gnu::cold]] void refuse(Rank me, const std::string& why) {
  throw InvalidArgument("switchyard: ExchangePlan::run on rank " + std::to_string(me) + ": " + why);
}

std::string entry_name(bool send, std::size_t e, const MatrixEntry& entry) {
  return std::string(send ? "send entry " : "receive entry ") + std::to_string(e) +
         (send ? " (to rank " : " (from rank ") + std::to_string(entry.peer) + ")";
}

// The hooks' runs of every entry of one side, checked: the blocks of each
// entry hold exactly its bytes, and no block ends past 2^64.
Described describe_side(Rank me, bool send, std::span<const MatrixEntry> entries, ExchangeHooks& hooks) {
  Described out;
  std::vector<StridedRun> runs;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    runs.clear();
    if (send) {
      hooks.describe_send(e, runs);
    } else {
      hooks.describe_recv(e, runs);
    }
    std::uint64_t bytes = 0;
    for (const StridedRun& r : runs) {
      if (r.length == 0 || r.count == 0) continue;
      std::uint64_t run_bytes = 0, last = 0, end = 0;
      if (__builtin_mul_overflow(r.length, r.count, &run_bytes) || __builtin_add_overflow(bytes, run_bytes, &bytes) ||
          __builtin_mul_overflow(r.count - 1, r.stride, &last) || __builtin_add_overflow(r.offset, last, &end) ||
          __builtin_add_overflow(end, r.length, &end)) {
        refuse(me, "a run described for " + entry_name(send, e, entries[e]) + " reaches past 2^64 bytes");
      }
      out.extent = std::max(out.extent, end);
      out.runs.push_back(r);
    }
    if (bytes != entries[e].bytes) {
      refuse(me, "the runs described for " + entry_name(send, e, entries[e]) + " hold " + std::to_string(bytes) +
                     " bytes, the plan " + (send ? "sends " : "receives ") + std::to_string(entries[e].bytes));
    }
    out.first.push_back(out.runs.size());
  }
  return out;
}

[[noreturn, gnu::cold]] void overlapping(Rank me, std::span<const MatrixEntry> receives, std::size_t a, std::size_t b,
                                         std::uint64_t at) {
  refuse(me, "the blocks described for " + entry_name(false, a, receives[a]) + " and " +
                 entry_name(false, b, receives[b]) + " overlap at byte " + std::to_string(at));
}

// Two cores could write one byte at once: refused. Runs of one stride are
// found disjoint run against run (runs_disjoint); otherwise, or to name where
// two blocks meet, a run's blocks lie in the order of their offsets (strides
// are unsigned), so the runs' blocks are merged in that order through a heap
// of the runs, each at its next block, and each block checked against the
// one before: no list of every block, no sort of one (a redistribution's
// receiver has thousands of blocks in a few runs).
void check_receives_disjoint(Rank me, const Described& recv, std::span<const MatrixEntry> receives) {
  if (runs_disjoint(recv.runs) == true) return;
  struct NextBlock {
    std::uint64_t offset, k;
    const StridedRun* run;
    std::size_t entry;
  };
  std::vector<NextBlock> heap;
  for (std::size_t e = 0; e < receives.size(); ++e) {
    for (const StridedRun& r : recv.of(e)) {
      heap.push_back({r.offset, 0, &r, e});
    }
  }
  const auto later = [](const NextBlock& a, const NextBlock& b) { return a.offset > b.offset; };
  std::make_heap(heap.begin(), heap.end(), later);
  std::uint64_t end = 0;  // of the block before
  std::size_t entry = 0;  // its entry
  for (bool first = true; !heap.empty(); first = false) {
    std::pop_heap(heap.begin(), heap.end(), later);
    NextBlock& b = heap.back();
    if (!first && end > b.offset) overlapping(me, receives, entry, b.entry, b.offset);
    end = b.offset + b.run->length;
    entry = b.entry;
    if (++b.k < b.run->count) {
      b.offset += b.run->stride;
      std::push_heap(heap.begin(), heap.end(), later);
    } else {
      heap.pop_back();
    }
  }
}

// The blocks of one message, from one of its bytes on.
class BlockCursor {
 public:
  // `skip` is below the message's size: the runs hold the byte it names.
  BlockCursor(std::span<const StridedRun> runs, std::uint64_t skip) : run_(runs.data()) {
    for (; skip >= run_->length * run_->count; ++run_) skip -= run_->length * run_->count;
    block_ = skip / run_->length;
    within_ = skip % run_->length;
  }
  // Where the cursor is, in bytes from the region's start, and how many bytes
  // follow it contiguously in its block.
  std::uint64_t at() const noexcept { return run_->offset + block_ * run_->stride + within_; }
  std::uint64_t left_in_block() const noexcept { return run_->length - within_; }
  // By at most left_in_block() bytes.
  void advance(std::uint64_t bytes) noexcept {
    within_ += bytes;
    if (within_ < run_->length) return;
    within_ = 0;
    if (++block_ < run_->count) return;
    block_ = 0;
    ++run_;
  }
  // At a block's start: the whole blocks left in its run (this one too),
  // each of `length` bytes, `stride` apart; 0 inside a block.
  std::uint64_t whole_blocks_left() const noexcept { return within_ == 0 ? run_->count - block_ : 0; }
  std::uint64_t length() const noexcept { return run_->length; }
  std::uint64_t stride() const noexcept { return run_->stride; }
  // By `blocks` whole blocks, at most whole_blocks_left().
  void skip_blocks(std::uint64_t blocks) noexcept {
    block_ += blocks;
    if (block_ < run_->count) return;
    block_ = 0;
    ++run_;
  }

 private:
  const StridedRun* run_;
  std::uint64_t block_ = 0, within_ = 0;
};

// Where the cursors stand at the starts of blocks of one length, in runs
// whose strides are those of `last`, a strided step that ends right there:
// how many of the blocks that follow (both runs have them, the step has the
// bytes) extend it, each as extend_strided would, one piece at a time. A
// redistribution's message is thousands of such blocks in a few runs, and
// its plan's first run in a job (after create()) took them one by one.
std::uint64_t blocks_extending(const CopyStep& last, const CopyStep& st, const BlockCursor& src, const BlockCursor& dst,
                               std::uint64_t left) noexcept {
  const std::uint64_t len = src.length();
  if (last.count < 2 || last.src != st.src || last.dst != st.dst || last.src_region != 0 || last.dst_region != 0 ||
      last.phase != st.phase || last.bytes != len || dst.length() != len || last.src_stride != src.stride() ||
      last.dst_stride != dst.stride() || last.src_offset + last.count * last.src_stride != src.at() ||
      last.dst_offset + last.count * last.dst_stride != dst.at()) {
    return 0;
  }
  return std::min(
      {src.whole_blocks_left(), dst.whole_blocks_left(), left / len, std::uint64_t{~std::uint32_t{0}} - last.count});
}

// Appends the pieces of entry step `st` (its bytes of the sender's message at
// st.src_offset, landing at st.dst_offset of the receiver's) that are
// contiguous in both memories, each merged into the step before it where both
// sides continue it, or else where it is one more piece of a strided step
// (extend_strided): a redistribution's message is then a step per row of its
// pieces, not one per piece. Whole blocks that extend a strided step go in
// at once (blocks_extending).
void add_pieces(std::vector<CopyStep>& out, const CopyStep& st, std::span<const StridedRun> from,
                std::span<const StridedRun> into) {
  if (st.bytes == 0) return;
  BlockCursor src(from, st.src_offset), dst(into, st.dst_offset);
  for (std::uint64_t left = st.bytes; left > 0;) {
    if (!out.empty() && src.whole_blocks_left() > 0 && dst.whole_blocks_left() > 0) {
      if (const std::uint64_t blocks = blocks_extending(out.back(), st, src, dst, left); blocks > 0) {
        out.back().count += static_cast<std::uint32_t>(blocks);
        left -= blocks * src.length();
        src.skip_blocks(blocks);
        dst.skip_blocks(blocks);
        continue;
      }
    }
    const std::uint64_t n = std::min({left, src.left_in_block(), dst.left_in_block()});
    const std::uint64_t s = src.at(), t = dst.at();
    CopyStep* last = out.empty() ? nullptr : &out.back();
    const CopyStep piece{st.src, st.dst, 0, 0, s, t, n, st.phase};
    if (last && last->count == 1 && last->src == st.src && last->dst == st.dst && last->phase == st.phase &&
        last->src_offset + last->bytes == s && last->dst_offset + last->bytes == t) {
      last->bytes += n;
    } else if (!last || !extend_strided(*last, piece)) {
      out.push_back(piece);
    }
    src.advance(n);
    dst.advance(n);
    left -= n;
  }
}

// Claims `state` for this process to make what it guards: true once claimed,
// false once another process has made it (two processes of one rank may run
// the plan at once, on two communicators).
Task<bool> claim(Process& p, std::atomic<std::uint8_t>& state) {
  const auto since = std::chrono::steady_clock::now();
  for (;;) {
    std::uint8_t seen = kNone;
    // Acquire, pairing with the release that hands the state back unclaimed or
    // made: whoever claims it or finds it made sees what the last maker wrote.
    if (state.compare_exchange_strong(seen, kClaimed, std::memory_order_acquire)) co_return true;
    if (seen == kReady) co_return false;
    co_await poll_step(p, since);
  }
}

}  // namespace

struct alignas(kCacheLine) DescribedMemory::Part {
  // kReady: `send` and `recv` are written, never again. Stored with release by
  // the process that described them; loaded with acquire by every member that
  // reads them (claim(), await_description()).
  std::atomic<std::uint8_t> description{kNone};
  // kReady: `steps` and `member` are written, never again; release by the
  // process that compiled them, acquire in claim() and compiled().
  std::atomic<std::uint8_t> program{kNone};
  Described send, recv;
  MemberSteps steps;
  CompiledMember member;
};

DescribedMemory::DescribedMemory(Rank processes, std::uint64_t compiled_key)
    : parts_(std::make_unique<Part[]>(processes)), compiled_key_(compiled_key) {}

DescribedMemory::~DescribedMemory() = default;

const CompiledMember* DescribedMemory::compiled(Rank me) const noexcept {
  const Part& part = parts_[me];
  return part.program.load(std::memory_order_acquire) == kReady ? &part.member : nullptr;
}

Task<void> DescribedMemory::describe(Process& p, Rank me, std::span<const MatrixEntry> sends,
                                     std::span<const MatrixEntry> receives, ExchangeHooks& hooks) {
  Part& part = parts_[me];
  if (!co_await claim(p, part.description)) co_return;
  try {
    part.send = describe_side(me, true, sends, hooks);
    part.recv = describe_side(me, false, receives, hooks);
    check_receives_disjoint(me, part.recv, receives);
  } catch (...) {
    part.send = Described{};
    part.recv = Described{};
    part.description.store(kNone, std::memory_order_release);  // claim()'s partner: another run may try again
    throw;
  }
  part.description.store(kReady, std::memory_order_release);
}

Task<void> DescribedMemory::await_description(Process& p, Rank me, Rank peer) const {
  const auto since = std::chrono::steady_clock::now(), deadline = since + kDescriptionWait;
  // Acquire, pairing with describe()'s release of kReady: the peer's runs are read next.
  while (parts_[peer].description.load(std::memory_order_acquire) != kReady) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error("switchyard: ExchangePlan::run on rank " + std::to_string(me) + ": rank " + std::to_string(peer) +
                  " has not described its memory after " + std::to_string(kDescriptionWait.count()) +
                  " s: the hooks of every member describe memory, or none's");
    }
    co_await poll_step(p, since);
  }
}

MemberSteps DescribedMemory::pair_blocks(const MemberSteps& entry_steps) const {
  MemberSteps out;
  for (const CopyStep& st : entry_steps.incoming) {
    add_pieces(out.incoming, st, parts_[st.src].send.of(st.src_region), parts_[st.dst].recv.of(st.dst_region));
  }
  for (const CopyStep& st : entry_steps.outgoing) {
    add_pieces(out.outgoing, st, parts_[st.src].send.of(st.src_region), parts_[st.dst].recv.of(st.dst_region));
  }
  return out;
}

Task<const CompiledMember*> DescribedMemory::compile(Process& p, Rank me, std::span<const MatrixEntry> sends,
                                                     std::span<const MatrixEntry> receives,
                                                     const MemberSteps& entry_steps, ExchangeHooks& hooks) {
  co_await describe(p, me, sends, receives, hooks);
  for (const MatrixEntry& e : sends) co_await await_description(p, me, e.peer);
  for (const MatrixEntry& e : receives) co_await await_description(p, me, e.peer);
  Part& part = parts_[me];
  if (co_await claim(p, part.program)) {
    try {
      part.steps = pair_blocks(entry_steps);
    } catch (...) {
      part.program.store(kNone, std::memory_order_release);  // claim()'s partner
      throw;
    }
    part.member = CompiledMember{part.steps.incoming, part.steps.outgoing};
    part.program.store(kReady, std::memory_order_release);
  }
  co_return &part.member;
}

ExchangeMemory DescribedMemory::memory(Rank me, ExchangeHooks& hooks) const {
  const ExchangeMemory memory = hooks.memory();
  const Part& part = parts_[me];
  auto check = [&](const char* side, std::size_t got, std::uint64_t extent) {
    if (got < extent) {
      refuse(me, std::string("its ") + side + " region has " + std::to_string(got) +
                     " bytes, the blocks described in it reach byte " + std::to_string(extent));
    }
  };
  check("send", memory.send.size(), part.send.extent);
  check("receive", memory.recv.size(), part.recv.extent);
  return memory;
}

}  // namespace switchyard::schedulers::detail
