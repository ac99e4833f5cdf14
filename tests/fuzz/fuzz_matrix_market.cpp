// libFuzzer harness: a Matrix Market file, then, for a matrix small enough to
// schedule many times a second, the exact schedulers and the schedule checker.
// A malformed file must be an InvalidArgument naming its line; a valid matrix
// must get valid schedules, optimal in Δ phases and optimal-bytes at the byte
// lower bound in at most nnz + 2n phases. Anything else (a crash, another exception, a wrong schedule)
// is a finding.
#include <switchyard/errors.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/optimal.hpp>
#include <switchyard/schedulers/schedule.hpp>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

namespace sys = switchyard::schedulers;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  sys::CommMatrix m;
  try {
    m = sys::read_matrix_market(in, "fuzz.mtx");
  } catch (const switchyard::InvalidArgument& e) {
    if (std::string(e.what()).rfind("fuzz.mtx:", 0) != 0) std::abort();  // the error names the file and line
    return 0;
  }
  if (m.size() > 64 || m.messages() > 512) return 0;
  const sys::Schedule optimal = sys::schedule_optimal(m);
  sys::validate(optimal, m);
  if (optimal.phases.size() != m.max_degree()) std::abort();
  const sys::Schedule bytes = sys::schedule_optimal_bytes(m);
  sys::validate(bytes, m);
  if (sys::makespan_bytes(bytes.phases) != m.max_load_bytes()) std::abort();
  // Every phase of the open shop ends a message or makes a line tight.
  if (bytes.phases.size() > m.messages() + 2 * std::uint64_t{m.size()}) std::abort();
  return 0;
}
