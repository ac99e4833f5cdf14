// The C³ model: Fig. 1's send and receive times, Fig. 2's charges, Fig. 3's
// table for the 256-processor Delta, and the k-level algorithms' superstep
// descriptions delivering every piece, for any p.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "switchyard/model/algorithms.hpp"
#include "switchyard/model/colocation.hpp"
#include "switchyard/model/cost.hpp"
#include "switchyard/model/estimators.hpp"
#include "switchyard/model/machine_file.hpp"
#include "switchyard/model/slow_rounds.hpp"

namespace sm = switchyard::model;

namespace {

// Runs a description on holders: every transfer sends pieces its source holds,
// and at the end every piece the operation asks for is at its target, once.
void expect_delivers(sm::Operation op, const std::string& name, sm::ProcessId p, sm::ProcessId root) {
  SCOPED_TRACE(std::string(sm::operation_name(op)) + " " + name + " p=" + std::to_string(p) +
               " root=" + std::to_string(root));
  const std::uint64_t L = 3;
  const sm::Algorithm a = sm::supersteps(op, name, p, L, root);
  ASSERT_NO_THROW(sm::validate(a, p, L));
  std::map<std::pair<sm::ProcessId, sm::ProcessId>, sm::ProcessId> holder;  // piece -> holder
  for (sm::ProcessId s = 0; s < p; ++s)
    for (sm::ProcessId t = 0; t < p; ++t) {
      const bool wanted = op == sm::Operation::all_to_all || (op == sm::Operation::one_to_all ? s == root : t == root);
      if (wanted && s != t) holder[{s, t}] = s;
    }
  for (const sm::Superstep& step : a) {
    std::map<std::pair<sm::ProcessId, sm::ProcessId>, sm::ProcessId> next = holder;
    std::set<std::pair<sm::ProcessId, sm::ProcessId>> moved;
    for (const sm::Submachine& sub : step.submachines)
      for (const sm::Transfer& t : sub.transfers)
        for (std::uint64_t k = 0; k < t.piece_count; ++k) {
          const sm::Piece& piece = sub.pieces[t.first_piece + k];
          const auto it = holder.find({piece.origin, piece.target});
          // A broadcast forwards copies: a holder keeps what it sends.
          if (it == holder.end()) continue;
          if (name != "1-lev-our-br") {
            ASSERT_EQ(it->second, t.src) << "piece " << piece.origin << "->" << piece.target << " not at its sender";
            ASSERT_TRUE(moved.insert({piece.origin, piece.target}).second) << "piece moved twice in a step";
          }
          if (name != "1-lev-our-br" || piece.target == t.dst || it->second == t.src)
            next[{piece.origin, piece.target}] = t.dst;
        }
    holder = std::move(next);
  }
  if (name == "1-lev-our-br") {
    // The broadcast reaches every process with the whole long message.
    std::set<sm::ProcessId> reached{root};
    for (const sm::Superstep& step : a)
      for (const sm::Submachine& sub : step.submachines)
        for (const sm::Transfer& t : sub.transfers) {
          EXPECT_TRUE(reached.contains(t.src));
          EXPECT_EQ(t.piece_count, p - 1);
          reached.insert(t.dst);
        }
    EXPECT_EQ(reached.size(), p);
    return;
  }
  for (const auto& [piece, at] : holder) EXPECT_EQ(at, piece.second) << piece.first << "->" << piece.second;
}

}  // namespace

TEST(ModelAlgorithms, EveryAlgorithmDeliversEveryPieceForAnyP) {
  for (sm::Operation op : {sm::Operation::one_to_all, sm::Operation::all_to_one, sm::Operation::all_to_all})
    for (const std::string& name : sm::algorithm_names(op))
      for (sm::ProcessId p : {1u, 2u, 3u, 7u, 16u, 64u, 100u}) {
        expect_delivers(op, name, p, 0);
        if (op != sm::Operation::all_to_all && p > 2) expect_delivers(op, name, p, p / 2 + 1);
      }
}

namespace {

// Communication units of a one-to-all algorithm on the Delta as a + b L, with
// L a multiple of the packet length (no rounding): returns {a, b}.
std::pair<double, double> delta_line(const std::string& name, double setup, bool copies) {
  sm::Machine delta = sm::intel_delta_256();
  delta.setup = setup;
  delta.charge_local_copies = copies;
  const auto units = [&](std::uint64_t L) {
    return sm::cost(delta, sm::supersteps(sm::Operation::one_to_all, name, 256, L)).communication;
  };
  const std::uint64_t L1 = 512 * 64, L2 = 512 * 128;
  const double slope = (units(L2) - units(L1)) / static_cast<double>(L2 - L1);
  return {units(L1) - slope * static_cast<double>(L1), slope};
}

}  // namespace

// Fig. 3: the rows whose charging the paper derives in its text, with its own
// arithmetic (charge_local_copies: "we write p when the correct quantity is
// p - 1"), reproduce to the paper's two decimals; the exact model is within the
// p / (p - 1) of that simplification.
TEST(ModelFig3, DeltaRowsDerivedInThePaper) {
  struct Row {
    const char* name;
    double setups, per_byte;  // the paper: setups * s + per_byte * L
  };
  for (const Row& row : {Row{"1-lev-dir", 256, 0.55}, Row{"2-lev-rec", 32, 1.23}, Row{"3-lev-sq", 24, 0.93}}) {
    SCOPED_TRACE(row.name);
    const auto [with_s, slope] = delta_line(row.name, 8, true);
    const auto [without_s, slope0] = delta_line(row.name, 0, true);
    EXPECT_DOUBLE_EQ((with_s - without_s) / 8, row.setups);
    EXPECT_NEAR(slope, row.per_byte, 0.005);
    // With s = 8: 2048 + 0.55 L for 1-lev-dir, 192 + 0.93 L for 3-lev-sq; the
    // paper omits the additive latency terms (h, at most a few h').
    EXPECT_NEAR(with_s, 8 * row.setups, 3 * 10.0);
    EXPECT_NEAR(slope0, slope, 1e-12);
    const auto [exact_s, exact_slope] = delta_line(row.name, 8, false);
    EXPECT_LT(exact_slope, slope);
    EXPECT_GT(exact_slope, slope * 15 / 16 - 0.01);
    EXPECT_LE(exact_s, with_s);
  }
}

