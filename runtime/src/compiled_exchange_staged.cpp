// Pairs of cores through staging areas (compiled_exchange.hpp): where one
// run's pieces from one core's members to another core's come to a few
// kilobytes, the sending core packs them into an area of its own when it
// publishes, and the receiving core unpacks them from there. A run then
// crosses between the two cores once (the sender's `published`), not twice:
// pulled straight from the senders' buffers, the receiver's copies had to be
// over (its `copied`) before the senders' runs could end, since their
// buffers are theirs again then. The pieces are copied twice, which costs
// less than that second crossing while they are few. Pieces smaller than a
// cache line gain more: packed, they cross in whole lines, where each pulled
// piece took a line of its own (a line the sender has just written is a miss
// for the other core), so a pair of them is staged up to a larger size.

#include <algorithm>
#include <cstring>
#include <vector>

#include "compiled_exchange_state.hpp"
#include "job.hpp"
#include "worker.hpp"

namespace switchyard::detail {

namespace {

constexpr std::uint64_t kStagedPairBytes = 4096;  // one run's pieces of a staged pair, at most
// ... or, where its pieces are smaller than a cache line on average, at most
// this: packed, they cross in whole lines, where pulled each takes a line.
constexpr std::uint64_t kStagedSmallPiecesBytes = 64 * 1024;
constexpr std::uint64_t kSmallPieceBytes = 64;
// Packing without comparing (pack_staged), the runs until a pair compares again.
constexpr std::uint64_t kRunsBetweenComparisons = 32;

// Per other core of the node, the steps between it and this core's members
// in one direction: `outgoing` (this core sends) or not.
std::vector<std::vector<CopyStep>> steps_by_core(CompiledExchangeState& s, const Group& g, const Job& job,
                                                 const CompiledCoreProgram& prog, std::uint32_t core, bool outgoing) {
  const Membership& members = g.members();
  std::vector<std::vector<CopyStep>> by_core(s.cores());
  for (const Process* q : prog.members) {
    const CompiledMember& part = *s.slot(members.to_comm(q->rank())).part;
    for (const CopyStep& st : outgoing ? part.outgoing : part.incoming) {
      const Rank other = outgoing ? st.dst : st.src;
      if (st.bytes == 0 || other >= s.participants()) continue;  // collect_steps refuses the latter
      const Route& route = job.routes()[members.to_job(other)];
      if (route.node == job.node() && route.core != core) by_core[route.core].push_back(st);
    }
  }
  return by_core;
}

// A pair of this core with `other`, its pieces in the layout both ends
// derive alike, or none if they come to more than kStagedPairBytes (and, for
// pieces of less than kSmallPieceBytes on average, kStagedSmallPiecesBytes).
std::optional<StagedPair> lay_out_pair(std::vector<CopyStep>& steps, std::uint32_t other, bool sender) {
  std::uint64_t bytes = 0, pieces = 0;
  for (const CopyStep& st : steps) {
    bytes += std::uint64_t{st.count} * st.bytes;
    pieces += st.count;
  }
  const bool small_pieces = bytes <= kStagedSmallPiecesBytes && bytes < kSmallPieceBytes * pieces;
  if (bytes == 0 || (bytes > kStagedPairBytes && !small_pieces)) return std::nullopt;
  std::sort(steps.begin(), steps.end(), staging_order);
  StagedPair pair;
  pair.core = other;
  pair.bytes = bytes;
  std::uint64_t at = 0;
  for (const CopyStep& st : steps) {
    pair.pieces.push_back(staged_end(st, sender, 0, at));
    at += std::uint64_t{st.count} * st.bytes;
  }
  pair.member_at.resize(pair.pieces.size());
  pair.piece_bytes = one_piece_size(steps);
  if (sender) pair.area = std::make_unique<StagedPair::Line[]>(2 * ((bytes + kCacheLine - 1) / kCacheLine));
  return pair;
}

// Where a pair's pieces are in its members, looked up again after this
// core's members moved their regions.
void resolve_members(CompiledExchangeState& s, StagedPair& pair, std::uint32_t core, bool sender) {
  const std::uint64_t moves = s.program(core).regions_moves;
  if (pair.resolved_with == moves) return;
  for (std::size_t i = 0; i < pair.pieces.size(); ++i) pair.member_at[i] = member_address(s, pair.pieces[i], sender);
  pair.resolved_with = moves;
}

}  // namespace

void CompiledEngine::stage_pairs(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core) {
  CompiledCoreProgram& prog = s.program(core);
  prog.staged_out.clear();
  prog.staged_in.clear();
  prog.traced = p.trace_ != nullptr;
  const CopyOrder o = s.options().order;
  if (s.spans_nodes || s.options().side != CopySide::receiver || prog.traced ||
      (o != CopyOrder::any && o != CopyOrder::phases)) {
    return;
  }
  for (const bool sender : {true, false}) {
    std::vector<std::vector<CopyStep>> by_core = steps_by_core(s, g, p.job_, prog, core, sender);
    for (std::uint32_t other = 0; other < s.cores(); ++other) {
      if (std::optional<StagedPair> pair = lay_out_pair(by_core[other], other, sender)) {
        (sender ? prog.staged_out : prog.staged_in).push_back(std::move(*pair));
      }
    }
  }
}

void CompiledEngine::restage_for_job(CompiledCoreProgram& prog) noexcept {
  for (auto* pairs : {&prog.staged_out, &prog.staged_in}) {
    for (StagedPair& pair : *pairs) {
      pair.resolved_with = ~std::uint64_t{0};
      pair.from_area = nullptr;
      pair.copied_seen = 0;
    }
  }
}

StagedPair* CompiledEngine::staging_busy(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint64_t run) {
  if (run <= 2) return nullptr;
  for (StagedPair& pair : prog.staged_out) {
    if (pair.copied_seen >= run - 2) continue;
    // A core publishes a run only after it has copied the one before
    // (publish_core), so a receiver seen to publish run - 1 (as a core that
    // also receives from it sees, waiting for its pieces) has unpacked run -
    // 2: no load of its `copied`, a line it has written since.
    if (prog.seen_published[pair.core] + 1 >= run) continue;
    // Acquire: pairs with the receiver's release of `copied`; its unpacking
    // of the half this run writes again is over.
    pair.copied_seen = s.progress(pair.core).copied.load(std::memory_order_acquire);
    if (pair.copied_seen < run - 2) return &pair;
  }
  return nullptr;
}

Task<void> CompiledEngine::wait_staging_free(Process& p, CompiledExchangeState& s, CompiledCoreProgram& prog,
                                             std::uint64_t run) {
  while (StagedPair* busy = staging_busy(s, prog, run)) {
    co_await WatchAwaiter(p, s.progress(busy->core).copied, run - 2, "another core's unpacking (compiled exchange)");
  }
}

// A pair's pieces are read through locals: the copies store bytes, which
// may alias anything, and would otherwise make each piece load the vectors'
// pointers again (as CompiledEngine::copy_resolved says). Pieces all of one
// size (StagedPair::piece_bytes) are copied with that size fixed.
namespace {

// Packing (into a half) with `compare`, a single piece that holds what its
// half held two runs ago is left alone: its lines stay in the receiving
// core's cache, where a store would take them back and make it miss on each
// of them again. Packing returns the pieces it copied.
template <bool Pack, std::uint64_t Bytes, class Byte>
std::size_t copy_pieces_of(Byte* half, std::byte* const* member_at, std::size_t n, bool compare) {
  std::size_t copied = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Byte* const place = half + i * Bytes;
    if constexpr (Pack) {
      if (!compare || !same_bytes(place, member_at[i], Bytes)) {
        copy_bytes(place, member_at[i], Bytes);
        ++copied;
      }
    } else {
      copy_bytes(member_at[i], place, Bytes);
    }
  }
  return copied;
}

// One piece of a pair of any sizes: up to kSmallStepBytes without a call (a
// halo's pieces of a few doubles), larger ones through memcpy.
inline void copy_piece(std::byte* to, const std::byte* from, std::uint64_t bytes) noexcept {
  if (bytes <= kSmallStepBytes) {
    copy_small_bytes(to, from, bytes);
  } else {
    copy_bytes(to, from, bytes);
  }
}

template <bool Pack, class Byte>
std::size_t copy_pieces_of_any_size(Byte* half, const StagedPair& pair, bool compare) {
  const StagedPiece* const pieces = pair.pieces.data();
  std::byte* const* const member_at = pair.member_at.data();
  const std::size_t n = pair.pieces.size();
  std::size_t copied = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const StagedPiece& piece = pieces[i];
    Byte* const place = half + piece.buffer_offset;
    if constexpr (Pack) {
      if (piece.count != 1) {
        copy_strided(place, piece.bytes, member_at[i], piece.member_stride, piece.count, piece.bytes);
        ++copied;
      } else if (!compare || !same_bytes(place, member_at[i], piece.bytes)) {
        copy_piece(place, member_at[i], piece.bytes);
        ++copied;
      }
    } else if (piece.count == 1) {
      copy_piece(member_at[i], place, piece.bytes);
    } else {
      copy_strided(member_at[i], piece.member_stride, place, piece.bytes, piece.count, piece.bytes);
    }
  }
  return copied;
}

