#pragma once
// The limits and up-front estimates that the matrix commands (exchange,
// schedule, phases) share: what they refuse before building anything.

#include <cstdint>
#include <string>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>

#include "cli_support.hpp"

namespace switchyard::cli {

inline constexpr std::uint64_t kMaxProcesses = 1'000'000;

// The Fig. 7 generator inserts each of a row's d entries into the sorted row:
// n·d² steps, the most of a `phases` run at large d.
inline double generation_work(const schedulers::MatrixShape& shape) {
  return static_cast<double>(shape.messages) * static_cast<double>(shape.max_degree);
}

// A static schedule of a matrix of this shape, `samples` times (each matrix
// `generated` or not): the matrix, the schedule and its validation, and the
// scheduler's own work and table.
inline Estimate schedule_estimate(const std::string& name, const schedulers::MatrixShape& shape, double samples,
                                  bool generated) {
  const double graph = static_cast<double>(shape.processes + shape.messages);
  return {graph * kBytesPerScheduledMessage + schedulers::schedule_table_bytes(name, shape),
          samples * (schedulers::schedule_work(name, shape) + 2 * graph + (generated ? generation_work(shape) : 0))};
}

}  // namespace switchyard::cli