// The binomial heaps: the paper charges log p set-ups (8 s) and bounds
// logp-lev-sq by s log p + c1 ceil(Lp / l) h with c1 <= 1.5. Its slopes (5.29 L,
// 27 L) need submachine latencies its text does not give; ours come from the
// sub-meshes' average distances (4.91 L and 23.6 L), within 15 %.
TEST(ModelFig3, DeltaBinomialHeaps) {
  for (const auto& [name, per_byte] : {std::pair{"logp-lev-sq", 5.29}, std::pair{"1-lev-our-br", 27.0}}) {
    SCOPED_TRACE(name);
    const auto [with_s, slope] = delta_line(name, 8, false);
    const auto [without_s, slope0] = delta_line(name, 0, false);
    EXPECT_DOUBLE_EQ((with_s - without_s) / 8, 8);
    EXPECT_NEAR(slope, per_byte, 0.15 * per_byte);
  }
  const auto [a, slope] = delta_line("logp-lev-sq", 8, false);
  EXPECT_LE(slope, 1.5 * (256.0 / 512) * 10);
  // 1-lev-dir is the cheapest beyond about 6 KiB, 3-lev-sq below (the paper's
  // reading of Fig. 3: "3-lev-sq is the best for message sizes of up to 6 Kbytes").
  sm::Machine delta = sm::intel_delta_256();
  delta.charge_local_copies = true;
  const auto best = [&](std::uint64_t L) {
    std::string winner;
    double least = 0;
    for (const std::string& name : sm::algorithm_names(sm::Operation::one_to_all)) {
      const double u = sm::cost(delta, sm::supersteps(sm::Operation::one_to_all, name, 256, L)).communication;
      if (winner.empty() || u < least) winner = name, least = u;
    }
    return winner;
  };
  EXPECT_EQ(best(1024), "3-lev-sq");
  EXPECT_EQ(best(4096), "3-lev-sq");
  EXPECT_EQ(best(16384), "1-lev-dir");
}

namespace {

sm::Submachine whole_machine(sm::ProcessId p, std::vector<sm::Transfer> transfers) {
  sm::Submachine sub;
  for (sm::ProcessId i = 0; i < p; ++i) sub.members.push_back(i);
  sub.shape = sm::Shape{1, p};
  sub.transfers = std::move(transfers);
  return sub;
}

sm::Machine small_machine(sm::Routing routing, sm::SendProtocol sends) {
  sm::Machine m;
  m.processes = 4;
  m.packet_bytes = 100;
  m.setup = 7;
  m.latency = 3;
  m.bisection = 2;
  m.routing = routing;
  m.sends = sends;
  return m;
}

}  // namespace

// Fig. 1, every protocol: process 0 sends 250 B (3 packets) to 1 and 100 B (1)
// to 2; process 3 sends 450 B (5 packets) to 1.
TEST(ModelFig1, SendAndReceiveTimesOfEveryProtocol) {
  const sm::Submachine sub = whole_machine(4, {{0, 1, 250}, {0, 2, 100}, {3, 1, 450}});
  const double s = 7, h = 3;
  struct Expect {
    sm::Routing routing;
    sm::SendProtocol sends;
    double s0, r1, s3;
  };
  using R = sm::Routing;
  using P = sm::SendProtocol;
  for (const Expect& e : {
           // S_0 = s n_s + h ceil(L_max / l) + sum; R_1 = sum received
           Expect{R::store_and_forward, P::nonblocking, s * 2 + h * 3 + 4, 8, s + h * 5 + 5},
           Expect{R::wormhole, P::nonblocking, s * 2 + h + 4, 8, s + h + 5},
           // S = 2 (s + h) n_s + h sum; R = (s + h) n_r + h sum
           Expect{R::store_and_forward, P::blocking, 2 * (s + h) * 2 + h * 4, (s + h) * 2 + h * 8, 2 * (s + h) + h * 5},
           // S = 2 (s + h) n_s + h + sum; R = (s + h) n_r + h + sum
           Expect{R::wormhole, P::blocking, 2 * (s + h) * 2 + h + 4, (s + h) * 2 + h + 8, 2 * (s + h) + h + 5},
       }) {
    const auto times = sm::send_receive_times(small_machine(e.routing, e.sends), sub);
    ASSERT_EQ(times.size(), 4u);
    EXPECT_DOUBLE_EQ(times[0].send, e.s0);
    EXPECT_DOUBLE_EQ(times[1].receive, e.r1);
    EXPECT_DOUBLE_EQ(times[3].send, e.s3);
    EXPECT_DOUBLE_EQ(times[1].send, 0);
    EXPECT_DOUBLE_EQ(times[0].receive, 0);
  }
}

namespace {

// Fig. 2 (wormhole, non-blocking): p processes, messages of L = 250 B (P = 3
// packets of 100 B), s = 7, h = 3, b = 5.
struct Fig2 : ::testing::Test {
  static constexpr sm::ProcessId p = 16;
  static constexpr double s = 7, h = 3, b = 5, P = 3;
  sm::Machine machine() const {
    sm::Machine m = small_machine(sm::Routing::wormhole, sm::SendProtocol::nonblocking);
    m.processes = p;
    m.bisection = b;
    return m;
  }
  sm::SuperstepCost charge(std::vector<sm::Transfer> transfers) const {
    return sm::cost(machine(), sm::Superstep{"fig2", {whole_machine(p, std::move(transfers))}});
  }
};

}  // namespace

TEST_F(Fig2, OneToOne) {
  std::vector<sm::Transfer> t;
  for (sm::ProcessId i = 0; i < p; ++i) t.push_back({i, (i + 5) % p, 250});
  const sm::SuperstepCost c = charge(t);
  EXPECT_DOUBLE_EQ(c.max_send_receive, (s + P + h) + P);
  EXPECT_DOUBLE_EQ(c.link_congestion, P * std::ceil(p / b));
  EXPECT_DOUBLE_EQ(c.processor_congestion, P * h);
  EXPECT_DOUBLE_EQ(c.communication, c.max_send_receive + c.link_congestion + c.processor_congestion);
}

TEST_F(Fig2, OneToAllAndAllToOne) {
  std::vector<sm::Transfer> out, in;
  for (sm::ProcessId i = 1; i < p; ++i) out.push_back({0, i, 250}), in.push_back({i, 0, 250});
  const sm::SuperstepCost scatter = charge(out), gather = charge(in);
  EXPECT_DOUBLE_EQ(scatter.max_send_receive, (p - 1) * (s + P) + h);
  EXPECT_DOUBLE_EQ(gather.max_send_receive, std::max(s + P + h, P * (p - 1)));
  for (const sm::SuperstepCost& c : {scatter, gather}) {
    EXPECT_DOUBLE_EQ(c.link_congestion, P * std::ceil((p - 1) / b));
    EXPECT_DOUBLE_EQ(c.processor_congestion, P * h);
  }
}

TEST_F(Fig2, AllToAll) {
  std::vector<sm::Transfer> t;
  for (sm::ProcessId i = 0; i < p; ++i)
    for (sm::ProcessId j = 0; j < p; ++j)
      if (i != j) t.push_back({i, j, 250});
  const sm::SuperstepCost c = charge(t);
  EXPECT_DOUBLE_EQ(c.max_send_receive, (p - 1) * (s + P) + h + P * (p - 1));
  EXPECT_DOUBLE_EQ(c.link_congestion, P * std::ceil(p * (p - 1) / b));
  EXPECT_DOUBLE_EQ(c.processor_congestion, P * h * (p - 1));
  // The paper's closed form of the 1-lev-dir all-to-all superstep is the same.
  const sm::AlgorithmCost a = sm::cost(machine(), sm::supersteps(sm::Operation::all_to_all, "1-lev-dir", p, 250));
  EXPECT_DOUBLE_EQ(a.communication, c.communication);
}