// Asks for every line of `bytes` from `first` at once, for reading or (`Write`)
// for writing: lines another core holds then cross together, rather than
// each when a copy reaches it.
template <bool Write>
void ask_for_lines(const std::byte* first, std::uint64_t bytes) {
  for (std::uint64_t at = 0; at < bytes; at += kCacheLine) __builtin_prefetch(first + at, Write ? 1 : 0);
}

// A pair's pieces of one run, into its half (`Pack`, comparing or not; the
// pieces copied returned) or out of it.
template <bool Pack, class Byte>
std::size_t copy_pieces(Byte* half, const StagedPair& pair, bool compare = false) {
  switch (pair.piece_bytes) {
    case 8:
      return copy_pieces_of<Pack, 8>(half, pair.member_at.data(), pair.member_at.size(), compare);
    case 16:
      return copy_pieces_of<Pack, 16>(half, pair.member_at.data(), pair.member_at.size(), compare);
    default:
      return copy_pieces_of_any_size<Pack>(half, pair, compare);
  }
}

}  // namespace

void CompiledEngine::pack_staged(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint32_t core,
                                 std::uint64_t run) {
  for (StagedPair& pair : prog.staged_out) {
    resolve_members(s, pair, core, true);
    // Comparing saves the receiver its misses where the pieces mostly stay as
    // they were (a plan run again on the same messages). Where most of them
    // changed (fresh data every run: a halo, a loop of updates), it costs a
    // load per piece and saves nothing: the pair copies without comparing,
    // and compares again some runs later, in case its data stopped changing.
    // A job's first two runs decide nothing: each fills a half that holds an
    // earlier job's pieces, or none.
    const bool compare = run >= pair.compare_from;
    const std::size_t copied = copy_pieces<true>(pair.half(run), pair, compare);
    if (compare && run > 2) pair.compare_from = 2 * copied > pair.pieces.size() ? run + kRunsBetweenComparisons : 0;
  }
}

