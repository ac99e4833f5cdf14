// Slot schedules on real mailboxes: every task's algorithm on several networks
// runs with one process per node, every destination's bytes verified, in as
// many slots as the simulator counts for the same schedule.
#include <gtest/gtest.h>
#include <switchyard/errors.hpp>

#include <cstring>
#include <stdexcept>
#include <string>

#include "switchyard/primitives/slot_algorithms.hpp"
#include "switchyard/primitives/slot_mailboxes.hpp"
#include "switchyard/primitives/slot_simulator.hpp"
#include "switchyard/runtime.hpp"

namespace sp = switchyard::primitives;
using sp::Duplex;
using sp::Ports;

namespace {

switchyard::Runtime& runtime() {
  static switchyard::Runtime rt;
  return rt;
}

// Simulates and runs one task; the two executions agree on the slots, and every
// destination's bytes were checked.
void run_both(const sp::VirtualNetwork& g, sp::LinkModel m, sp::TaskKind task, std::uint64_t bytes) {
  sp::TaskOptions options;
  options.root = g.size() / 2;
  options.active_fraction = 0.3;
  const auto instance = sp::make_task(task, g, options);
  const auto routed = sp::route(g, m, instance);
  SCOPED_TRACE(std::string(sp::task_name(task)) + " on " + g.name() + " (" + sp::to_string(m) + "), " +
               routed.algorithm);
  // An algorithm that moves packets of its own (the PMNB prefix) hands back the set it moves.
  const sp::PacketSet& packets = routed.packets ? *routed.packets : instance.packets;
  const auto simulated = sp::simulate(g, m, packets, routed.schedule);
  const sp::SlotProgram program(g, packets, routed.schedule, bytes);
  const auto ran = program.run(runtime());
  EXPECT_EQ(ran.slots, simulated.slots);
  EXPECT_EQ(ran.messages, simulated.transmissions);
  EXPECT_EQ(ran.bytes_verified, packets.deliveries() * static_cast<std::int64_t>(bytes));
  EXPECT_GE(ran.wall_ms, 0.0);
}

}  // namespace

TEST(SlotMailboxes, EveryTaskOnTheMachineModel) {
  const auto g = sp::VirtualNetwork::complete(12);
  for (sp::TaskKind task : sp::kAllTasks) run_both(g, sp::kMachineLinkModel, task, 40);
}

TEST(SlotMailboxes, EveryTaskOnAHypercubeAllPort) {
  const auto g = sp::VirtualNetwork::hypercube(4);
  for (sp::TaskKind task : sp::kAllTasks) run_both(g, {Ports::all_port, Duplex::full}, task, 16);
}

TEST(SlotMailboxes, TorusAndTreeHalfDuplexOddSizes) {
  // 13 bytes: a combination ends in a tail shorter than a 64-bit word.
  const auto torus = sp::VirtualNetwork::torus({5, 3});
  const auto tree = sp::VirtualNetwork::tree(10, 3);
  for (sp::TaskKind task : {sp::TaskKind::snb, sp::TaskKind::sna, sp::TaskKind::ssna, sp::TaskKind::sng,
                            sp::TaskKind::pmna, sp::TaskKind::te, sp::TaskKind::permutation}) {
    run_both(torus, {Ports::all_port, Duplex::half}, task, 13);
    run_both(tree, {Ports::one_port, Duplex::half}, task, 13);
  }
}

TEST(SlotMailboxes, LargePacketsTakeTheSingleCopyPath) {
  // 4 KiB packets are copied by the receiver out of the sender's buffer.
  const auto g = sp::VirtualNetwork::hypercube(3);
  for (sp::TaskKind task : {sp::TaskKind::snb, sp::TaskKind::sna, sp::TaskKind::pmna, sp::TaskKind::mnb}) {
    run_both(g, sp::kMachineLinkModel, task, 4096);
  }
}

TEST(SlotMailboxes, TwoHundredFiftySixProcesses) {
  const auto g = sp::VirtualNetwork::hypercube(8);
  run_both(g, sp::kMachineLinkModel, sp::TaskKind::sna, 64);
  run_both(g, {Ports::all_port, Duplex::full}, sp::TaskKind::pmnb, 64);
}

TEST(SlotMailboxes, RejectsWhatNoMailboxCanRun) {
  // A path 0 - 1 - 2 and one packet from 0 to 2.
  const auto g = sp::VirtualNetwork::tree(3, 1);
  sp::PacketSet packets(3, false);
  packets.add(0, 2);
  sp::SlotSchedule jump;
  jump.add(0, {0, 2, 0});
  EXPECT_THROW(sp::SlotProgram(g, packets, jump, 8), switchyard::InvalidArgument);
  sp::SlotSchedule unheld;
  unheld.add(0, {1, 2, 0});
  try {
    sp::SlotProgram program(g, packets, unheld, 8);
    ADD_FAILURE() << "accepted";
  } catch (const switchyard::InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "slot 0: node 1 -> node 2 (packet 0): the sender never received the packet");
  }
  sp::SlotSchedule short_of;
  short_of.add(0, {0, 1, 0});
  EXPECT_THROW(sp::SlotProgram(g, packets, short_of, 8), switchyard::InvalidArgument);
  EXPECT_THROW(sp::SlotProgram(g, packets, sp::SlotSchedule{}, 0), switchyard::InvalidArgument);
}

TEST(SlotMailboxes, BytesAreTheirOriginsAndCombineByWordAddition) {
  std::vector<std::byte> a(20), b(20), sum(20, std::byte{0});
  sp::fill_packet_bytes(a, 3, 1);
  sp::fill_packet_bytes(b, 3, 2);
  EXPECT_NE(a, b);  // another origin, other bytes
  sp::combine_packet_bytes(sum, a);
  sp::combine_packet_bytes(sum, b);
  std::uint64_t wa, wb, ws;
  std::memcpy(&wa, a.data() + 8, 8);
  std::memcpy(&wb, b.data() + 8, 8);
  std::memcpy(&ws, sum.data() + 8, 8);
  EXPECT_EQ(ws, wa + wb);
  EXPECT_EQ(static_cast<unsigned>(sum[17]), (static_cast<unsigned>(a[17]) + static_cast<unsigned>(b[17])) % 256);
}

// task_size tells what make_task builds, without building it; with it a
// mailbox program too large is known before the task is routed.
TEST(SlotMailboxes, TaskSizesAreKnownBeforeTheTaskIsBuilt) {
  const sp::VirtualNetwork g = sp::VirtualNetwork::complete(9);
  for (sp::TaskKind task : sp::kAllTasks) {
    sp::TaskOptions o;
    o.active_fraction = 0.4;
    const sp::TaskInstance t = sp::make_task(task, g, o);
    const auto [packets, deliveries] = sp::task_size(task, g.size(), o);
    if (task == sp::TaskKind::permutation) {  // n, less the nodes that are their own target
      EXPECT_GE(packets, static_cast<std::int64_t>(t.packets.size()));
      continue;
    }
    EXPECT_EQ(packets, static_cast<std::int64_t>(t.packets.size())) << sp::task_name(task);
    EXPECT_EQ(deliveries, static_cast<std::int64_t>(t.packets.deliveries())) << sp::task_name(task);
  }
  // TE on 5000 nodes: 24,995,000 packets of 64 bytes need more than the program's bound.
  const auto [packets, deliveries] = sp::task_size(sp::TaskKind::te, 5000, {});
  EXPECT_GT(sp::SlotProgram::bytes_at_least(packets, deliveries, 64), static_cast<double>(sp::SlotProgram::kMaxBytes));
}
