#include "switchyard/schedulers/phase_statistics.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

#include "scheduler_support.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

PhaseStatistics phase_statistics(const std::string& scheduler, Rank n, Rank d, std::uint32_t samples,
                                 std::uint64_t seed, const Progress& progress) {
  if (samples == 0) throw InvalidArgument("switchyard: phase_statistics: at least one sample is needed");
  PhaseStatistics st;
  st.min = std::numeric_limits<std::uint64_t>::max();
  double phases = 0, ms = 0;
  for (std::uint32_t i = 0; i < samples; ++i) {
    const CommMatrix m = fig7_matrix(n, d, 1, detail::stream_seed(seed, 2 * std::uint64_t{i}));
    const std::uint64_t scheduler_seed = detail::stream_seed(seed, 2 * std::uint64_t{i} + 1);
    const auto start = std::chrono::steady_clock::now();
    const Schedule s =
        scheduler == "cgm" ? schedule_cgm(m, scheduler_seed, false) : make_schedule(scheduler, m, scheduler_seed);
    ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    validate(s, m);
    const std::uint64_t p = s.phases.size();
    phases += static_cast<double>(p);
    st.min = std::min(st.min, p);
    st.max = std::max(st.max, p);
    if (progress) progress(i + 1, samples, "schedules");
  }
  st.avg = phases / samples;
  st.schedule_ms_avg = ms / samples;
  return st;
}

}  // namespace switchyard::schedulers
