// The C³ model: Fig. 1's send and receive times, Fig. 2's charges, Fig. 3's
// table for the 256-processor Delta, and the k-level algorithms' superstep
// descriptions delivering every piece, for any p.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "switchyard/model/algorithms.hpp"
#include "switchyard/model/cost.hpp"

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
          if (name != "1-lev-our-br" || piece.target == t.dst || it->second == t.src) next[{piece.origin, piece.target}] = t.dst;
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

TEST(ModelFig3, PrintTable) {
  for (const std::string& name : sm::algorithm_names(sm::Operation::one_to_all)) {
    for (bool copies : {false, true}) {
    const auto [a8, b] = delta_line(name, 8, copies);
    const auto [a0, b0] = delta_line(name, 0, copies);
    std::printf("%-20s %7.1f s + %6.3f L   (with s=8: %7.1f + %6.3f L)  additive h %5.1f\n", name.c_str(), (a8 - a0) / 8, b, a8, b, a0);
    }
  }
}