// Section 3's one-to-one charges on three networks, in closed form.
TEST(ModelSection3, OneToOneOnMeshHypercubeAndTree) {
  const double s = 7, P = 3;
  const sm::ProcessId p = 64;
  std::vector<sm::Transfer> t;
  for (sm::ProcessId i = 0; i < p; ++i) t.push_back({i, (i + 9) % p, 250});
  const auto units = [&](double h, double b) {
    sm::Machine m = small_machine(sm::Routing::wormhole, sm::SendProtocol::nonblocking);
    m.processes = p;
    m.latency = h;
    m.bisection = b;
    return sm::cost(m, sm::Superstep{"one-to-one", {whole_machine(p, t)}}).communication;
  };
  const double root = 8, logp = 6;
  EXPECT_DOUBLE_EQ(units(2.0 / 3 * root, root), s + 2.0 / 3 * root + P * (2 + 5.0 / 3 * root));  // square mesh
  EXPECT_DOUBLE_EQ(units(logp / 2, p / 2.0), s + logp / 2 + P * (4 + logp / 2));  // hypercube
  EXPECT_DOUBLE_EQ(units(logp, 1), s + logp + P * (2 + p + logp));  // tree
}

TEST(ModelCost, AlgorithmCostIsTheSumOfItsSupersteps) {
  const sm::Machine delta = sm::intel_delta_256();
  const sm::Algorithm a = sm::supersteps(sm::Operation::all_to_all, "2-lev-sq", 64, 1000);
  ASSERT_EQ(a.size(), 3u);
  const sm::AlgorithmCost c = sm::cost(delta, a);
  double communication = 0, computation = 0;
  for (const sm::Superstep& step : a) {
    communication += sm::cost(delta, step).communication;
    computation += sm::cost(delta, step).computation;
  }
  EXPECT_DOUBLE_EQ(c.communication, communication);
  EXPECT_DOUBLE_EQ(c.computation, computation);
  // Every process packs 64 KB (8 messages of 8 pieces) in the first step: 125 packets.
  EXPECT_DOUBLE_EQ(c.steps[0].computation, std::ceil(8.0 * 8 * 1000 / 512));
}

// The calibrated variant: processes share cores, so a core pays for all of its
// processes, and messages between processes of one core cross no link.
TEST(ModelCost, CalibratedVariantChargesCoresNotProcesses) {
  sm::Machine m = small_machine(sm::Routing::wormhole, sm::SendProtocol::nonblocking);
  m.processes = 8;
  m.variant = sm::ModelVariant::calibrated;
  m.cores = 2;
  // 0 -> 2 and 4 -> 6: all on core 0 (round robin): no link, one core busy.
  const sm::Superstep same{"same core", {whole_machine(8, {{0, 2, 300}, {4, 6, 300}})}};
  const sm::SuperstepCost c = sm::cost(m, same);
  EXPECT_DOUBLE_EQ(c.max_send_receive, 2 * ((m.setup + 3 + m.latency) + 3));
  EXPECT_DOUBLE_EQ(c.link_congestion, 0);
  EXPECT_DOUBLE_EQ(c.processor_congestion, 0);
  // 0 -> 1 and 2 -> 3 cross cores: each core half the work, two pairs on b = 2.
  const sm::SuperstepCost x = sm::cost(m, sm::Superstep{"cross", {whole_machine(8, {{0, 1, 300}, {2, 3, 300}})}});
  EXPECT_DOUBLE_EQ(x.max_send_receive, 2 * (m.setup + 3 + m.latency));
  EXPECT_DOUBLE_EQ(x.link_congestion, 3 * 1);
  EXPECT_DOUBLE_EQ(x.processor_congestion, 3 * 1 * m.latency);
  // The paper's variant charges the same supersteps per process.
  m.variant = sm::ModelVariant::paper;
  EXPECT_DOUBLE_EQ(sm::cost(m, same).max_send_receive, m.setup + 3 + m.latency);
}

// The ring-sync variant on small supersteps, by hand (cost.hpp's formulas):
// cores 2 (even processes on core 0), s = 10, h = 100, b = 2, l = 64, w = 5,
// m = 2, a 256-byte ring, eager up to 512 bytes.
sm::Machine ring_sync_machine() {
  sm::Machine m;
  m.processes = 4;
  m.packet_bytes = 64;
  m.setup = 10;
  m.latency = 100;
  m.bisection = 2;
  m.cores = 2;
  m.variant = sm::ModelVariant::ring_sync;
  m.wake = 5;
  m.match = 2;
  m.match_in_cache = 2;
  m.ring_bytes = 256;
  m.eager_limit = 512;
  return m;
}

TEST(ModelCost, RingSyncChargesBothEndsWakesMatchingAndTheHandOff) {
  const sm::Machine m = ring_sync_machine();
  // 0 -> 1 and 2 -> 1 cross cores (one packet each), 3 -> 1 stays on core 1 (two packets).
  const sm::SuperstepCost c =
      sm::cost(m, sm::Superstep{"fan-in", {whole_machine(4, {{0, 1, 64}, {2, 1, 64}, {3, 1, 128}})}});
  // Every process that sends or receives is resumed once: w.
  // Core 0: processes 0 and 2, each s + 1 + w = 16.
  // Core 1: process 1 receives 3 messages of 4 packets: 3s + 4 + w = 39, and
  //         matching: of its 3 pairs of receives, the one from senders 0 and 2
  //         (one core, one message each) arrives in order, the two others in
  //         either order: m * (3 * 2 - 2 * 1) / 4 = 2; 41 in all;
  //         process 3 sends one of 2 packets: s + 2 + w = 17. In all 58.
  EXPECT_DOUBLE_EQ(c.max_send_receive, 58);
  // Two pairs cross, one packet each: L_a * ceil(2 / b) = 1.
  EXPECT_DOUBLE_EQ(c.link_congestion, 1);
  EXPECT_DOUBLE_EQ(c.processor_congestion, 0);
  // 2 x (32 + 64) = 192 bytes in the ring 0 -> 1, under 256: one hand-off, h.
  EXPECT_DOUBLE_EQ(c.synchronisation, 100);
  EXPECT_DOUBLE_EQ(c.communication, 58 + 1 + 100);
  // The same messages on one core: no link, no hand-off.
  const sm::SuperstepCost local = sm::cost(m, sm::Superstep{"same core", {whole_machine(4, {{0, 2, 64}})}});
  EXPECT_DOUBLE_EQ(local.communication, (10 + 1 + 5) + (10 + 1 + 5));
}

TEST(ModelCost, RingSyncChargesMatchingOnlyForArrivalsOutOfPostingOrder) {
  sm::Machine m = ring_sync_machine();
  m.processes = 6;
  const auto busiest = [&](std::vector<sm::Transfer> transfers) {
    return sm::cost(m, sm::Superstep{"fan-in", {whole_machine(6, std::move(transfers))}}).max_send_receive;
  };
  // 0, 2 and 4 (core 0) send one message each to 1: a core runs its processes
  // in rank order, so they arrive in posting order, no walk: 1 costs 3s + 3 + w
  // = 38. 3 -> 5 (8 packets) keeps core 1 the busier: (s + 8 + w) twice, 84 in
  // all (core 0: 3 (s + 1 + w) = 48).
  const std::vector<sm::Transfer> lone{{0, 1, 64}, {2, 1, 64}, {4, 1, 64}, {3, 5, 512}};
  EXPECT_DOUBLE_EQ(busiest(lone), 38 + 2 * 23);
  // The same senders each sending 5 a message as well: their arrivals at 1
  // come in either order, m * 3 * 2 / 4 = 3 more; 5 receives four,
  // 4s + 11 + w = 56, plus m * 4 * 3 / 4 = 6 (3 -> 5 alone is from a lone
  // sender). Core 1: 41 + 23 + 62.
  std::vector<sm::Transfer> flooding = lone;
  flooding.insert(flooding.end(), {{0, 5, 64}, {2, 5, 64}, {4, 5, 64}});
  EXPECT_DOUBLE_EQ(busiest(flooding), 41 + 23 + 62);
}

