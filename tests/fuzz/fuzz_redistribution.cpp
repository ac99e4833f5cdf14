// libFuzzer harness: the texts of `switchyard redistribute` (an extent, two
// distributions, a schedule kind, one per line), parsed and planned. Bad text
// must be an InvalidArgument; a plan must be a valid schedule of its
// communication table, and a canonical distribution must read back as itself.
#include <switchyard/errors.hpp>
#include <switchyard/schedulers/redistribution/layout.hpp>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>
#include <switchyard/schedulers/redistribution/redistribution_tables.hpp>
#include <switchyard/schedulers/schedule.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rd = switchyard::schedulers::redistribution;

namespace {

// Planning is linear in the elements and quadratic in the processes: keep
// each input to well under a millisecond.
constexpr rd::Index kMaxFuzzElements = 1 << 16;
constexpr switchyard::Rank kMaxFuzzProcesses = 64;

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (out.size() < 4) {
    const auto end = text.find('\n');
    out.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

std::optional<rd::Layout> layout(const std::vector<rd::Index>& extent, std::string_view text) {
  try {
    const rd::Distribution d = rd::Distribution::parse(text);
    if (rd::Distribution::parse(d.str()).str() != d.str()) std::abort();  // canonical text reads back
    return rd::Layout(extent, d);
  } catch (const switchyard::InvalidArgument&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto parts = lines(std::string_view(reinterpret_cast<const char*>(data), size));
  if (parts.size() < 4) return 0;
  std::vector<rd::Index> extent;
  try {
    extent = rd::parse_extent(parts[0]);
  } catch (const switchyard::InvalidArgument&) {
    return 0;
  }
  const auto src = layout(extent, parts[1]), dst = layout(extent, parts[2]);
  const auto kind = rd::parse_schedule_kind(parts[3]);
  if (!src || !dst || !kind || src->elements() > kMaxFuzzElements) return 0;
  if (src->processes() > kMaxFuzzProcesses || dst->processes() > kMaxFuzzProcesses) return 0;
  try {
    const rd::RedistributionPlan plan(*src, *dst, *kind);
    switchyard::schedulers::validate(plan.schedule(), rd::comm_matrix(plan.com()),
                                     plan.contention_free() ? switchyard::schedulers::Contention::forbidden
                                                            : switchyard::schedulers::Contention::allowed);
  } catch (const rd::TableNotApplicable&) {
  }
  return 0;
}
