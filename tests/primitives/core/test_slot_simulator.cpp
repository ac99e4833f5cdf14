// The slot simulator and the slot algorithms: hand-made schedules accepted or
// rejected with the reason; every task's algorithm on several networks and
// link models legal and complete, at its stated optimum where it claims one.
#include <gtest/gtest.h>
#include <switchyard/errors.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "switchyard/primitives/slot_algorithms.hpp"
#include "switchyard/primitives/slot_simulator.hpp"

namespace sp = switchyard::primitives;
using sp::Duplex;
using sp::Node;
using sp::Ports;

namespace {

constexpr sp::LinkModel kModels[] = {{Ports::one_port, Duplex::full},
                                     {Ports::one_port, Duplex::half},
                                     {Ports::all_port, Duplex::full},
                                     {Ports::all_port, Duplex::half}};

// The message of the IllegalSchedule that simulating `schedule` throws.
std::string rejection(const sp::VirtualNetwork& g, sp::LinkModel m, const sp::PacketSet& packets,
                      const sp::SlotSchedule& schedule) {
  try {
    (void)sp::simulate(g, m, packets, schedule);
  } catch (const sp::IllegalSchedule& e) {
    return e.what();
  }
  ADD_FAILURE() << "schedule accepted";
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A path 0 - 1 - 2 and one packet from 0 to 2.
struct PathCase {
  sp::VirtualNetwork g = sp::VirtualNetwork::tree(3, 1);
  sp::PacketSet packets{3, false};
  PathCase() { packets.add(0, 2); }
};

}  // namespace

TEST(SlotSimulator, StoreAndForwardAlongAPath) {
  PathCase c;
  sp::SlotSchedule s;
  s.add(0, {0, 1, 0});
  s.add(1, {1, 2, 0});
  const auto r = sp::simulate(c.g, {}, c.packets, s);
  EXPECT_EQ(r.slots, 2);
  EXPECT_EQ(r.transmissions, 2);
  EXPECT_EQ(r.deliveries, 1);
}

TEST(SlotSimulator, RejectsForwardingInTheSlotOfArrival) {
  PathCase c;
  sp::SlotSchedule s;
  s.add(0, {0, 1, 0});
  s.add(0, {1, 2, 0});
  EXPECT_EQ(rejection(c.g, {}, c.packets, s),
            "slot 0: node 1 -> node 2 (packet 0): the sender does not hold the packet (it is in a link)");
}

TEST(SlotSimulator, RejectsMissingLinkAndIncompleteDelivery) {
  PathCase c;
  sp::SlotSchedule jump;
  jump.add(0, {0, 2, 0});
  EXPECT_TRUE(contains(rejection(c.g, {}, c.packets, jump), "no such link in tree:1"))
      << rejection(c.g, {}, c.packets, jump);
  sp::SlotSchedule half_way;
  half_way.add(0, {0, 1, 0});
  EXPECT_EQ(rejection(c.g, {}, c.packets, half_way), "after 1 slots: node 2 lacks packet 0");
}

TEST(SlotSimulator, PortAndDuplexLimits) {
  // Complete graph of 3; node 0 broadcasts to 1 and 2 in one slot: all-port only.
  const auto g = sp::VirtualNetwork::complete(3);
  sp::PacketSet bcast(3, false);
  const Node root = 0, dests[] = {1, 2};
  bcast.add(std::span(&root, 1), dests);
  sp::SlotSchedule both;
  both.add(0, {0, 1, 0});
  both.add(0, {0, 2, 0});
  EXPECT_EQ(sp::simulate(g, {Ports::all_port, Duplex::full}, bcast, both).slots, 1);
  EXPECT_EQ(rejection(g, {Ports::one_port, Duplex::full}, bcast, both),
            "slot 0: node 0 -> node 2 (packet 0): one-port, and the sender already sends");
  // Two routed packets a and b moved directly in slot 0.
  struct Pair {
    sp::PacketSet packets{3, false};
    sp::SlotSchedule schedule;
    Pair(Node a_from, Node a_to, Node b_from, Node b_to) {
      schedule.add(0, {a_from, a_to, packets.add(a_from, a_to)});
      schedule.add(0, {b_from, b_to, packets.add(b_from, b_to)});
    }
  };
  // Two nodes swap packets over one link: full duplex only.
  const Pair swap(0, 1, 1, 0);
  EXPECT_EQ(sp::simulate(g, {Ports::one_port, Duplex::full}, swap.packets, swap.schedule).slots, 1);
  EXPECT_EQ(rejection(g, {Ports::all_port, Duplex::half}, swap.packets, swap.schedule),
            "slot 0: node 1 -> node 0 (packet 1): half duplex, and the link carries a packet the other way");
  // Two packets into one node in one slot: the receiver's port under one-port.
  const Pair gather(1, 0, 2, 0);
  EXPECT_EQ(rejection(g, {Ports::one_port, Duplex::full}, gather.packets, gather.schedule),
            "slot 0: node 2 -> node 0 (packet 1): one-port, and the receiver already receives");
  // Two packets on one arc in one slot: never.
  const Pair same_arc(0, 1, 0, 1);
  EXPECT_TRUE(contains(rejection(g, {Ports::all_port, Duplex::full}, same_arc.packets, same_arc.schedule),
                       "already carries a packet this way"));
}

TEST(SlotSimulator, CombiningNeverCountsAContributionTwice) {
  // Path 0 - 1 - 2, accumulation at 0 of the contributions of 1 and 2.
  const auto g = sp::VirtualNetwork::tree(3, 1);
  sp::PacketSet sum(3, true);
  const Node origins[] = {1, 2}, root = 0;
  sum.add(origins, std::span(&root, 1));
  sp::SlotSchedule good;
  good.add(0, {2, 1, 0});
  good.add(1, {1, 0, 0});
  EXPECT_EQ(sp::simulate(g, {}, sum, good).slots, 2);
  // Node 1 sends its own value, then later the value of 2 it received: two packets, still exact.
  sp::SlotSchedule twice_over;
  twice_over.add(0, {1, 0, 0});
  twice_over.add(0, {2, 1, 0});
  twice_over.add(1, {1, 0, 0});
  EXPECT_EQ(sp::simulate(g, {}, sum, twice_over).transmissions, 3);
  // Sending again what was handed over would count it twice.
  sp::SlotSchedule again;
  again.add(0, {2, 1, 0});
  again.add(1, {1, 0, 0});
  again.add(2, {1, 0, 0});
  EXPECT_TRUE(
      contains(rejection(g, {}, sum, again), "slot 2: node 1 -> node 0 (packet 0): the sender holds no contribution"));
  // Forwarding before the contribution of 2 arrives leaves the sum short.
  sp::SlotSchedule early;
  early.add(0, {1, 0, 0});
  early.add(0, {2, 1, 0});
  EXPECT_EQ(rejection(g, {}, sum, early), "after 1 slots: node 0 holds 1 of the 2 contributions to packet 0");
}

TEST(SlotSimulator, RefusesStateBeyondMemoryUpFront) {
  // 10^4 combining packets on 2^17 nodes: a count per (node, packet) is 5 GiB.
  const auto g = sp::VirtualNetwork::hypercube(17);
  sp::PacketSet many(g.size(), true);
  const Node origins[] = {1, 2};
  for (Node d = 3; d < 10003; ++d) many.add(origins, std::span(&d, 1));
  try {
    sp::SlotSimulator sim(g, {}, many);
    ADD_FAILURE() << "accepted";
  } catch (const switchyard::InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "MiB of state, more than the 4096 MiB allowed")) << e.what();
  }
  // So is a task whose packets alone would not fit.
  EXPECT_THROW((void)sp::make_task(sp::TaskKind::mnb, g, {}), switchyard::InvalidArgument);
}

