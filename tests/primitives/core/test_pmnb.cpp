// PMNB on edge-disjoint spanning trees and its dual PMNA, run in the slot
// simulator (all-port), against the bounds of section 3.3 for many M on several networks.
#include <gtest/gtest.h>
#include <switchyard/errors.hpp>

#include <random>

#include "switchyard/primitives/pmnb.hpp"
#include "switchyard/primitives/random_graph.hpp"
#include "switchyard/primitives/slot_simulator.hpp"
#include "switchyard/primitives/slot_task.hpp"

namespace sp = switchyard::primitives;

namespace {

sp::VirtualNetwork random_connected(sp::Node n) {
  return sp::random_connected_graph(n, 2 * n, static_cast<std::uint64_t>(n));
}

std::vector<sp::VirtualNetwork> networks() {
  std::vector<sp::VirtualNetwork> out = {sp::VirtualNetwork::hypercube(4),     sp::VirtualNetwork::hypercube(6),
                                         sp::VirtualNetwork::torus({4, 4}),    sp::VirtualNetwork::torus({5, 7}),
                                         sp::VirtualNetwork::torus({3, 3, 4}), sp::VirtualNetwork::complete(8),
                                         sp::VirtualNetwork::complete(33)};
  for (sp::Node n : {30, 40, 50, 60}) out.push_back(random_connected(n));
  return out;
}

// M broadcasters drawn with repetition (a node may broadcast several packets).
std::vector<sp::Node> draw(sp::Node n, std::int64_t m, std::mt19937_64& rng) {
  std::vector<sp::Node> out;
  for (std::int64_t i = 0; i < m; ++i) out.push_back(std::uniform_int_distribution<sp::Node>(0, n - 1)(rng));
  return out;
}

std::vector<std::int64_t> packet_counts(sp::Node n) {
  return {1, 2, n / 4 + 1, n / 2, n, 2 * std::int64_t{n}, 3 * std::int64_t{n}};
}

}  // namespace

TEST(Pmnb, SlotsLieBetweenTheBounds) {
  // Full duplex: max(M/2k, delta) <= T <= M/k + Lbar + 2 delta; half duplex:
  // the same upper bound (the paper: the algorithm works there too), max(M/k, delta) below.
  std::mt19937_64 rng(21);
  for (auto duplex : {sp::Duplex::full, sp::Duplex::half}) {
    for (const auto& g : networks()) {
      const auto trees = sp::edge_disjoint_spanning_trees(g);
      for (std::int64_t m : packet_counts(g.size())) {
        const auto plan = sp::pmnb_plan(g, sp::pmnb_packets(g.size(), draw(g.size(), m, rng)), trees, duplex);
        const auto result = sp::simulate(g, {sp::Ports::all_port, duplex}, plan.packets, plan.schedule);
        EXPECT_EQ(result.deliveries, plan.packets.deliveries());
        EXPECT_LE(result.slots, plan.upper_bound()) << g.name() << " M=" << m;
        EXPECT_GE(result.slots, duplex == sp::Duplex::full ? plan.lower_bound_full() : plan.lower_bound_half())
            << g.name() << " M=" << m;
      }
    }
  }
}

TEST(Pmna, ReversedScheduleCombinesInTheSameSlots) {
  std::mt19937_64 rng(23);
  for (const auto& g : networks()) {
    const auto trees = sp::edge_disjoint_spanning_trees(g);
    for (std::int64_t m : {std::int64_t{1}, std::int64_t{g.size()} / 2, 2 * std::int64_t{g.size()}}) {
      const auto nodes = draw(g.size(), m, rng);
      for (auto duplex : {sp::Duplex::full, sp::Duplex::half}) {
        const sp::LinkModel model{sp::Ports::all_port, duplex};
        const auto broadcast = sp::pmnb_plan(g, sp::pmnb_packets(g.size(), nodes), trees, duplex);
        const auto accumulate = sp::pmna_plan(g, sp::pmna_packets(g.size(), nodes), trees, duplex);
        const auto b = sp::simulate(g, model, broadcast.packets, broadcast.schedule);
        const auto a = sp::simulate(g, model, accumulate.packets, accumulate.schedule);
        EXPECT_EQ(a.slots, b.slots) << g.name();
        EXPECT_EQ(a.deliveries, accumulate.packets.deliveries());
        EXPECT_LE(a.slots, accumulate.upper_bound());
      }
    }
  }
}

