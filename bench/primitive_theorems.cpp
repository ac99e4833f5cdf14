// Prints, as Markdown tables, the theorem checks of the Varvarigos library run
// in the slot simulator: total exchange on hypercubes and tori (optimal = the
// critical sum h; the never-idle greedy's excess over h), and PMNB/PMNA on
// edge-disjoint spanning trees against max(M/2k, delta) <= T <= M/k + Lbar +
// 2 delta. Exits 1 if any check fails. --quick runs small sizes only (the
// smoke test); --max-cube D and --max-torus S bound the sizes.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/primitives/isotropic.hpp"
#include "switchyard/primitives/pmnb.hpp"
#include "switchyard/primitives/random_graph.hpp"
#include "switchyard/primitives/slot_simulator.hpp"

namespace sp = switchyard::primitives;

namespace {

bool all_passed = true;

void check(bool ok, const std::string& what) {
  if (!ok) {
    all_passed = false;
    std::printf("CHECK FAILED: %s\n", what.c_str());
  }
}

std::int32_t simulate_isotropic(const sp::VirtualNetwork& g, const sp::IsotropicLattice& lattice,
                                const sp::TaskMatrix& m, const sp::IsotropicSchedule& schedule,
                                const sp::PacketSet& packets) {
  sp::SlotSimulator simulator(g, {sp::Ports::all_port, sp::Duplex::full}, packets);
  sp::IsotropicExpander expander(lattice, m, schedule);
  for (std::int32_t t = 0; t < expander.slots(); ++t) simulator.run_slot(expander.next());
  const auto result = simulator.finish();
  check(result.deliveries == packets.deliveries(), g.name() + ": not every packet delivered");
  return result.slots;
}

// One row: h, the optimal schedule's simulated slots, and each greedy priority's slots and excess.
void total_exchange_row(const sp::VirtualNetwork& g) {
  const auto start = std::chrono::steady_clock::now();
  const sp::IsotropicLattice lattice(g);
  const auto m = sp::total_exchange_task_matrix(lattice);
  const auto packets = sp::isotropic_packets(lattice, m);
  const std::int64_t h = sp::critical_sum(m);
  const std::int32_t optimal = simulate_isotropic(g, lattice, m, sp::optimal_isotropic_schedule(m), packets);
  check(optimal == h, g.name() + ": optimal TE took " + std::to_string(optimal) + " slots, h = " + std::to_string(h));
  std::string greedy;
  for (auto priority : {sp::GreedyPriority::row_order, sp::GreedyPriority::farthest_first,
                        sp::GreedyPriority::nearest_first, sp::GreedyPriority::random}) {
    const std::int32_t slots =
        simulate_isotropic(g, lattice, m, sp::greedy_isotropic_schedule(m, priority, 1), packets);
    check(slots >= h, g.name() + ": greedy beat the lower bound h");
    char cell[64];
    std::snprintf(cell, sizeof cell, " %d (+%lld, %.4f) |", slots, static_cast<long long>(slots - h),
                  static_cast<double>(slots) / static_cast<double>(h));
    greedy += cell;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("| %s | %d | %d | %lld | %d |%s %.1f |\n", g.name().c_str(), g.size(), g.diameter(),
              static_cast<long long>(h), optimal, greedy.c_str(), seconds);
  std::fflush(stdout);
}

void total_exchange_tables(int max_cube, int max_torus) {
  std::printf("\n### Total exchange, all-port full duplex: optimal = h; greedy slots (excess over h, ratio)\n\n");
  std::printf(
      "| network | N | diameter | h | optimal (simulated) | greedy row order | greedy farthest first | "
      "greedy nearest first | greedy random | seconds |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int d = 1; d <= max_cube; ++d) total_exchange_row(sp::VirtualNetwork::hypercube(d));
  std::vector<std::vector<sp::Node>> tori = {{3, 3}, {4, 4}, {5, 5}, {7, 9}, {2, 4, 6}, {4, 4, 4}};
  for (sp::Node s = 8; s <= max_torus; s *= 2) tori.push_back({s, s});
  if (max_torus >= 8) tori.push_back({8, 8, 8});
  for (const auto& sides : tori) total_exchange_row(sp::VirtualNetwork::torus(sides));
}

void pmnb_table(const std::vector<sp::VirtualNetwork>& networks) {
  std::printf("\n### PMNB and PMNA on k edge-disjoint spanning trees, all-port: slots against the bounds\n\n");
  std::printf(
      "| network | N | trees | k | Lbar | delta | prefix | M | full: max(M/2k,delta) | full: T | M/k+Lbar+2delta | "
      "half: max(M/k,delta) | half: T | PMNA full: T |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::mt19937_64 rng(2024);
  for (const auto& g : networks) {
    const auto trees = sp::edge_disjoint_spanning_trees(g);
    const sp::Node n = g.size();
    for (std::int64_t m : {std::int64_t{1}, std::int64_t{n} / 8 + 1, std::int64_t{n} / 2, std::int64_t{n},
                           2 * std::int64_t{n}, 4 * std::int64_t{n}}) {
      std::vector<sp::Node> nodes;
      for (std::int64_t i = 0; i < m; ++i) nodes.push_back(std::uniform_int_distribution<sp::Node>(0, n - 1)(rng));
      std::int32_t slots[3] = {};
      sp::PmnbPlan plans[3];
      const sp::Duplex duplexes[3] = {sp::Duplex::full, sp::Duplex::half, sp::Duplex::full};
      for (int i = 0; i < 3; ++i) {
        plans[i] = i < 2 ? sp::pmnb_plan(g, sp::pmnb_packets(n, nodes), trees, duplexes[i])
                         : sp::pmna_plan(g, sp::pmna_packets(n, nodes), trees, duplexes[i]);
        const auto r = sp::simulate(g, {sp::Ports::all_port, duplexes[i]}, plans[i].packets, plans[i].schedule);
        check(r.deliveries == plans[i].packets.deliveries(), g.name() + ": not every packet delivered");
        slots[i] = r.slots;
        const std::string what = g.name() + " M=" + std::to_string(m) + " case " + std::to_string(i);
        check(slots[i] <= plans[i].upper_bound(), what + ": above M/k + Lbar + 2 delta");
        check(slots[i] >= (duplexes[i] == sp::Duplex::full ? plans[i].lower_bound_full() : plans[i].lower_bound_half()),
              what + ": below the lower bound");
      }
      const auto& p = plans[0];
      std::printf("| %s | %d | %s | %d | %.1f | %d | %d | %lld | %.1f | %d | %.1f | %.1f | %d | %d |\n",
                  g.name().c_str(), n, trees.construction.c_str(), p.trees, p.mean_tree_diameter, p.diameter,
                  p.prefix_slots, static_cast<long long>(m), p.lower_bound_full(), slots[0], p.upper_bound(),
                  p.lower_bound_half(), slots[1], slots[2]);
      std::fflush(stdout);
    }
  }
}

// The largest sizes whose TE packets fit (isotropic_packets refuses more).
int parse_int(const char* text, const char* option, long most) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > most) {
    std::fprintf(stderr, "primitive_theorems: %s needs an integer in 1..%ld, not '%s'\n", option, most, text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  int max_cube = 12, max_torus = 64;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--quick") {
      quick = true;
      max_cube = 6;
      max_torus = 16;
    } else if ((arg == "--max-cube" || arg == "--max-torus") && i + 1 < argc) {
      const char* option = argv[i++];
      if (arg == "--max-cube")
        max_cube = parse_int(argv[i], option, 13);
      else
        max_torus = parse_int(argv[i], option, 90);
    } else {
      std::fprintf(stderr, "usage: primitive_theorems [--quick] [--max-cube D] [--max-torus S]\n");
      return 2;
    }
  }
  total_exchange_tables(max_cube, max_torus);
  std::vector<sp::VirtualNetwork> networks = {
      sp::VirtualNetwork::hypercube(4),     sp::VirtualNetwork::hypercube(6), sp::VirtualNetwork::torus({8, 8}),
      sp::VirtualNetwork::torus({4, 4, 4}), sp::VirtualNetwork::complete(16), sp::random_connected_graph(64, 128, 1)};
  if (!quick) {
    for (auto& g :
         {sp::VirtualNetwork::hypercube(8), sp::VirtualNetwork::hypercube(10), sp::VirtualNetwork::torus({16, 16}),
          sp::VirtualNetwork::torus({32, 32}), sp::VirtualNetwork::complete(64),
          sp::random_connected_graph(256, 512, 2), sp::random_connected_graph(512, 2048, 3)}) {
      networks.push_back(g);
    }
  }
  pmnb_table(networks);
  std::printf("\n%s\n", all_passed ? "every check passed" : "SOME CHECKS FAILED");
  return all_passed ? 0 : 1;
}