void CompiledEngine::claim_next_halves(const CompiledCoreProgram& prog, std::uint64_t run) {
  for (const StagedPair& pair : prog.staged_out) {
    // A pair that compares leaves the lines of unchanged pieces with their
    // receiver, which would miss on every line taken here.
    if (prog.seen_published[pair.core] < run || run + 1 >= pair.compare_from) continue;
    ask_for_lines<true>(pair.half(run + 1), pair.bytes);
  }
}

void CompiledEngine::unpack_staged(CompiledExchangeState& s, StagedPair& pair, std::uint32_t core, std::uint64_t run) {
  resolve_members(s, pair, core, false);
  if (!pair.from_area) {
    // The sender's program, compiled before it first published (acquired
    // already), keeps its area until the job's exchange goes.
    const StagedPair* from = staged_with(s.program(pair.core).staged_out, core);
    SWITCHYARD_ASSERT(from && from->bytes == pair.bytes);  // both ends laid the pair out alike
    pair.from_area = reinterpret_cast<const std::byte*>(from->area.get());
  }
  // Every line of the half was just written by the other core, so each is a
  // miss: asked for all at once, they cross together rather than as the
  // copies reach them (measured on the benchmarks page, stop 68).
  const std::byte* const half = pair.from_area + pair.half_offset(run);
  ask_for_lines<false>(half, pair.bytes);
  copy_pieces<false>(half, pair);
}

}  // namespace switchyard::detail
