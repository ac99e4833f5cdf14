// switchyard::model::calibrate on the runtime: short calibrations whose
// figures must all be there and in range (the values themselves depend on the
// machine; their repeatability is measured with `switchyard model calibrate`).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "switchyard/model/calibration/calibration.hpp"
#include "switchyard/model/machine_file.hpp"
#include "switchyard/runtime.hpp"

namespace sm = switchyard::model;
namespace smc = switchyard::model::calibration;

namespace {

smc::CalibrationOptions short_calibration() {
  smc::CalibrationOptions o;
  o.repetitions = 14;  // 2 runs in each of the 7 rounds
  o.attempts = 1;  // no retry (and no 5 s pause) when the host co-locates the cores
  return o;
}

}  // namespace

TEST(ModelCalibration, MeasuresEveryParameterWithEachRoundCheckedAtBothEnds) {
  switchyard::Runtime rt;
  const sm::MachineFile f = smc::calibrate(rt, short_calibration());
  EXPECT_NO_THROW(f.core.validate());
  EXPECT_EQ(f.core.cores, rt.cores().size());
  EXPECT_GT(f.core.unit_ns, 0);
  EXPECT_EQ(f.core.eager_limit, switchyard::RunOptions{}.eager_limit);
  // The co-location pairs that open and close every round, and the figures between.
  for (const char* name :
       {"one_way_8B_ns", "same_core_one_way_8B_ns", "closing_one_way_8B_ns", "closing_same_core_one_way_8B_ns",
        "lockstep_rendezvous_packed_ns", "match_reversed_ns", "lockstep_gathered_ns", "scale_rendezvous_packed_ns",
        "scale_same_core_rendezvous_packed_ns", "match_in_cache_reversed_ns"}) {
    ASSERT_TRUE(f.measured.contains(name)) << name;
    EXPECT_GT(f.measured.at(name), 0) << name;
  }
  // The host's figures, recorded once a round (the round trip needs two cores).
  for (const char* name : {"host_private_copy_ns", "host_gather_ns"}) EXPECT_GT(f.measured.at(name), 0) << name;
  EXPECT_EQ(f.measured.contains("host_line_round_trip_ns"), rt.cores().size() > 1);
  // What hwloc reports for a core's L2, and the terms measured beyond it.
  EXPECT_EQ(f.core.private_cache_bytes, rt.topology().private_cache_bytes());
  for (double v : {f.core.pack_piece, f.core.coherence_beyond_cache, f.core.coherence_beyond_cache_same_core,
                   f.core.match, f.core.match_in_cache}) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_GE(v, 0);
  }
  EXPECT_EQ(f.measured.at("attempts"), 1);
  EXPECT_GE(f.measured.at("colocated_rounds"), 0);
  EXPECT_LE(f.measured.at("colocated_rounds"), 7);
  EXPECT_GE(f.measured.at("slow_rounds"), 0);
  EXPECT_LE(f.measured.at("slow_rounds"), 7);
  // Every exchange scheduler auto chooses among has a correction per calibrated
  // size, measured once (attempts = 1) between two probes of the cores' state.
  EXPECT_EQ(f.measured.at("exchange_attempts"), 1);
  EXPECT_LE(f.measured.at("exchange_probes_in_other_state"), 2);
  // Two scales: 16 processes x 4 messages and 64 x 16, over the cores.
  ASSERT_EQ(f.exchange.bytes.size(), 3u);
  const double cores = static_cast<double>(rt.cores().size());
  EXPECT_EQ(f.exchange.messages_per_core, (std::vector<double>{64 / cores, 1024 / cores}));
  EXPECT_EQ(f.exchange.ratio.size(), 6u);
  for (const auto& [scheduler, tables] : f.exchange.ratio) {
    ASSERT_EQ(tables.size(), 2u) << scheduler;
    for (const std::vector<double>& ratios : tables) {
      EXPECT_EQ(ratios.size(), 3u) << scheduler;
      for (double r : ratios) EXPECT_GT(r, 0) << scheduler;
    }
  }
  // The exchange with nothing to send (16 processes, as the corrections'), whose
  // time the ratios leave out.
  EXPECT_GT(f.exchange.overhead_ns_per_process, 0);
  EXPECT_DOUBLE_EQ(f.exchange.overhead_ns_per_process * 16, f.measured.at("exchange_overhead_ns"));
  // What it wrote reads back as the same machine.
  const sm::MachineFile back = sm::parse_machine_file(sm::to_json(f), "calibrated.json");
  EXPECT_DOUBLE_EQ(back.core.coherence, f.core.coherence);
  EXPECT_DOUBLE_EQ(back.core.coherence_per_packet, f.core.coherence_per_packet);
  EXPECT_DOUBLE_EQ(back.core.pack_piece, f.core.pack_piece);
  EXPECT_DOUBLE_EQ(back.core.coherence_beyond_cache_same_core, f.core.coherence_beyond_cache_same_core);
  EXPECT_DOUBLE_EQ(back.exchange.overhead_ns_per_process, f.exchange.overhead_ns_per_process);
  EXPECT_EQ(back.colocated, f.colocated);
}

TEST(ModelCalibration, ProbeJudgesEveryRoundOnItsOwnHandOffs) {
  switchyard::Runtime rt;
  const smc::ColocationProbe p = smc::probe_colocation(rt, 3, 2);
  ASSERT_EQ(p.cross_core_one_way_ns.size(), 3u);
  ASSERT_EQ(p.same_core_one_way_ns.size(), 3u);
  ASSERT_EQ(p.verdict.colocated.size(), 3u);
  std::size_t normal = 0;
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_GT(p.cross_core_one_way_ns[r], 0);
    EXPECT_GT(p.same_core_one_way_ns[r], 0);
    const bool colocated =
        rt.cores().size() > 1 && p.cross_core_one_way_ns[r] < sm::kColocatedRatio * p.same_core_one_way_ns[r];
    EXPECT_EQ(p.verdict.colocated[r], colocated) << "round " << r;
    normal += !colocated;
  }
  EXPECT_EQ(p.verdict.normal, normal);
  EXPECT_THROW(smc::probe_colocation(rt, 0, 2), std::invalid_argument);
  EXPECT_THROW(smc::probe_colocation(rt, 3, 0), std::invalid_argument);
}

TEST(ModelCalibration, RejectsZeroRepetitionsRoundsOrAttempts) {
  switchyard::Runtime rt;
  for (const auto zero :
       {&smc::CalibrationOptions::repetitions, &smc::CalibrationOptions::rounds, &smc::CalibrationOptions::attempts}) {
    smc::CalibrationOptions o = short_calibration();
    o.*zero = 0;
    EXPECT_THROW(smc::calibrate(rt, o), std::invalid_argument);
  }
}

// A machine file is read up to its bound: a device without end is refused,
// not read whole (--machine /dev/zero grew without bound).
TEST(MachineFile, AnEndlessInputIsRefusedAtTheBound) {
  try {
    (void)sm::read_machine_file("/dev/zero");
    ADD_FAILURE() << "/dev/zero read as a machine file";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("more than 16 MiB"), std::string::npos) << e.what();
  }
}