// The walk's cost per entry follows how many receives the core posted in the
// superstep: match_in_cache up to 256, match from 2048, log-interpolated.
TEST(ModelCost, RingSyncChargesTheMatchingWalkByTheCoresPostedReceives) {
  sm::Machine m = ring_sync_machine();
  m.match_in_cache = 1;
  m.match = 3;
  // Process 0 (core 0) receives one message from each of n - 1 senders that
  // also send to process 1 (floods: every pair may come out of order), so it
  // walks (n - 1)(n - 2) / 4 entries; core 1 posts as many receives.
  const auto walk_charge = [&](sm::ProcessId n) {
    std::vector<sm::Transfer> transfers;
    for (sm::ProcessId s = 2; s < n + 1; ++s) transfers.push_back({s, 0, 8}), transfers.push_back({s, 1, 8});
    const double r = n - 1;
    sm::Machine no_walk = m;
    no_walk.match = no_walk.match_in_cache = 0;
    sm::Superstep step{"flood", {whole_machine(n + 1, std::move(transfers))}};
    return (sm::cost(m, step).max_send_receive - sm::cost(no_walk, step).max_send_receive) / (r * (r - 1) / 4);
  };
  // Processes 0 and 1 sit on different cores and post n - 1 receives each; no
  // other process receives. 100 a core is below 256, 3000 past 2048.
  EXPECT_DOUBLE_EQ(walk_charge(101), 1);
  EXPECT_DOUBLE_EQ(walk_charge(3001), 3);
  // Halfway between 256 and 2048 in log2: 724 receives, half way in units.
  EXPECT_NEAR(walk_charge(std::lround(std::sqrt(256.0 * 2048.0)) + 1), 2, 1e-3);
}

TEST(ModelCost, RingSyncChargesAFullRingAndRendezvous) {
  const sm::Machine m = ring_sync_machine();
  // Four cross-core messages of 64 B: 4 x 96 = 384 bytes in ring 0 -> 1, a
  // 256-byte ring fills once: the hand-off and a round trip, h (1 + 2).
  const sm::SuperstepCost full =
      sm::cost(m, sm::Superstep{"flood", {whole_machine(4, {{0, 1, 64}, {0, 3, 64}, {2, 1, 64}, {2, 3, 64}})}});
  EXPECT_DOUBLE_EQ(full.synchronisation, 300);
  // Core 0: two processes sending two messages each, 2 (2s + 2 + w) = 54; core 1
  // the same received, plus m * 2 * 1 / 4 = 1 each: 2 (2s + 2 + 5 + 1) = 56.
  EXPECT_DOUBLE_EQ(full.max_send_receive, 56);
  EXPECT_DOUBLE_EQ(full.link_congestion, 1 * std::ceil(4 / 2.0));
  // 1024 B, past the eager limit: 48 bytes in the ring, the sender woken
  // once more, for its completion: s + 16 + 2w = 36; the receiver s + 16 + w = 31.
  const sm::SuperstepCost big = sm::cost(m, sm::Superstep{"rendezvous", {whole_machine(4, {{0, 1, 1024}})}});
  EXPECT_DOUBLE_EQ(big.max_send_receive, 36);
  EXPECT_DOUBLE_EQ(big.synchronisation, 100);
  EXPECT_DOUBLE_EQ(big.communication, 36 + 16 + 100);
}

TEST(ModelCost, RingSyncChargesCoherenceForPackedRendezvousAcrossCores) {
  sm::Machine m = ring_sync_machine();
  m.coherence = 40;
  // Four messages of 1024 B (rendezvous, 16 packets each), pieces of 512 B:
  //   0 -> 1 carries 0's pieces for 4 and 5 in order: its own buffer, in place;
  //   2 -> 1 carries 2's pieces for 5 and 4: out of order, packed;
  //   0 -> 3 carries a piece of 2's and one of 0's: relayed;
  //   2 -> 0 carries 2's pieces for 0 and 1, packed... but on its own core.
  sm::Submachine sub =
      whole_machine(6, {{0, 1, 1024, 0, 2}, {2, 1, 1024, 2, 2}, {0, 3, 1024, 4, 2}, {2, 0, 1024, 6, 2}});
  sub.pieces = {{0, 4}, {0, 5}, {2, 5}, {2, 4}, {2, 3}, {0, 3}, {2, 0}, {2, 1}};
  const sm::SuperstepCost c = sm::cost(m, sm::Superstep{"packed", {sub}});
  // Core 0: process 0 sends two and receives one, one rendezvous wake more:
  //   3s + 48 + 2w = 88, plus x for 0 -> 3 (relayed, across); process 2
  //   sends two: 2s + 32 + 2w = 62, plus x for 2 -> 1 (packed, across; 2 -> 0
  //   stays on core 0). In all 150 + 2x.
  // Core 1: process 1 receives two, 2s + 32 + w + m * 2 / 4 = 58; process 3
  //   receives one, s + 16 + w = 31: 89.
  EXPECT_DOUBLE_EQ(c.max_send_receive, 150 + 2 * 40);
  // Every message sent in place (no pieces: an exchange's): no coherence term.
  const sm::SuperstepCost exchange = sm::cost(
      m, sm::Superstep{"in place", {whole_machine(6, {{0, 1, 1024}, {2, 1, 1024}, {0, 3, 1024}, {2, 0, 1024}})}});
  EXPECT_DOUBLE_EQ(exchange.max_send_receive, 150);
  // Eager messages are read from the ring, packed or not: none either.
  sm::Submachine eager = sub;
  for (sm::Transfer& t : eager.transfers) t.bytes = 128;
  m.coherence = 0;
  const double without = sm::cost(m, sm::Superstep{"eager", {eager}}).max_send_receive;
  m.coherence = 40;
  EXPECT_DOUBLE_EQ(sm::cost(m, sm::Superstep{"eager", {eager}}).max_send_receive, without);
}

