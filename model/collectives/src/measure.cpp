#include "switchyard/model/collectives/measure.hpp"

#include <algorithm>
#include <chrono>

#include "algorithm_state.hpp"
#include "partition_tree.hpp"
#include "switchyard/balanced_order.hpp"
#include "switchyard/model/collectives/collective_plan.hpp"
#include "switchyard/schedulers/payload.hpp"

namespace switchyard::model::collectives {
namespace {

namespace sch = switchyard::schedulers;

// One process's buffers: block r of send is the message me -> r (the root's in
// one-to-all; all-to-one's single message goes to the root), block r of recv
// the message r -> me (one-to-all: root -> me).
struct ProcessBuffers {
  std::vector<std::byte> send, recv;
  Rank root = 0;
  ProcessBuffers(Operation op, Rank p, Rank me, std::uint64_t L, std::uint64_t seed, Rank root_rank) : root(root_rank) {
    const std::uint64_t all = std::uint64_t{p} * L;
    const bool is_root = me == root;
    send.resize(op == Operation::all_to_one ? L : (op == Operation::all_to_all || is_root ? all : 0));
    recv.resize(op == Operation::one_to_all ? L : (op == Operation::all_to_all || is_root ? all : 0));
    for (std::uint64_t r = 0; r < send.size() / L; ++r) {
      sch::fill_payload(std::span(send).subspan(r * L, L), seed, me, op == Operation::all_to_one ? root : Rank(r));
    }
  }
  Rank source(Operation op, std::uint64_t block) const { return op == Operation::one_to_all ? root : Rank(block); }
  void poison(Operation op, Rank me, std::uint64_t L, std::uint64_t seed) {
    for (std::uint64_t r = 0; r < recv.size() / L; ++r) {
      sch::fill_poison(std::span(recv).subspan(r * L, L), seed, source(op, r), me);
    }
  }
  void verify(Operation op, Rank me, std::uint64_t L, std::uint64_t seed, const std::string& what) const {
    for (std::uint64_t r = 0; r < recv.size() / L; ++r) {
      const Rank src = source(op, r);
      const auto piece = std::span(recv).subspan(r * L, L);
      if (const auto bad = sch::first_wrong_byte(piece, seed, src, me)) {
        std::byte want{};
        sch::fill_payload(std::span(&want, 1), seed, src, me, *bad);
        throw sch::PayloadError(
            what, {src, me, *bad, L, static_cast<std::uint8_t>(want), static_cast<std::uint8_t>(piece[*bad])});
      }
    }
  }
};

}  // namespace

std::vector<std::vector<double>> measure_collectives(Runtime& rt, Operation op,
                                                     const std::vector<std::string>& algorithms, Rank processes,
                                                     std::uint64_t bytes, std::uint32_t repeat, std::uint32_t batch,
                                                     std::uint64_t seed, Rank root) {
  const std::size_t n = algorithms.size();
  std::vector<std::vector<double>> ms(n, std::vector<double>(repeat, 0.0));
  const std::uint32_t runs = std::max<std::uint32_t>(batch, 1);
  rt.run(processes, [&](Process& self) -> Task<void> {
    Communicator comm = self.world();
    const Rank me = comm.rank();
    std::vector<CollectivePlan> plans;
    for (const std::string& a : algorithms)
      plans.push_back(co_await CollectivePlan::create(comm, op, a, bytes, nullptr, root));
    ProcessBuffers buffers(op, processes, me, bytes, seed, root);
    std::vector<std::string> what;
    for (const std::string& a : algorithms)
      what.push_back(std::string(operation_name(op)) + " " + a + " on " + std::to_string(processes) +
                     " processes, L = " + std::to_string(bytes) + (root ? ", root " + std::to_string(root) : ""));
    for (std::uint32_t rep = 0; rep <= repeat; ++rep) {  // round 0 is untimed
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t a = balanced_order(n, rep, i);
        buffers.poison(op, me, bytes, seed);
        co_await comm.barrier();
        const auto start = std::chrono::steady_clock::now();
        for (std::uint32_t k = 0; k < (rep == 0 ? 1 : runs); ++k) co_await plans[a].run({buffers.send, buffers.recv});
        co_await comm.barrier();
        const auto stop = std::chrono::steady_clock::now();
        if (me == 0 && rep > 0) ms[a][rep - 1] = std::chrono::duration<double, std::milli>(stop - start).count() / runs;
        buffers.verify(op, me, bytes, seed, what[a]);
      }
    }
  });
  return ms;
}

namespace {

// The payload: send, recv, and the 2-level and butterfly staging, or the
// root's p blocks, everyone's one and each leader's range.
double payload_bytes(Operation op, const std::string& algorithm, Rank processes, std::uint64_t bytes) {
  const double p = processes, all = p * static_cast<double>(bytes);
  if (op == Operation::all_to_all)
    return p * all * (algorithm == "1-lev-dir" || algorithm.starts_with("1-lev-perm") ? 2 : 5);
  if (algorithm == "1-lev-our-br") return all + all + (p - 1) * all;  // the long message everywhere
  double blocks = 2 * p;
  const detail::TreeShape shape = detail::tree_shape(algorithm);
  for (Rank r = 1; r < processes; ++r) {
    const std::uint32_t range = detail::tree_role(shape, processes, r).range;
    if (range > 1) blocks += range;
  }
  return blocks * static_cast<double>(bytes);
}

// Sends and receives in flight at once over all processes: 1-lev-dir posts
// its p - 1 of each together, a 2-level algorithm the C of each of a grid row
// (or R of a column, C >= R), a tree's processes one per child, the others one
// partner's at a time.
double posted_messages(Operation op, const std::string& algorithm, Rank processes) {
  const double p = processes;
  if (op != Operation::all_to_all) return 4 * p;
  if (algorithm == "1-lev-dir") return 2 * p * (p - 1);
  if (algorithm.starts_with("2-lev")) return 2 * p * detail::grid_of(processes).cols;
  return 2 * p;
}

// Whether making the plan splits the communicator (every level of a tree,
// the grid's rows and columns): each split is an allgather of every member's
// (color, key, id), p^2 x 24 bytes held at once.
bool splits(Operation op, const std::string& algorithm) {
  return op != Operation::all_to_all || algorithm.starts_with("2-lev");
}

// The costs beside the payload, from the peak RSS of collective jobs here. A
// posted message: the tickets in the plan and the runtime's record until it
// completes, about 170 bytes in the 1-lev-dir jobs (less the model's
// predictions, which the command makes), counted at 1.5 times that.
constexpr double kBytesPerPostedMessage = 256;
// A pair of processes, in a split: the 24 bytes of each member's allgather
// result, all of which may be held at once (fewer are, in the peaks seen).
constexpr double kBytesPerSplitPair = 24;
// A process: the runtime's share (its frame, mailbox, route), its plan and
// its buffers' headers, a few KB beside the butterfly's buffers and
// predictions; counted at 8 KiB.
constexpr double kBytesPerProcess = 8192;

}  // namespace

double memory_needed(Operation op, const std::string& algorithm, Rank processes, std::uint64_t bytes) {
  const double p = processes;
  return payload_bytes(op, algorithm, processes, bytes) +
         posted_messages(op, algorithm, processes) * kBytesPerPostedMessage +
         (splits(op, algorithm) ? p * p * kBytesPerSplitPair : 0) + p * kBytesPerProcess;
}

}  // namespace switchyard::model::collectives
