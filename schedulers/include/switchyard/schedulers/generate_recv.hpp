#pragma once
// Generate_Recv (Wang-Lin-Ranka Section 3): every process knows only its
// sending vector sendl (its row of COM: destinations and sizes) and learns its
// receiving vector recvl (its column: sources and sizes). Two ways, both
// returning recvl sorted by source:
//
//  - by concatenation: an allgather of every sendl, from which each process
//    picks its column. Every process reads all n rows: O(messages) per
//    process, O(n * messages) in all, and an O(messages) buffer each.
//  - by active messages and a vector sum (Fig. 1): an allreduce of the 0/1
//    send masks tells each process how many messages it will receive; then
//    each process sends one active message per entry of sendl to its
//    destination, whose handler appends (source, size) to the destination's
//    list and counts down; each process waits for its count to reach 0.
//    O(n) per process for the vector sum, O(d) for the messages.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "switchyard/process.hpp"
#include "switchyard/runtime.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers {

// A collective: every process of the job calls it, with its row sorted by
// destination (CommMatrix::row). Throws InvalidArgument for a destination
// outside the job or an unsorted row.
Task<std::vector<MatrixEntry>> generate_recv_concat(Process& p, std::span<const MatrixEntry> sendl);

// Generate_Recv by active messages. One object per job: it holds each rank's
// list and count, written by the handler on that rank's core. install() it on
// the job's RunOptions, then have every process call run() (a collective).
// Calls of run() may repeat within a job; each one starts afresh.
class GenerateRecvByActiveMessages {
 public:
  // The active-message handler id it registers: "GR" and 1. A job that
  // installs it must not use this id for anything else.
  static constexpr HandlerId kHandlerId = 0x4752'0001;

  explicit GenerateRecvByActiveMessages(Rank processes);
  GenerateRecvByActiveMessages(const GenerateRecvByActiveMessages&) = delete;
  GenerateRecvByActiveMessages& operator=(const GenerateRecvByActiveMessages&) = delete;

  // Registers the handler (bound to this object, which must outlive the job).
  void install(RunOptions& options);
  Task<std::vector<MatrixEntry>> run(Process& p, std::span<const MatrixEntry> sendl);

 private:
  // Touched only on its rank's core: by the rank's process and by the handler
  // running there for it. A cache line each, so neighbours on other cores do
  // not share one.
  struct alignas(64) Slot {
    std::vector<MatrixEntry> received;
    // Announced by the vector sum minus arrived; an active message may arrive
    // before the process has added its count, so it can dip below 0.
    std::int64_t outstanding = 0;
  };
  void on_message(Process& self, Rank src, std::span<const std::byte> body);

  Rank processes_;
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace switchyard::schedulers
