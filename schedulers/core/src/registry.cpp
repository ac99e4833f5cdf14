#include "switchyard/errors.hpp"
#include "switchyard/schedulers/auto_scheduler.hpp"
#include "switchyard/schedulers/optimal.hpp"
#include "switchyard/schedulers/scheduler_table.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

namespace {

constexpr SchedulerTraits kPlain{};
constexpr SchedulerTraits kCandidate{.auto_candidate = true};

constexpr SchedulerDescriptor kTable[] = {
    {"ac", SchedulerKind::online, nullptr, OnlineScheme::ac, kCandidate},
    {"lp", SchedulerKind::static_phases, [](const CommMatrix& m, const ScheduleOptions&) { return schedule_lp(m); },
     OnlineScheme::none, kCandidate},
    {"gm", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) { return schedule_gm(m, o.seed); }, OnlineScheme::none, kPlain},
    {"cgm", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) { return schedule_cgm(m, o.seed); }, OnlineScheme::none,
     kCandidate},
    {"rsn", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) { return schedule_rsn(m, o.seed); }, OnlineScheme::none, kPlain},
    {"rsnh", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) { return schedule_rsnh(m, o.seed); }, OnlineScheme::none,
     kPlain},
    {"optimal", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions&) { return schedule_optimal(m); }, OnlineScheme::none, kCandidate},
    {"optimal-bytes", SchedulerKind::static_phases,
     [](const CommMatrix& m, const ScheduleOptions& o) {
       return schedule_optimal_bytes(m, OptimalBytesOptions{o.max_phases});
     },
     OnlineScheme::none, kCandidate},
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

Schedule make_schedule(const std::string& name, const CommMatrix& m, const ScheduleOptions& options) {
  const SchedulerDescriptor* d = find_scheduler(name);
  if (d && d->make) return d->make(m, options);
  std::string known;
  for (const auto& n : static_scheduler_names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("switchyard: unknown static scheduler '" + name + "' (known: " + known + ")");
}

Schedule make_schedule(const std::string& name, const CommMatrix& m, std::uint64_t seed) {
  return make_schedule(name, m, ScheduleOptions{seed, 0});
}

}  // namespace switchyard::schedulers
