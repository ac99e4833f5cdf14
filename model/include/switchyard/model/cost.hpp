#pragma once
// Charging a superstep and an algorithm in units (the paper's section 2).
//
// Per submachine with parameters p', h', b' (Machine::submachine):
//   S_i, R_i   the total send and receive times of Fig. 1, by protocol;
//   cong       the number of communicating (src, dst) pairs;
//   L_a        the average packets per communicating pair;
//   C_l = L_a * ceil(cong / b'),  C_p = L_a * ceil(cong / p') * h';
//   communication = max_i (S_i + R_i) + C_l + C_p.
// Submachines run independently: a superstep costs the most expensive one.
// Computation units are max(1, ceil(t_i / l)) with t_i the bytes accessed.
//
// ModelVariant::calibrated (a shared-memory node whose p processes share
// `cores` cores, placed round-robin): a core does the sends and receives of
// all its processes one after the other, so max_i (S_i + R_i) becomes the
// largest sum of S_i + R_i over the processes of one core; congestion is
// counted over pairs on different cores only (same-core messages cross no
// link), and processor congestion uses the number of cores.

#include <cstdint>
#include <vector>

#include "switchyard/model/machine.hpp"
#include "switchyard/model/superstep.hpp"

namespace switchyard::model {

struct SuperstepCost {
  double max_send_receive = 0;      // max_i (S_i + R_i) (per core: calibrated)
  double link_congestion = 0;       // C_l
  double processor_congestion = 0;  // C_p
  double communication = 0;         // the sum of the three
  double computation = 0;           // max_i ceil(t_i / l), at least 1
  double total() const noexcept { return communication + computation; }
};

// S_i and R_i of one process in one submachine's transfers (Fig. 1).
struct SendReceive {
  double send = 0;
  double receive = 0;
};

// Fig. 1 for every member of a submachine: result[k] is members[k]'s S and R.
std::vector<SendReceive> send_receive_times(const Machine& machine, const Submachine& submachine);

SuperstepCost cost(const Machine& machine, const Superstep& step);

struct AlgorithmCost {
  double communication = 0;
  double computation = 0;
  std::vector<SuperstepCost> steps;
  double total() const noexcept { return communication + computation; }
};

AlgorithmCost cost(const Machine& machine, const Algorithm& algorithm);

}  // namespace switchyard::model
