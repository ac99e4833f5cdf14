// switchyard::model::sample_host_state: the host's figures on bare threads
// (their values are the host's; here: all there, in range, and every byte
// the sampling copies or gathers checked).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "switchyard/model/calibration/host_state.hpp"
#include "switchyard/topology.hpp"

namespace sm = switchyard::model;
namespace smc = switchyard::model::calibration;

namespace {

void expect_positive(const std::vector<double>& samples, std::size_t count, const char* name) {
  ASSERT_EQ(samples.size(), count) << name;
  for (double x : samples) {
    EXPECT_TRUE(std::isfinite(x)) << name;
    EXPECT_GT(x, 0) << name;
  }
}

}  // namespace

TEST(HostState, GatheredLinesAreEachLineOnce) {
  for (const std::uint64_t pieces : {smc::detail::kGatherRun, std::uint64_t{1024}}) {
    std::vector<std::uint64_t> lines;
    for (std::uint64_t j = 0; j < pieces; ++j) lines.push_back(smc::detail::gathered_line(j, pieces));
    std::vector<std::uint64_t> sorted = lines, expected(pieces);
    std::sort(sorted.begin(), sorted.end());
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(sorted, expected) << pieces;
  }
  // Down the columns: pieces 0 and 1 are a column (pieces / kGatherRun lines) apart.
  EXPECT_EQ(smc::detail::gathered_line(1, 1024), 1024 / smc::detail::kGatherRun);
  EXPECT_EQ(smc::detail::gathered_line(smc::detail::kGatherRun, 1024), 1u);
}

TEST(HostState, SamplesEveryFigureOnTwoCoresAndNoRoundTripOnOne) {
  const switchyard::Topology topology;
  const auto& cores = topology.allowed_cores();
  ASSERT_FALSE(cores.empty());
  const int a = cores.front().os_index, b = cores.back().os_index;
  const smc::HostStateSamples two = smc::sample_host_state(topology, a, b, 3);
  expect_positive(two.private_copy_ns_per_line, 3, "copy");
  expect_positive(two.gather_ns_per_piece, 3, "gather");
  expect_positive(two.line_round_trip_ns, a != b ? 3 : 0, "round trip");
  const smc::HostStateSamples one = smc::sample_host_state(topology, a, a, 2);
  expect_positive(one.private_copy_ns_per_line, 2, "copy on one core");
  expect_positive(one.gather_ns_per_piece, 2, "gather on one core");
  EXPECT_TRUE(one.line_round_trip_ns.empty());
}

TEST(HostState, RejectsNoRunsAndCoresNotAllowed) {
  const switchyard::Topology topology;
  const int a = topology.allowed_cores().front().os_index;
  EXPECT_THROW(smc::sample_host_state(topology, a, a, 0), std::invalid_argument);
  EXPECT_THROW(smc::sample_host_state(topology, a, -1, 1), std::invalid_argument);
  EXPECT_THROW(smc::sample_host_state(topology, 1 << 20, a, 1), std::invalid_argument);
}
