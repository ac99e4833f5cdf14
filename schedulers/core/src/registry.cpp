#include "switchyard/errors.hpp"
#include "switchyard/schedulers/optimal.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

const std::vector<std::string>& static_scheduler_names() {
  static const std::vector<std::string> names{"lp", "gm", "cgm", "rsn", "rsnh", "optimal", "optimal-bytes"};
  return names;
}

Schedule make_schedule(const std::string& name, const CommMatrix& m, const ScheduleOptions& options) {
  if (name == "lp") return schedule_lp(m);
  if (name == "gm") return schedule_gm(m, options.seed);
  if (name == "cgm") return schedule_cgm(m, options.seed);
  if (name == "rsn") return schedule_rsn(m, options.seed);
  if (name == "rsnh") return schedule_rsnh(m, options.seed);
  if (name == "optimal") return schedule_optimal(m);
  if (name == "optimal-bytes") return schedule_optimal_bytes(m, OptimalBytesOptions{options.max_phases});
  std::string known;
  for (const auto& n : static_scheduler_names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("switchyard: unknown static scheduler '" + name + "' (known: " + known + ")");
}

Schedule make_schedule(const std::string& name, const CommMatrix& m, std::uint64_t seed) {
  return make_schedule(name, m, ScheduleOptions{seed, 0});
}

}  // namespace switchyard::schedulers
