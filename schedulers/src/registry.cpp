#include <algorithm>
#include <bit>

#include "switchyard/errors.hpp"
#include "switchyard/schedulers/optimal.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

const std::vector<std::string>& static_scheduler_names() {
  static const std::vector<std::string> names{"lp", "gm", "cgm", "rsn", "rsnh", "optimal", "optimal-bytes"};
  return names;
}

namespace {

[[noreturn]] void unknown_scheduler(const std::string& name) {
  std::string known;
  for (const auto& n : static_scheduler_names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("switchyard: unknown static scheduler '" + name + "' (known: " + known + ")");
}

}  // namespace

Schedule make_schedule(const std::string& name, const CommMatrix& m, const ScheduleOptions& options) {
  if (name == "lp") return schedule_lp(m);
  if (name == "gm") return schedule_gm(m, options.seed);
  if (name == "cgm") return schedule_cgm(m, options.seed);
  if (name == "rsn") return schedule_rsn(m, options.seed);
  if (name == "rsnh") return schedule_rsnh(m, options.seed);
  if (name == "optimal") return schedule_optimal(m);
  if (name == "optimal-bytes") return schedule_optimal_bytes(m, OptimalBytesOptions{options.max_phases});
  unknown_scheduler(name);
}

MatrixShape MatrixShape::of(const CommMatrix& m) {
  MatrixShape shape{m.size(), m.messages(), m.max_degree(), 0, false};
  for (Rank i = 0; i < m.size(); ++i) {
    for (const MatrixEntry& e : m.row(i)) {
      shape.largest_message = std::max(shape.largest_message, e.bytes);
      shape.self_messages = shape.self_messages || e.peer == i;
    }
  }
  return shape;
}

// Each model is the product of the loop bounds named in the scheduler's source.
double schedule_work(const std::string& name, const MatrixShape& shape) {
  const auto n = static_cast<double>(shape.processes), delta = static_cast<double>(shape.max_degree);
  const double graph = n + static_cast<double>(shape.messages);  // one sweep of the rows and their entries
  // LP: a self-message is placed through a busy table of n·(n − 1) bits.
  if (name == "lp") return graph + (shape.self_messages ? n * n : 0);
  // GM, CGM, RS_N: at most 2Δ − 1 masking phases, each visiting every row and
  // scanning at most its entries.
  if (name == "gm" || name == "cgm" || name == "rsn") return 2 * delta * graph;
  // RS_NH: the median cutoff splits up to half the picks, about 4x RS_N's phases.
  if (name == "rsnh") return 8 * delta * graph;
  // optimal: the Δ-regular colouring follows alternating paths, Δ sweeps at worst.
  if (name == "optimal") return delta * graph;
  // optimal-bytes: Birkhoff-von Neumann phases (a few per Δ), each bisecting
  // on the largest entry's bits with a sweep of the graph per probe.
  if (name == "optimal-bytes") {
    const double probes = std::bit_width(shape.largest_message) + 1.0;
    return 4 * delta * graph * probes;
  }
  unknown_scheduler(name);
}

double schedule_table_bytes(const std::string& name, const MatrixShape& shape) {
  const auto n = static_cast<double>(shape.processes);
  return name == "lp" && shape.self_messages ? n * n / 8 : 0;
}

Schedule make_schedule(const std::string& name, const CommMatrix& m, std::uint64_t seed) {
  return make_schedule(name, m, ScheduleOptions{seed, 0});
}

}  // namespace switchyard::schedulers
