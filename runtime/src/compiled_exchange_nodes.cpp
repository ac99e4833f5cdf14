// A compiled exchange across nodes (compiled_exchange.hpp): within a node the
// cores copy as on one; a message between nodes is packed by its sender's
// core straight from the sender's buffer into the staging buffer of its
// receiver's node, the leaders of the two nodes move that buffer as one
// message per node pair and run, and the receiver's core unpacks it straight
// into the receiver's buffer.

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "compiled_exchange_state.hpp"
#include "job.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/detail/pooled_array.hpp"
#include "worker.hpp"

namespace switchyard::detail {

namespace {

inline constexpr LibraryKey kStagingLibrary{"switchyard.copy_exchange.staging"};

// A step between this node and another, with the other node.
struct CrossingStep {
  std::uint32_t node;
  CopyStep step;
};

// Lays out one buffer per other node: its pieces in staging_order, which
// both ends of the pair derive alike from the same pieces.
// Appends each piece, at its place, to the list of the worker of `local(step)`.
template <class Local>
void lay_out(std::vector<CrossingStep>& crossing, const std::vector<std::uint32_t>& nodes, NodeStagingPool& pool,
             std::vector<StagingBuffer>& buffers, std::vector<std::vector<StagedPiece>>& by_worker, Local&& local) {
  std::sort(crossing.begin(), crossing.end(), [](const CrossingStep& a, const CrossingStep& b) {
    return a.node != b.node ? a.node < b.node : staging_order(a.step, b.step);
  });
  std::vector<std::uint64_t> filled(nodes.size(), 0);
  for (const CrossingStep& c : crossing) {
    const auto buffer =
        static_cast<std::uint32_t>(std::lower_bound(nodes.begin(), nodes.end(), c.node) - nodes.begin());
    const auto [worker, piece] = local(c.step, buffer, filled[buffer]);
    by_worker[worker].push_back(piece);
    filled[buffer] += std::uint64_t{c.step.count} * c.step.bytes;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (filled[i] > 0) buffers[i] = pool.take(filled[i]);
  }
}

}  // namespace

std::unique_ptr<NodeStaging> CompiledEngine::make_staging(CompiledExchangeState& s, const Group& g, const Job& job) {
  const Membership& members = g.members();
  auto route = [&](Rank r) -> const Route& { return job.routes()[members.to_job(r)]; };
  auto made = std::make_unique<NodeStaging>(job.staging_pool());
  NodeStaging& st = *made;
  st.leader = s.leader;
  std::vector<CrossingStep> out, in;
  std::map<std::uint32_t, Rank> leaders;  // other node -> its lowest participant
  for (Rank r = 0; r < s.participants(); ++r) {
    const std::uint32_t node = route(r).node;
    if (node != job.node() && !leaders.count(node)) leaders[node] = r;
  }
  for (std::uint32_t w = 0; w < s.cores(); ++w) {
    for (Process* q : s.program(w).members) {
      const CompiledMember& part = *s.slot(members.to_comm(q->rank())).part;
      for (const CopyStep& step : part.outgoing) {
        if (step.bytes > 0 && route(step.dst).node != job.node()) out.push_back({route(step.dst).node, step});
      }
      for (const CopyStep& step : part.incoming) {
        if (step.bytes > 0 && route(step.src).node != job.node()) in.push_back({route(step.src).node, step});
      }
    }
  }
  for (const auto& entry : leaders) {
    // Not a structured binding: Clang 14 cannot capture one in a lambda.
    const auto on_node = [node = entry.first](const CrossingStep& c) { return c.node == node; };
    if (std::none_of(out.begin(), out.end(), on_node) && std::none_of(in.begin(), in.end(), on_node)) continue;
    st.nodes.push_back(entry.first);
    st.leaders.push_back(entry.second);
  }
  st.out.resize(st.nodes.size());
  st.in.resize(st.nodes.size());
  st.pack.resize(s.cores());
  st.unpack.resize(s.cores());
  lay_out(out, st.nodes, job.staging_pool(), st.out, st.pack,
          [&](const CopyStep& step, std::uint32_t buffer, std::uint64_t at) {
            return std::pair{route(step.src).core, staged_end(step, true, buffer, at)};
          });
  lay_out(in, st.nodes, job.staging_pool(), st.in, st.unpack,
          [&](const CopyStep& step, std::uint32_t buffer, std::uint64_t at) {
            return std::pair{route(step.dst).core, staged_end(step, false, buffer, at)};
          });
  for (std::uint32_t w = 0; w < s.cores(); ++w) {
    if (!st.pack[w].empty() || !st.unpack[w].empty() || w == s.leader_core) st.staging_cores.push_back(w);
  }
  return made;
}

// Every core of the node with participants has published its members' steps
// (this is their first run); the first to get here lays the staging out.
Task<void> CompiledEngine::lay_out_staging(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                           std::uint64_t run) {
  for (std::uint32_t w = 0; w < s.cores(); ++w) {
    if (s.program(w).participants == 0) continue;
    co_await WatchAwaiter(p, s.progress(w).published, run, "the other cores' first run (compiled exchange)");
  }
  const std::lock_guard lock(s.staging_mutex);
  if (!s.staging) s.staging = make_staging(s, g, p.job_);
  s.program(core).staging = s.staging.get();
}

// This core's pieces' member addresses, looked up through the slots once
// after a run in which a member of the core moved its regions (its members'
// alone: the other end of each piece is a staging buffer).
void CompiledEngine::resolve_staged(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint32_t core) {
  if (prog.staged_with == prog.regions_moves) return;
  const NodeStaging& st = *prog.staging;
  prog.packed_from.resize(st.pack[core].size());  // sized on the first run, kept after
  for (std::size_t i = 0; i < st.pack[core].size(); ++i) {
    prog.packed_from[i] = member_address(s, st.pack[core][i], true);
  }
  prog.unpacked_into.resize(st.unpack[core].size());
  for (std::size_t i = 0; i < st.unpack[core].size(); ++i) {
    prog.unpacked_into[i] = member_address(s, st.unpack[core][i], false);
  }
  prog.staged_with = prog.regions_moves;
}

void CompiledEngine::pack(const CompiledCoreProgram& prog, std::uint32_t core) {
  NodeStaging& st = *prog.staging;
  for (std::size_t i = 0; i < st.pack[core].size(); ++i) {
    const StagedPiece& piece = st.pack[core][i];
    copy_strided(st.out[piece.buffer].data() + piece.buffer_offset, piece.bytes, prog.packed_from[i],
                 piece.member_stride, piece.count, piece.bytes);
  }
}

void CompiledEngine::unpack(const CompiledCoreProgram& prog, std::uint32_t core) {
  NodeStaging& st = *prog.staging;
  for (std::size_t i = 0; i < st.unpack[core].size(); ++i) {
    const StagedPiece& piece = st.unpack[core][i];
    copy_strided(prog.unpacked_into[i], piece.member_stride, st.in[piece.buffer].data() + piece.buffer_offset,
                 piece.bytes, piece.count, piece.bytes);
  }
}

Task<void> CompiledEngine::lead(CompiledExchangeState& s, Communicator comm, std::uint64_t run) {
  Process& p = comm.process();
  const std::uint32_t core = p.worker_.index();
  CompiledCoreProgram& prog = s.program(core);
  if (!prog.staging) co_await lay_out_staging(s, comm.group(), p, core, run);
  NodeStaging& st = *prog.staging;
  // The last run's pieces are all unpacked: this run's may land.
  for (std::uint32_t w : st.staging_cores) {
    co_await WatchAwaiter(p, s.progress(w).copied, run - 1, "the last run's unpacking (compiled exchange)");
  }
  // One tag for every exchange on the communicator: keys are this node's
  // own, but every member runs the same exchanges in the same order, so the
  // leaders' messages pair up in that order (messages between two processes
  // on one context and tag are received in the order they were sent).
  const Communicator staging = comm.library(kStagingLibrary);
  constexpr Tag tag = 0;
  // The tickets live in this frame: a cancelled job unwinds them here, on
  // this core, as any process's (a send waits until MPI has let go of the
  // buffer, a receive is withdrawn). From the frame cache: no allocation.
  PooledArray<RecvTicket> recvs(st.nodes.size());
  PooledArray<SendTicket> sends(st.nodes.size());
  for (std::uint32_t w : st.staging_cores) {
    co_await WatchAwaiter(p, s.progress(w).packed, run, "the other cores' packing (compiled exchange)");
  }
  // Sends before receives. A receive posted earlier lets this core, at its
  // next poll, pull a large piece from another node (MPI's single copy, on
  // the receiver's core) before this node's sends are out: that node then
  // waits the whole copy long before it can pull, and the two pulls, which
  // could run at once on the two nodes, run one after the other.
  for (std::size_t i = 0; i < st.nodes.size(); ++i) {
    if (!st.out[i].empty()) sends.emplace(i, [&] { return staging.post_send(st.leaders[i], st.out[i].bytes(), tag); });
  }
  for (std::size_t i = 0; i < st.nodes.size(); ++i) {
    if (!st.in[i].empty())
      recvs.emplace(i, [&] { return staging.post_recv_into(st.leaders[i], st.in[i].bytes(), tag); });
  }
  for (RecvTicket& t : recvs) {
    if (t.valid()) co_await p.wait(t);
  }
  for (SendTicket& t : sends) {
    if (t.valid()) co_await p.wait(t);
  }
  s.exchanged.store(run, std::memory_order_release);  // pairs with the cores' acquire before they unpack
  ring(p, st.staging_cores);
}

}  // namespace switchyard::detail