// The same four messages: the two charged x (0 -> 3 relayed, 2 -> 1 packed)
// also pay x_p for each of their 16 packets beyond the smallest rendezvous
// message's 9 (eager limit 512 B), on the sender's core.
TEST(ModelCost, RingSyncChargesCoherencePerPacket) {
  sm::Machine m = ring_sync_machine();
  m.coherence = 40;
  sm::Submachine sub =
      whole_machine(6, {{0, 1, 1024, 0, 2}, {2, 1, 1024, 2, 2}, {0, 3, 1024, 4, 2}, {2, 0, 1024, 6, 2}});
  sub.pieces = {{0, 4}, {0, 5}, {2, 5}, {2, 4}, {2, 3}, {0, 3}, {2, 0}, {2, 1}};
  m.coherence_per_packet = 3;
  // Core 0 as in the test above, 150 + 2x, plus 2 x (16 - 9) x_p.
  EXPECT_DOUBLE_EQ(sm::cost(m, sm::Superstep{"packed", {sub}}).max_send_receive, 150 + 2 * 40 + 2 * 7 * 3);
  // The smallest rendezvous message is charged x alone.
  EXPECT_DOUBLE_EQ(m.coherence_units(513), 40);
  EXPECT_DOUBLE_EQ(m.coherence_units(576), 40);
  EXPECT_DOUBLE_EQ(m.coherence_units(577), 43);
  // An exchange's messages carry no pieces: sent in place, no coherence.
  const sm::SuperstepCost exchange = sm::cost(
      m, sm::Superstep{"in place", {whole_machine(6, {{0, 1, 1024}, {2, 1, 1024}, {0, 3, 1024}, {2, 0, 1024}})}});
  EXPECT_DOUBLE_EQ(exchange.max_send_receive, 150);
}

// 2-lev-r,c on 24 processes (4 rows of 6): its first superstep packs, for each
// other column, the 4 pieces bound there (stride 6), and sends half of them to
// the other core; its second goes along the columns, all on one core. A
// coherence term of x adds 12 processes x 3 messages x x to the busiest core's
// first superstep and nothing to its second; 1-lev-dir sends every piece in
// place and is charged nothing.
TEST(ModelCost, CoherenceChargesTheRowsOfTwoLevelRowColumn) {
  sm::Machine m = sm::default_machine_file().core;
  const std::uint64_t L = 400;  // row messages of 1600 B, column ones of 2400 B: rendezvous
  const auto units = [&](std::string_view algorithm, double x) {
    m.coherence = x;
    return sm::cost(m, sm::supersteps(sm::Operation::all_to_all, algorithm, 24, L));
  };
  const sm::AlgorithmCost before = units("2-lev-r,c", 0), after = units("2-lev-r,c", 100);
  ASSERT_EQ(after.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(after.steps[0].max_send_receive - before.steps[0].max_send_receive, 12 * 3 * 100);
  EXPECT_DOUBLE_EQ(after.steps[1].max_send_receive, before.steps[1].max_send_receive);
  EXPECT_DOUBLE_EQ(units("1-lev-dir", 100).total(), units("1-lev-dir", 0).total());
}

// Packing, per piece, on the core that copies: pack_piece + its packets for
// every piece of a packed message (on the sender's core) and of an unpacked
// one (on the receiver's).
TEST(ModelCost, RingSyncChargesPackingPerPieceOnTheCopyingCore) {
  sm::Machine m = ring_sync_machine();
  // 0 -> 1: 3 pieces of 32 B (2 packets); 2 -> 1: 2 pieces (1 packet).
  sm::Submachine sub = whole_machine(4, {{0, 1, 96, 0, 3}, {2, 1, 64, 3, 2}});
  sub.pieces = {{0, 1}, {0, 3}, {2, 1}, {2, 1}, {0, 3}};
  // Core 0: processes 0 and 2 send one each, (s + 2 + w) + (s + 1 + w) = 33;
  // core 1: process 1 receives both, 2s + 3 + w = 28 (from one core, one
  // message each sender: in posting order, no matching walk).
  const auto busiest = [&] { return sm::cost(m, sm::Superstep{"pieces", {sub}}).max_send_receive; };
  m.pack_piece = 4;
  EXPECT_DOUBLE_EQ(busiest(), 33) << "nothing flagged, nothing copied";
  sub.transfers[0].packed = true;
  EXPECT_DOUBLE_EQ(busiest(), 33 + 3 * 4 + 2) << "on the sender's core";
  sub.transfers[0].packed = false;
  sub.transfers[1].unpacked = true;
  m.pack_piece = 10;
  EXPECT_DOUBLE_EQ(busiest(), 28 + 2 * 10 + 1) << "on the receiver's core";
}

// Beyond the private cache, packed rendezvous messages to the same core pay
// coherence too, and those to the other core a fraction of it (cost.hpp).
TEST(ModelCost, CoherenceBeyondThePrivateCacheReachesSameCoreMessages) {
  sm::Machine m = ring_sync_machine();
  m.coherence = 40;
  // From core 0, two packed 1024-byte messages: 0 -> 1 across, 0 -> 2 on core 0.
  sm::Submachine sub = whole_machine(4, {{0, 1, 1024, 0, 2}, {0, 2, 1024, 2, 2}});
  sub.pieces = {{0, 3}, {0, 1}, {0, 3}, {0, 2}};
  const auto busiest = [&] { return sm::cost(m, sm::Superstep{"packed", {sub}}).max_send_receive; };
  m.coherence = 0;
  const double without = busiest();
  m.coherence = 40;
  // Unknown cache (0): the cross-core message alone, as below the cache.
  EXPECT_DOUBLE_EQ(busiest(), without + 40);
  m.private_cache_bytes = 4096;  // above the 2048 bytes written: the same
  EXPECT_DOUBLE_EQ(busiest(), without + 40);
  m.private_cache_bytes = 2000;  // below them: a fraction each, both messages
  m.coherence_beyond_cache = 0.5;
  m.coherence_beyond_cache_same_core = 0.25;
  EXPECT_DOUBLE_EQ(busiest(), without + 0.5 * 40 + 0.25 * 40);
}

// Which messages the runtime's implementations copy piece by piece.
TEST(ModelAlgorithms, TransfersSayWhichPiecesAreCopied) {
  const auto flags = [](const sm::Algorithm& a, std::size_t step) {
    std::size_t packed = 0, unpacked = 0, multi = 0;
    for (const sm::Submachine& sub : a.at(step).submachines)
      for (const sm::Transfer& t : sub.transfers) {
        packed += t.packed, unpacked += t.unpacked, multi += t.piece_count > 1;
      }
    return std::tuple{packed, unpacked, multi};
  };
  // 2-lev-r,c: both steps gather strided pieces, local shares included.
  const sm::Algorithm rc = sm::supersteps(sm::Operation::all_to_all, "2-lev-r,c", 24, 8);
  for (std::size_t k : {0u, 1u}) {
    const auto [packed, unpacked, multi] = flags(rc, k);
    EXPECT_EQ(packed, multi) << "step " << k;
    EXPECT_GT(packed, 0u);
    EXPECT_EQ(unpacked, 0u);
  }
  // 2-lev-sq: its own consecutive blocks in place, the relay's whole buffer
  // forwarded as it arrived, then packed for the targets.
  const sm::Algorithm sq = sm::supersteps(sm::Operation::all_to_all, "2-lev-sq", 24, 8);
  EXPECT_EQ(std::get<0>(flags(sq, 0)), 0u);
  EXPECT_EQ(std::get<0>(flags(sq, 1)), 0u);
  EXPECT_EQ(std::get<0>(flags(sq, 2)), std::get<2>(flags(sq, 2)));
  // logp-lev-bfly: packed out of the slots and unpacked back into them.
  for (sm::ProcessId p : {8u, 6u}) {
    const sm::Algorithm bfly = sm::supersteps(sm::Operation::all_to_all, "logp-lev-bfly", p, 8);
    const auto [packed, unpacked, multi] = flags(bfly, bfly.size() - 1);
    EXPECT_EQ(packed, multi) << "p = " << p;
    EXPECT_EQ(unpacked, multi) << "p = " << p;
  }
  // The trees send ranges of consecutive pieces out of the buffer they arrived in.
  for (sm::Operation op : {sm::Operation::one_to_all, sm::Operation::all_to_one})
    for (const std::string& name : sm::algorithm_names(op)) {
      const sm::Algorithm a = sm::supersteps(op, name, 7, 8, 2);
      for (std::size_t k = 0; k < a.size(); ++k)
        EXPECT_EQ(std::get<0>(flags(a, k)) + std::get<1>(flags(a, k)), 0u) << name << " step " << k;
    }
}

TEST(ModelValidation, BadInputIsRefusedWithAClearMessage) {
  sm::Machine m;
  m.bisection = 0;
  EXPECT_THROW(m.validate(), std::invalid_argument);
  try {
    m.validate();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bisection"), std::string::npos);
  }
  EXPECT_THROW(sm::supersteps(sm::Operation::one_to_all, "2-lev-foo", 8, 1), std::invalid_argument);
  EXPECT_THROW(sm::supersteps(sm::Operation::one_to_all, "logp-lev-rec(1.5)", 8, 1), std::invalid_argument);
  EXPECT_THROW(sm::supersteps(sm::Operation::one_to_all, "logp-lev-rec(x)", 8, 1), std::invalid_argument);
  EXPECT_THROW(sm::supersteps(sm::Operation::all_to_one, "1-lev-our-br", 8, 1), std::invalid_argument);
  EXPECT_THROW(sm::supersteps(sm::Operation::one_to_all, "1-lev-dir", 8, 1, 8), std::invalid_argument);
  EXPECT_THROW(sm::supersteps(sm::Operation::all_to_all, "1-lev-dir", 0, 1), std::invalid_argument);
  EXPECT_THROW(sm::parse_operation("one-to-some"), std::invalid_argument);
  sm::Algorithm bad{sm::Superstep{"x", {whole_machine(4, {{0, 9, 1}})}}};
  EXPECT_THROW(sm::validate(bad, 4, 1), std::invalid_argument);
}

TEST(ModelAlgorithms, ShapesOfTheKLevelAlgorithms) {
  // 2-lev-sq: 3 supersteps, the middle one a single message of p L per process.
  const sm::Algorithm sq = sm::supersteps(sm::Operation::all_to_all, "2-lev-sq", 16, 10);
  ASSERT_EQ(sq.size(), 3u);
  for (const sm::Transfer& t : sq[1].submachines.at(0).transfers) EXPECT_EQ(t.bytes, 16u * 10);
  EXPECT_EQ(sm::supersteps(sm::Operation::all_to_all, "2-lev-r,c", 16, 10).size(), 2u);
  EXPECT_EQ(sm::supersteps(sm::Operation::all_to_all, "logp-lev-bfly", 100, 10).size(), 7u);
  EXPECT_EQ(sm::supersteps(sm::Operation::one_to_all, "logp-lev-sq", 100, 10).size(), 7u);
  EXPECT_EQ(sm::supersteps(sm::Operation::one_to_all, "3-lev-sq", 256, 10).size(), 3u);
  // 2-lev-rec on 100: 10 row leaders, then 10 rows of 10.
  const sm::Algorithm rec = sm::supersteps(sm::Operation::one_to_all, "2-lev-rec", 100, 10, 5);
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0].submachines.at(0).members.size(), 10u);
  EXPECT_EQ(rec[0].submachines.at(0).members.at(0), 5u);
  EXPECT_EQ(rec[1].submachines.size(), 10u);
}

