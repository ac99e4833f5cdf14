#include "switchyard/collectives/measure.hpp"

#include <algorithm>
#include <chrono>

#include "partition_tree.hpp"
#include "switchyard/balanced_order.hpp"
#include "switchyard/collectives/collective_plan.hpp"
#include "switchyard/schedulers/payload.hpp"

namespace switchyard::collectives {
namespace {

namespace sch = switchyard::schedulers;

// One process's buffers: block r of send is the message me -> r (the root's in
// one-to-all; all-to-one's single message goes to the root), block r of recv
// the message r -> me (one-to-all: root -> me).
struct ProcessBuffers {
  std::vector<std::byte> send, recv;
  Rank root = 0;
  ProcessBuffers(Operation op, Rank p, Rank me, std::uint64_t L, std::uint64_t seed, Rank root_rank)
      : root(root_rank) {
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
        throw sch::PayloadError(what, {src, me, *bad, L, static_cast<std::uint8_t>(want),
                                       static_cast<std::uint8_t>(piece[*bad])});
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
    for (const std::string& a : algorithms) plans.push_back(co_await CollectivePlan::create(comm, op, a, bytes, nullptr, root));
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

std::uint64_t memory_needed(Operation op, const std::string& algorithm, Rank processes, std::uint64_t bytes) {
  const std::uint64_t p = processes, all = p * bytes;
  if (op == Operation::all_to_all) {  // send, recv, and the 2-level and butterfly staging
    return p * all * (algorithm == "1-lev-dir" || algorithm.starts_with("1-lev-perm") ? 2 : 5);
  }
  if (algorithm == "1-lev-our-br") return all + p * bytes + (p - 1) * all;  // the long message everywhere
  // The root's p blocks, everyone's one, and each leader's range.
  std::uint64_t blocks = 2 * p;
  const detail::TreeShape shape = detail::tree_shape(algorithm);
  for (Rank r = 1; r < processes; ++r) {
    const std::uint32_t range = detail::tree_role(shape, processes, r).range;
    if (range > 1) blocks += range;
  }
  return blocks * bytes;
}

}  // namespace switchyard::collectives