TEST(Pmnb, PrefixAndTreeChoice) {
  const auto g = sp::VirtualNetwork::torus({8, 8});
  const auto trees = sp::edge_disjoint_spanning_trees(g);
  std::vector<sp::Node> all(64);
  for (sp::Node v = 0; v < 64; ++v) all[static_cast<std::size_t>(v)] = v;
  const auto plan = sp::pmnb_plan(g, sp::pmnb_packets(64, all), trees, sp::Duplex::full);
  EXPECT_EQ(plan.prefix_slots, 2 * 8);  // up and down a BFS tree of depth = radius = 8
  EXPECT_EQ(plan.packets.size(), 64 + 2 * 63);  // the task's packets, then two control packets per tree link
  std::int64_t total = 0;
  for (auto n : plan.packets_per_tree) total += n;
  EXPECT_EQ(total, 64);
  // The two combs have equal diameters: an even split.
  EXPECT_EQ(plan.packets_per_tree, (std::vector<std::int64_t>{32, 32}));
  // The broadcast phase starts once the prefix is done.
  for (std::int32_t t = 0; t < plan.prefix_slots; ++t) {
    for (const auto& x : plan.schedule.slot(t)) EXPECT_GE(x.packet, 64);
  }
}

TEST(Pmnb, RejectsWrongInput) {
  const auto g = sp::VirtualNetwork::hypercube(3);
  const auto trees = sp::edge_disjoint_spanning_trees(g);
  const std::vector<sp::Node> one{0};
  EXPECT_THROW(sp::pmnb_plan(g, sp::pmna_packets(8, one), trees, sp::Duplex::full), switchyard::InvalidArgument);
  EXPECT_THROW(sp::pmna_plan(g, sp::pmnb_packets(8, one), trees, sp::Duplex::full), switchyard::InvalidArgument);
  EXPECT_THROW(sp::pmnb_plan(g, sp::pmnb_packets(4, one), trees, sp::Duplex::full), switchyard::InvalidArgument);
  sp::PacketSet partial(8, false);
  partial.add(0, 5);
  EXPECT_THROW(sp::pmnb_plan(g, partial, trees, sp::Duplex::full), switchyard::InvalidArgument);
  auto broken = trees;
  broken.trees[0].pop_back();
  EXPECT_THROW(sp::pmnb_plan(g, sp::pmnb_packets(8, one), broken, sp::Duplex::full), switchyard::InvalidArgument);
}

TEST(Pmnb, RegistryRoutesPartialBroadcastsToTheTrees) {
  for (const auto& g : {sp::VirtualNetwork::torus({6, 6}), sp::VirtualNetwork::hypercube(5), random_connected(40)}) {
    for (auto task_kind : {sp::TaskKind::pmnb, sp::TaskKind::pmna}) {
      for (auto duplex : {sp::Duplex::full, sp::Duplex::half}) {
        const sp::LinkModel model{sp::Ports::all_port, duplex};
        sp::TaskOptions options;
        options.active_fraction = 0.4;
        const auto task = sp::make_task(task_kind, g, options);
        const auto result = sp::route(g, model, task);
        EXPECT_NE(result.algorithm.find("spanning trees"), std::string::npos) << result.algorithm;
        ASSERT_TRUE(result.packets.has_value());
        ASSERT_EQ(result.bounds.size(), 2u);
        const auto simulated = sp::simulate(g, model, *result.packets, result.schedule);
        EXPECT_LE(simulated.slots, result.bounds[0].slots) << g.name();
        EXPECT_GE(simulated.slots, result.bounds[1].slots) << g.name();
        EXPECT_EQ(simulated.deliveries, result.packets->deliveries());
      }
    }
  }
}
