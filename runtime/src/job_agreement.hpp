#pragma once
// What the nodes of a job compare at its start. Every node calls
// Runtime::run with the same arguments in the same order; each sends the
// others its JobRecord of the job it starts (NetworkSession::agree_on_job, a
// collective that pairs each node's k-th job with every other node's k-th).
// A node that starts another job than its peers is told at once, on every
// node, each side named: another size; another body (a node that runs a job
// the others do not, of the same size, pairs it with their next one); another
// placement or ring capacity (the nodes would route ranks to different cores,
// or hold different credit windows); or another count of calls of run() (a
// call refused on one node alone left the others waiting for it).

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "switchyard/runtime.hpp"

namespace switchyard::detail {

// Sent as bytes between nodes running the same binary: plain data only.
struct JobRecord {
  std::uint64_t call = 0;  // this Runtime's calls of run() across nodes, from 1, refused ones too
  std::uint64_t processes = 0;
  std::uint64_t ring_capacity = 0;
  std::uint64_t placement = 0;  // the kind, and an explicit map's cores, hashed
  std::uint64_t body = 0;  // the body's type name (the closure type of a lambda), hashed
  char placement_name[16]{};
  char body_name[224]{};  // mangled; its end when longer (where a lambda's number stands)
};
static_assert(std::is_trivially_copyable_v<JobRecord>);

JobRecord job_record(std::uint64_t call, std::uint64_t processes, const ProcessBody& body, const RunOptions& options);

// What run() says when the nodes' records differ ("" when they are alike):
// one clause per field that differs, naming every node's value, e.g. "node 0
// runs a job of 8 processes, node 1 one of 6 processes".
std::string job_disagreement(std::span<const JobRecord> nodes);

}  // namespace switchyard::detail
