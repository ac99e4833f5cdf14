#include <algorithm>

#include "open_shop.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/schedulers/auto_scheduler.hpp"
#include "switchyard/schedulers/optimal.hpp"
#include "switchyard/schedulers/scheduler_table.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

namespace {

// The work models: each is the product of the loop bounds named in the
// scheduler's source. One sweep of the rows and their entries is n + m steps.
double graph_sweep(const MatrixShape& s) { return static_cast<double>(s.processes) + static_cast<double>(s.messages); }
double delta(const MatrixShape& s) { return static_cast<double>(s.max_degree); }
// LP: a self-message is placed through a busy table of n·(n − 1) bits.
double lp_work(const MatrixShape& s) {
  const auto n = static_cast<double>(s.processes);
  return graph_sweep(s) + (s.self_messages ? n * n : 0);
}
// GM, CGM, RS_N: at most 2Δ − 1 masking phases, each visiting every row and
// scanning at most its entries.
double masking_work(const MatrixShape& s) { return 2 * delta(s) * graph_sweep(s); }
// RS_NH: the median cutoff splits up to half the picks, about 4x RS_N's phases.
double rsnh_work(const MatrixShape& s) { return 8 * delta(s) * graph_sweep(s); }
// optimal: the Δ-regular colouring follows alternating paths, Δ sweeps at worst.
double optimal_work(const MatrixShape& s) { return delta(s) * graph_sweep(s); }
// optimal-bytes (the open shop with the bottleneck matching, open_shop.hpp):
// at most m + 2n phases, each cutting at most a piece per process and raising
// its matching by searches of at most 32 m/n + 64 <= 8192 messages looked at
// (about Δ on the dense shapes) per line released, the lines released
// amortizing to a few per piece cut.
double optimal_bytes_work(const MatrixShape& s) {
  return graph_sweep(s) * (static_cast<double>(s.processes) + delta(s)) + graph_sweep(s);
}

constexpr SchedulerTraits kPlain{};
constexpr SchedulerTraits kCandidate{.auto_candidate = true};

constexpr SchedulerDescriptor kTable[] = {
    {"ac", SchedulerKind::online, nullptr, OnlineScheme::ac, kCandidate},
    {"lp", SchedulerKind::static_phases, [](const CommMatrix& m, const ScheduleOptions&) { return schedule_lp(m); },
     OnlineScheme::none, kCandidate, lp_work},
    {"gm", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) { return schedule_gm(m, o.seed); }, OnlineScheme::none, kPlain,
     masking_work},
    {"cgm", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) { return schedule_cgm(m, o.seed); }, OnlineScheme::none,
     kCandidate, masking_work},
    {"rsn", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) { return schedule_rsn(m, o.seed); }, OnlineScheme::none, kPlain,
     masking_work},
    {"rsnh", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) { return schedule_rsnh(m, o.seed); }, OnlineScheme::none, kPlain,
     rsnh_work},
    {"optimal", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions&) { return schedule_optimal(m); }, OnlineScheme::none, kCandidate,
     optimal_work},
    {"optimal-bytes", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) {
       return schedule_optimal_bytes(m, OptimalBytesOptions{o.max_phases});
     },
     OnlineScheme::none, kCandidate, optimal_bytes_work},
    {"drsn", SchedulerKind::online, nullptr, OnlineScheme::drsn,
     SchedulerTraits{.auto_candidate = true, .blocking_sends = true, .plan_per_run = true}},
};

std::vector<std::string> names_where(bool (*keep)(const SchedulerDescriptor&)) {
  std::vector<std::string> names;
  for (const SchedulerDescriptor& d : kTable) {
    if (keep(d)) names.emplace_back(d.name);
  }
  return names;
}

}  // namespace

std::span<const SchedulerDescriptor> scheduler_table() { return kTable; }

const SchedulerDescriptor* find_scheduler(std::string_view name) {
  for (const SchedulerDescriptor& d : kTable) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

const std::vector<std::string>& static_scheduler_names() {
  static const std::vector<std::string> names =
      names_where([](const SchedulerDescriptor& d) { return d.kind == SchedulerKind::static_phases; });
  return names;
}

const std::vector<std::string>& online_scheduler_names() {
  static const std::vector<std::string> names =
      names_where([](const SchedulerDescriptor& d) { return d.kind == SchedulerKind::online; });
  return names;
}

std::vector<std::string> default_exchange_schedulers() {
  return names_where([](const SchedulerDescriptor&) { return true; });
}

const std::vector<std::string>& auto_scheduler_candidates() {
  static const std::vector<std::string> names =
      names_where([](const SchedulerDescriptor& d) { return d.traits.auto_candidate; });
  return names;
}

bool is_exchange_scheduler(const std::string& name) { return name == kAutoScheduler || find_scheduler(name); }

namespace {

// The descriptor of static scheduler `name`, or an error naming the known ones.
const SchedulerDescriptor& static_scheduler(const std::string& name) {
  const SchedulerDescriptor* d = find_scheduler(name);
  if (d && d->kind == SchedulerKind::static_phases) return *d;
  std::string known;
  for (const auto& n : static_scheduler_names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("switchyard: unknown static scheduler '" + name + "' (known: " + known + ")");
}

}  // namespace

Schedule make_schedule(const std::string& name, const CommMatrix& m, const ScheduleOptions& options) {
  return static_scheduler(name).make(m, options);
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

double schedule_work(const std::string& name, const MatrixShape& shape) { return static_scheduler(name).work(shape); }

double schedule_table_bytes(const std::string& name, const MatrixShape& shape) {
  const auto n = static_cast<double>(shape.processes);
  if (name == "optimal-bytes")
    return static_cast<double>(detail::open_shop_grid_bytes(shape.processes, shape.messages));
  return name == "lp" && shape.self_messages ? n * n / 8 : 0;
}

Schedule make_schedule(const std::string& name, const CommMatrix& m, std::uint64_t seed) {
  return make_schedule(name, m, ScheduleOptions{seed, 0});
}

}  // namespace switchyard::schedulers