TEST(ModelMachineFile, RoundTripAndErrorsNamingTheFileAndField) {
  sm::MachineFile f = sm::default_machine_file();
  f.core.setup = 12.5;
  f.core.wake = 4.5;
  f.core.match = 0.75;
  f.core.match_in_cache = 0.25;
  f.core.coherence = 33.5;
  f.core.coherence_per_packet = 2.25;
  f.core.ring_bytes = 4096;
  f.core.pack_piece = 2.5;
  f.core.private_cache_bytes = 1 << 20;
  f.core.coherence_beyond_cache = 0.625;
  f.core.coherence_beyond_cache_same_core = 0.125;
  f.measured["message_ns"] = 100;
  const sm::MachineFile back = sm::parse_machine_file(sm::to_json(f), "m.json");
  EXPECT_DOUBLE_EQ(back.core.setup, 12.5);
  EXPECT_EQ(back.core.cores, f.core.cores);
  EXPECT_EQ(back.core.variant, sm::ModelVariant::ring_sync);
  EXPECT_DOUBLE_EQ(back.core.wake, 4.5);
  EXPECT_DOUBLE_EQ(back.core.match, 0.75);
  EXPECT_DOUBLE_EQ(back.core.match_in_cache, 0.25);
  EXPECT_DOUBLE_EQ(back.core.coherence, 33.5);
  EXPECT_DOUBLE_EQ(back.core.coherence_per_packet, 2.25);
  EXPECT_EQ(back.core.ring_bytes, 4096u);
  EXPECT_EQ(back.core.eager_limit, 512u);
  EXPECT_DOUBLE_EQ(back.core.pack_piece, 2.5);
  EXPECT_EQ(back.core.private_cache_bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(back.core.coherence_beyond_cache, 0.625);
  EXPECT_DOUBLE_EQ(back.core.coherence_beyond_cache_same_core, 0.125);
  EXPECT_FALSE(back.node.has_value());
  EXPECT_DOUBLE_EQ(back.measured.at("message_ns"), 100);
  const auto message = [](const std::string& text) {
    try {
      sm::parse_machine_file(text, "m.json");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // The error for f's file with `field` (as written, e.g. "\"wake\": 4.5") replaced by `bad`.
  const auto message_with = [&](const std::string& field, const std::string& bad) {
    std::string edited = sm::to_json(f);
    const auto where = edited.find(field);
    if (where == std::string::npos) return "field " + field + " not in the file";
    return message(edited.replace(where, field.size(), bad));
  };
  EXPECT_NE(message("{\n\"format\": \n,").find("m.json:3"), std::string::npos);
  EXPECT_NE(message("{\"format\": \"switchyard-machine/1\", \"levels\": {}}").find("levels.core: missing"),
            std::string::npos);
  EXPECT_NE(message("{\"format\": \"x\"}").find("format"), std::string::npos);
  // A file from before the ring-sync terms still reads, without them.
  std::string old = sm::to_json(f);
  for (const std::string field : {"\"match\"", "\"match_in_cache\"", "\"wake\"", "\"coherence_smallest_rendezvous\"",
                                  "\"coherence_per_packet\"", "\"pack_piece\"", "\"private_cache_bytes\"",
                                  "\"coherence_beyond_cache\"", "\"coherence_beyond_cache_same_core\""})
    old.replace(old.find(field), field.size(), "\"old_" + field.substr(1));
  const sm::MachineFile older = sm::parse_machine_file(old, "old.json");
  EXPECT_DOUBLE_EQ(older.core.pack_piece, 0);
  EXPECT_EQ(older.core.private_cache_bytes, 0u) << "no cache known: never exceeded";
  EXPECT_DOUBLE_EQ(older.core.wake, 0);
  EXPECT_DOUBLE_EQ(older.core.match, 0);
  EXPECT_DOUBLE_EQ(older.core.match_in_cache, 0);
  // Written before match_in_cache: every list is charged match.
  std::string one_match = sm::to_json(f);
  one_match.replace(one_match.find("\"match_in_cache\""), 16, "\"old_match_in_cache\"");
  EXPECT_DOUBLE_EQ(sm::parse_machine_file(one_match, "one_match.json").core.match_in_cache, 0.75);
  EXPECT_DOUBLE_EQ(older.core.coherence, 0);
  EXPECT_DOUBLE_EQ(older.core.coherence_per_packet, 0);
  EXPECT_FALSE(older.colocated);  // written before "colocated": the normal state
  // Written before the anchor: "coherence" was the charge at 0 packets, x_p
  // per packet from there; the smallest rendezvous message has 9.
  const std::string anchored = "\"coherence_smallest_rendezvous\": 33.5";
  std::string intercept = sm::to_json(f);
  const auto anchor = intercept.find(anchored);
  ASSERT_NE(anchor, std::string::npos);
  intercept.replace(anchor, anchored.size(), "\"coherence\": 10");
  EXPECT_DOUBLE_EQ(sm::parse_machine_file(intercept, "intercept.json").core.coherence, 10 + 9 * 2.25);
  struct Rejected {
    const char *field, *bad, *error;
  };
  for (const Rejected& r : {
           Rejected{"\"bisection\": 2", "\"bisection\": -1", "m.json.levels.core: "},
           Rejected{"\"colocated\": false", "\"colocated\": 1", "m.json.levels.core.colocated: must be true or false"},
           Rejected{"\"coherence_smallest_rendezvous\": 33.5", "\"coherence_smallest_rendezvous\": -2",
                    "coherence_smallest_rendezvous must be"},
           Rejected{"\"wake\": 4.5", "\"wake\": -1", "wake must be"},
           Rejected{"\"match_in_cache\": 0.25", "\"match_in_cache\": -1", "match_in_cache must be"},
           Rejected{"\"coherence_per_packet\": 2.25", "\"coherence_per_packet\": -1", "coherence_per_packet must be"},
           Rejected{"\"pack_piece\": 2.5", "\"pack_piece\": -3", "pack_piece must be"},
           Rejected{"\"coherence_beyond_cache\": 0.625", "\"coherence_beyond_cache\": -1",
                    "coherence_beyond_cache must be"},
       })
    EXPECT_NE(message_with(r.field, r.bad).find(r.error), std::string::npos) << r.field << " -> " << r.bad;
}

TEST(ModelMachineFile, RecordsTheColocatedState) {
  sm::MachineFile f = sm::default_machine_file();
  EXPECT_FALSE(sm::parse_machine_file(sm::to_json(f), "m.json").colocated);
  f.colocated = true;
  EXPECT_TRUE(sm::parse_machine_file(sm::to_json(f), "m.json").colocated);
}

// The lower decile is the 10th of 100 sorted samples' 0-based index 10 (the
// 11th smallest); 9 samples: index 0. The median of an even count is the mean
// of the middle two; neither depends on the samples' order.
TEST(ModelEstimators, LowQuantileAndMedian) {
  std::vector<double> hundred;
  for (int k = 100; k >= 1; --k) hundred.push_back(k);  // 100 .. 1, reversed
  EXPECT_DOUBLE_EQ(sm::low_quantile(hundred), 11);
  EXPECT_DOUBLE_EQ(sm::low_quantile({9, 3, 7, 5, 4, 8, 6, 2, 10}), 2);
  EXPECT_DOUBLE_EQ(sm::median({5, 1, 4}), 4);
  EXPECT_DOUBLE_EQ(sm::median({10, 1, 4, 3}), 3.5);
  // Paired differences where load hit either member: the median keeps the
  // difference the unloaded pairs show (2), a difference of the two series'
  // lower deciles would not.
  EXPECT_DOUBLE_EQ(sm::median({2, 2, -40, 2, 30, 2, 2}), 2);
  EXPECT_THROW(sm::median({}), std::invalid_argument);
  EXPECT_THROW(sm::low_quantile({}), std::invalid_argument);
}

// Rounds of a calibration as measured on this machine (ns): normally a
// cross-core 8-byte hand-off takes ~15x the same-core one, co-located ~4.5x
// (docs/cost-model.md, "The host's states"). The threshold (8x) sits between
// them.
TEST(ModelColocation, DetectsRoundsWhereCrossCoreIsAsCheapAsSameCore) {
  const std::vector<double> cross{521, 155, 548, 153, 530}, same{34.5, 34.1, 56.4, 34.7, 35};
  const sm::ColocationVerdict v = sm::detect_colocation(cross, same);
  EXPECT_EQ(v.colocated, (std::vector<bool>{false, true, false, true, false}));
  EXPECT_EQ(v.normal, 3u);
  EXPECT_FALSE(v.all_colocated());
  // 548 / 56.4 = 9.7: a loaded same-core round still reads as normal; at a
  // threshold of 10 it would not.
  EXPECT_TRUE(sm::detect_colocation(std::vector<double>{548}, std::vector<double>{56.4}, 10).all_colocated());
  const std::vector<double> all_cross{155, 156}, all_same{34.5, 34.6};
  EXPECT_TRUE(sm::detect_colocation(all_cross, all_same).all_colocated());
  // Exactly at the threshold is not below it: normal.
  EXPECT_EQ(sm::detect_colocation(std::vector<double>{80}, std::vector<double>{10}).normal, 1u);
  EXPECT_THROW(sm::detect_colocation(cross, all_same), std::invalid_argument);
  EXPECT_THROW(sm::detect_colocation(std::vector<double>{}, std::vector<double>{}), std::invalid_argument);
  EXPECT_THROW(sm::detect_colocation(std::vector<double>{0}, std::vector<double>{1}), std::invalid_argument);
  EXPECT_THROW(sm::detect_colocation(all_cross, all_same, 0), std::invalid_argument);
}

// Rounds of calibrations as measured on this machine (slow_rounds.hpp): the
// 16 KiB same-core copy and the 64-byte same-core message per round, ns.
TEST(ModelSlowRounds, DetectsRoundsWhoseCopiesTookFarLongerThanTheFastestRounds) {
  // Normal rounds (the first 12 % faster), one with the copy 2.2x as long,
  // one with both 1.4x.
  const std::vector<std::vector<double>> rounds{{299, 337, 739, 364, 470, 341}, {21, 21, 23, 21, 30, 22}};
  EXPECT_EQ(sm::detect_slow_rounds(rounds), (std::vector<bool>{false, false, true, false, true, false}));
  // A calibration whose first round was the slow one (so that no round ran
  // 12 % faster): its copy came within 1.25 of the fastest, its message took
  // 1.5 times as long.
  const std::vector<std::vector<double>> first{{422, 342, 373, 360, 340, 338}, {34, 22, 22, 22, 22, 22}};
  EXPECT_EQ(sm::detect_slow_rounds(first), (std::vector<bool>{true, false, false, false, false, false}));
  const std::vector<std::vector<double>> copy_only{first[0]};
  EXPECT_EQ(sm::detect_slow_rounds(copy_only), std::vector<bool>(6, false));
  EXPECT_EQ(sm::detect_slow_rounds(rounds, 1.6), (std::vector<bool>{false, false, true, false, false, false}));
  // Exactly at the factor is not beyond it; the fastest round never is.
  EXPECT_EQ(sm::detect_slow_rounds(std::vector<std::vector<double>>{{100, 130}}), (std::vector<bool>{false, false}));
  EXPECT_EQ(sm::detect_slow_rounds(std::vector<std::vector<double>>{{500}}), std::vector<bool>{false});
  EXPECT_THROW(sm::detect_slow_rounds(std::vector<std::vector<double>>{}), std::invalid_argument);
  EXPECT_THROW(sm::detect_slow_rounds(std::vector<std::vector<double>>{{}}), std::invalid_argument);
  EXPECT_THROW(sm::detect_slow_rounds(std::vector<std::vector<double>>{{1, 2}, {1}}), std::invalid_argument);
  EXPECT_THROW(sm::detect_slow_rounds(std::vector<std::vector<double>>{{1, 0}}), std::invalid_argument);
  EXPECT_THROW(sm::detect_slow_rounds(rounds, 0.9), std::invalid_argument);
}

TEST(ModelMachineFile, ExchangeCorrectionInterpolatesInLogBytesAndLogScale) {
  sm::MachineFile f = sm::default_machine_file();
  f.exchange.bytes = {128, 2048};
  f.exchange.messages_per_core = {32, 512};
  f.exchange.ratio["ac"] = {{2.0, 1.0}, {4.0, 3.0}};
  EXPECT_DOUBLE_EQ(f.exchange.at("ac", 64, 32), 2.0);
  EXPECT_DOUBLE_EQ(f.exchange.at("ac", 512, 32), 1.5);  // halfway in log2: 7 .. 11
  EXPECT_DOUBLE_EQ(f.exchange.at("ac", 1e6, 1), 1.0);
  EXPECT_DOUBLE_EQ(f.exchange.at("ac", 128, 128), 3.0);  // halfway in log2: 5 .. 9
  EXPECT_DOUBLE_EQ(f.exchange.at("ac", 512, 128), 2.5);  // halfway both ways
  EXPECT_DOUBLE_EQ(f.exchange.at("ac", 2048, 1e6), 3.0);
  EXPECT_DOUBLE_EQ(f.exchange.at("lp", 512, 128), 1.0);  // no correction measured
  const sm::MachineFile back = sm::parse_machine_file(sm::to_json(f), "m.json");
  EXPECT_EQ(back.exchange.bytes, f.exchange.bytes);
  EXPECT_EQ(back.exchange.messages_per_core, f.exchange.messages_per_core);
  EXPECT_EQ(back.exchange.ratio, f.exchange.ratio);
  std::string text = sm::to_json(f);
  const auto at = text.find("2048");
  ASSERT_NE(at, std::string::npos);
  try {
    sm::parse_machine_file(text.replace(at, 4, "100"), "m.json");
    ADD_FAILURE() << "decreasing sizes accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("exchange_correction.bytes: must be increasing"), std::string::npos)
        << e.what();
  }
}

// A file written before the corrections had scales holds one table of ratios
// per scheduler: it reads as one table for every scale. A file with scales
// needs one table per scale, and increasing scales.
TEST(ModelMachineFile, ExchangeCorrectionWithoutScalesIsOneTableForEveryScale) {
  sm::MachineFile f = sm::default_machine_file();
  std::string older = sm::to_json(f);
  const auto colocated = older.find("\"colocated\": false");
  ASSERT_NE(colocated, std::string::npos) << older;
  older.insert(colocated, "\"exchange_correction\": {\"bytes\": [128, 2048], \"ratio\": {\"ac\": [2.0, 1.0]}}, ");
  const sm::MachineFile back = sm::parse_machine_file(older, "old.json");
  ASSERT_EQ(back.exchange.messages_per_core.size(), 1u);
  for (double per_core : {0.0, 32.0, 1e6}) EXPECT_DOUBLE_EQ(back.exchange.at("ac", 128, per_core), 2.0) << per_core;
  const auto refused = [](const sm::ExchangeCorrection& c, const std::string& what) {
    sm::MachineFile bad = sm::default_machine_file();
    bad.exchange = c;
    try {
      sm::parse_machine_file(sm::to_json(bad), "m.json");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  sm::ExchangeCorrection c;
  c.bytes = {128, 2048};
  c.messages_per_core = {32, 512};
  c.ratio["ac"] = {{2.0, 1.0}};
  refused(c, "exchange_correction.ratio.ac: must have one array per entry of messages_per_core");
  c.messages_per_core = {512, 32};
  c.ratio["ac"] = {{2.0, 1.0}, {4.0, 3.0}};
  refused(c, "exchange_correction.messages_per_core: must be increasing numbers >= 1");
  c.messages_per_core = {32, 512};
  c.ratio["ac"] = {{2.0, 1.0}, {4.0}};
  refused(c, "exchange_correction.ratio.ac[1]: must have one number per entry of bytes");
}

// The fixed time of an exchange per process round-trips; a file without it
// (written before it was measured) reads as 0; a negative or non-numeric one
// is refused by name.
TEST(ModelMachineFile, ExchangeOverheadRoundTripsDefaultsToZeroAndRejectsBadValues) {
  sm::MachineFile f = sm::default_machine_file();
  f.exchange.bytes = {128, 2048};
  f.exchange.messages_per_core = {32};
  f.exchange.ratio["ac"] = {{2.0, 1.0}};
  f.exchange.overhead_ns_per_process = 212.5;
  const std::string text = sm::to_json(f);
  EXPECT_DOUBLE_EQ(sm::parse_machine_file(text, "m.json").exchange.overhead_ns_per_process, 212.5);
  const auto field = text.find("\"overhead_ns_per_process\": 212.5");
  ASSERT_NE(field, std::string::npos) << text;
  const auto with = [&](const std::string& value) {
    std::string changed = text;
    return changed.replace(field, std::string("\"overhead_ns_per_process\": 212.5").size(), value);
  };
  EXPECT_DOUBLE_EQ(sm::parse_machine_file(with("\"older\": 1"), "m.json").exchange.overhead_ns_per_process, 0);
  for (const char* bad : {"\"overhead_ns_per_process\": -1", "\"overhead_ns_per_process\": \"230\""}) {
    SCOPED_TRACE(bad);
    try {
      sm::parse_machine_file(with(bad), "m.json");
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("exchange_correction.overhead_ns_per_process: must be a number >= 0"),
                std::string::npos)
          << e.what();
    }
  }
}