namespace {

// Routes the task, simulates the schedule, and holds the algorithm to its bounds.
sp::SimulationResult check_task(const sp::VirtualNetwork& g, sp::LinkModel m, sp::TaskKind task,
                                double fraction = 0.4) {
  sp::TaskOptions options;
  options.root = g.size() / 3;
  options.active_fraction = fraction;
  options.seed = 7;
  const auto instance = sp::make_task(task, g, options);
  const auto routed = sp::route(g, m, instance);
  SCOPED_TRACE(std::string(sp::task_name(task)) + " on " + g.name() + " (" + sp::to_string(m) + "), " +
               routed.algorithm);
  // An algorithm that moves packets of its own (the PMNB prefix) hands back the set it moves.
  const sp::PacketSet& packets = routed.packets ? *routed.packets : instance.packets;
  sp::SimulationResult r;
  EXPECT_NO_THROW(r = sp::simulate(g, m, packets, routed.schedule));
  EXPECT_EQ(r.deliveries, packets.deliveries());
  EXPECT_FALSE(routed.bounds.empty());
  for (const auto& b : routed.bounds) {
    if (b.kind != sp::BoundKind::upper) {
      EXPECT_GE(r.slots, b.slots) << b.name;
    }
    if (b.kind != sp::BoundKind::lower) {
      EXPECT_LE(r.slots, b.slots) << b.name;
    }
  }
  return r;
}

}  // namespace

