#include "switchyard/errors.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

const std::vector<std::string>& static_scheduler_names() {
  static const std::vector<std::string> names{"lp", "gm", "cgm", "rsn", "rsnh"};
  return names;
}

Schedule make_schedule(const std::string& name, const CommMatrix& m, std::uint64_t seed) {
  if (name == "lp") return schedule_lp(m);
  if (name == "gm") return schedule_gm(m, seed);
  if (name == "cgm") return schedule_cgm(m, seed);
  if (name == "rsn") return schedule_rsn(m, seed);
  if (name == "rsnh") return schedule_rsnh(m, seed);
  std::string known;
  for (const auto& n : static_scheduler_names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("switchyard: unknown static scheduler '" + name + "' (known: " + known + ")");
}

}  // namespace switchyard::schedulers