TEST(SlotAlgorithms, EveryTaskOnEveryKindOfNetworkAndLinkModel) {
  std::istringstream petersen_file(
      "%%MatrixMarket matrix coordinate pattern symmetric\n10 10 15\n2 1\n3 2\n4 3\n5 4\n5 1\n"
      "6 1\n7 2\n8 3\n9 4\n10 5\n8 6\n9 7\n10 8\n6 9\n7 10\n");
  const sp::VirtualNetwork networks[] = {sp::VirtualNetwork::complete(9),
                                         sp::VirtualNetwork::complete(8),
                                         sp::VirtualNetwork::hypercube(4),
                                         sp::VirtualNetwork::torus({4, 3}),
                                         sp::VirtualNetwork::torus({2, 3, 2}),
                                         sp::VirtualNetwork::tree(11, 3),
                                         sp::VirtualNetwork::read_matrix_market(petersen_file, "petersen.mtx")};
  for (const auto& g : networks) {
    for (const auto& m : kModels) {
      for (sp::TaskKind task : sp::kAllTasks) check_task(g, m, task);
    }
  }
}

TEST(SlotAlgorithms, ActiveSetsFromOneNodeToAll) {
  const auto g = sp::VirtualNetwork::hypercube(3);
  for (double fraction : {0.0, 0.1, 1.0}) {
    for (sp::TaskKind task : sp::kAllTasks) {
      if (sp::task_uses_active_set(task)) check_task(g, {}, task, fraction);
    }
  }
}

TEST(SlotAlgorithms, MachineOptimaOnTheCompleteGraph) {
  // One-port full duplex, N = 13: binomial trees ceil(log2 13) = 4, scatter and TE N - 1 = 12.
  const auto g = sp::VirtualNetwork::complete(13);
  EXPECT_EQ(check_task(g, sp::kMachineLinkModel, sp::TaskKind::snb).slots, 4);
  EXPECT_EQ(check_task(g, sp::kMachineLinkModel, sp::TaskKind::sna).slots, 4);
  EXPECT_EQ(check_task(g, sp::kMachineLinkModel, sp::TaskKind::sns).slots, 12);
  EXPECT_EQ(check_task(g, sp::kMachineLinkModel, sp::TaskKind::sng).slots, 12);
  EXPECT_EQ(check_task(g, sp::kMachineLinkModel, sp::TaskKind::te).slots, 12);
  EXPECT_EQ(check_task(g, sp::kMachineLinkModel, sp::TaskKind::mnb).slots, 12);
  EXPECT_EQ(check_task(g, sp::kMachineLinkModel, sp::TaskKind::permutation).slots, 1);
  EXPECT_EQ(check_task(g, {Ports::all_port, Duplex::half}, sp::TaskKind::te).slots, 2);
}

TEST(SlotAlgorithms, DiameterOptimaOnRegularNetworks) {
  // SNB and SNA take the diameter on a hypercube (one-port: the binomial tree is
  // a spanning tree of the cube) and, all-port, on a torus.
  const auto cube = sp::VirtualNetwork::hypercube(6);
  EXPECT_EQ(check_task(cube, sp::kMachineLinkModel, sp::TaskKind::snb).slots, 6);
  EXPECT_EQ(check_task(cube, sp::kMachineLinkModel, sp::TaskKind::sna).slots, 6);
  const auto torus = sp::VirtualNetwork::torus({7, 5});
  EXPECT_EQ(check_task(torus, {Ports::all_port, Duplex::full}, sp::TaskKind::snb).slots, 5);
  EXPECT_EQ(check_task(torus, {Ports::all_port, Duplex::half}, sp::TaskKind::sna).slots, 5);
  EXPECT_EQ(check_task(torus, {Ports::all_port, Duplex::full}, sp::TaskKind::one_to_one).slots, 5);
}

TEST(SlotAlgorithms, ScaleToOneHundredThousandNodes) {
  // Hypercube d = 17 and torus 316 x 316: SNB, SNA at the diameter. (A permutation
  // on the 316 x 316 torus moves 1.6 * 10^7 packets over links: the CLI does it.)
  const auto cube = sp::VirtualNetwork::hypercube(17);
  EXPECT_EQ(check_task(cube, {Ports::all_port, Duplex::full}, sp::TaskKind::snb).slots, 17);
  EXPECT_EQ(check_task(cube, sp::kMachineLinkModel, sp::TaskKind::sna).slots, 17);
  const auto torus = sp::VirtualNetwork::torus({316, 316});
  EXPECT_EQ(check_task(torus, {Ports::all_port, Duplex::full}, sp::TaskKind::sna).slots, 316);
  EXPECT_GE(
      check_task(sp::VirtualNetwork::torus({100, 100}), {Ports::all_port, Duplex::full}, sp::TaskKind::permutation)
          .slots,
      100);
}
