#include "switchyard/schedulers/generate_recv.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "gathered_rows.hpp"
#include "switchyard/errors.hpp"

namespace switchyard::schedulers {

namespace {

void check_sendl(Rank me, Rank size, std::span<const MatrixEntry> sendl, const char* who) {
  for (std::size_t k = 0; k < sendl.size(); ++k) {
    if (sendl[k].peer >= size || sendl[k].bytes == 0 || (k > 0 && sendl[k - 1].peer >= sendl[k].peer)) {
      throw InvalidArgument("switchyard: " + std::string(who) + " on rank " + std::to_string(me) +
                            ": sending vector entry " + std::to_string(k) + " (destination " +
                            std::to_string(sendl[k].peer) + ", " + std::to_string(sendl[k].bytes) +
                            " bytes) is out of range, empty or out of order");
    }
  }
}

// The wire form of a sending vector: (source, destination, bytes) per entry,
// packed. The gathering concatenates them, and a process that sends nothing
// adds nothing: reading the rows costs their entries, not n (a count per
// process made every reader step over all n, O(n^2) in all at n = 100 000).
constexpr std::size_t kEntry = 2 * sizeof(Rank) + sizeof(std::uint64_t);

// Calls f(source, destination, where the entry's byte count is) for every
// entry of the gathered rows; the count is read only by callers that need it.
template <class F>
void for_each_entry(std::span<const std::byte> rows, F&& f) {
  for (const std::byte* at = rows.data(); at != rows.data() + rows.size(); at += kEntry) {
    Rank src, dst;
    std::memcpy(&src, at, sizeof src);
    std::memcpy(&dst, at + sizeof(Rank), sizeof dst);
    f(src, dst, at + 2 * sizeof(Rank));
  }
}

std::uint64_t bytes_at(const std::byte* at) {
  std::uint64_t bytes;
  std::memcpy(&bytes, at, sizeof bytes);
  return bytes;
}

}  // namespace

namespace detail {

namespace {

// allgather_split's split for gather_rows: a part is its member's column
// (a count, then the entries) and, for rank 0 when asked, the rows after it.
// Counted first, so that each part is allocated once.
void split_columns(std::span<const std::byte> rows, std::span<const Rank> members,
                   std::span<std::vector<std::byte>> parts, Rank n, bool matrix_to_rank0) {
  constexpr auto kNotHere = ~std::uint32_t{0};
  std::vector<std::uint32_t> here(n, kNotHere);  // comm rank -> index among this core's members
  for (std::size_t k = 0; k < members.size(); ++k) here[members[k]] = static_cast<std::uint32_t>(k);
  std::vector<std::uint64_t> count(members.size(), 0);
  for_each_entry(rows, [&](Rank, Rank dst, const std::byte*) {
    if (here[dst] != kNotHere) ++count[here[dst]];
  });
  for (std::size_t k = 0; k < members.size(); ++k) {
    const bool whole = matrix_to_rank0 && members[k] == 0;
    parts[k].resize(sizeof count[k]);
    parts[k].reserve(sizeof count[k] + count[k] * sizeof(MatrixEntry) + (whole ? rows.size() : 0));
    std::memcpy(parts[k].data(), &count[k], sizeof count[k]);
  }
  for_each_entry(rows, [&](Rank src, Rank dst, const std::byte* bytes) {
    if (here[dst] == kNotHere) return;
    const MatrixEntry e{src, bytes_at(bytes)};
    const auto* p = reinterpret_cast<const std::byte*>(&e);
    parts[here[dst]].insert(parts[here[dst]].end(), p, p + sizeof e);
  });
  if (matrix_to_rank0 && here[0] != kNotHere) parts[here[0]].insert(parts[here[0]].end(), rows.begin(), rows.end());
}

CommMatrix matrix_of(std::span<const std::byte> rows, Rank n) {
  CommMatrix m(n);
  for_each_entry(rows, [&](Rank src, Rank dst, const std::byte* bytes) { m.set(src, dst, bytes_at(bytes)); });
  return m;
}

}  // namespace

Task<GatheredRows> gather_rows(Communicator comm, std::span<const MatrixEntry> sendl, const char* who,
                               bool matrix_to_rank0) {
  check_sendl(comm.rank(), comm.size(), sendl, who);
  std::vector<std::byte> mine(sendl.size() * kEntry);
  const Rank me = comm.rank(), n = comm.size();
  for (std::size_t k = 0; k < sendl.size(); ++k) {
    std::byte* at = mine.data() + k * kEntry;
    std::memcpy(at, &me, sizeof me);
    std::memcpy(at + sizeof(Rank), &sendl[k].peer, sizeof(Rank));
    std::memcpy(at + 2 * sizeof(Rank), &sendl[k].bytes, sizeof(std::uint64_t));
  }
  Communicator::GatherSplit split = [n, matrix_to_rank0](std::span<const std::byte> rows, std::span<const Rank> members,
                                                         std::span<std::vector<std::byte>> parts) {
    split_columns(rows, members, parts, n, matrix_to_rank0);
  };
  const std::vector<std::byte> part = co_await comm.allgather_split(mine, std::move(split));
  std::uint64_t count = 0;
  std::memcpy(&count, part.data(), sizeof count);
  GatheredRows out;
  out.column.resize(count);
  if (count) std::memcpy(out.column.data(), part.data() + sizeof count, count * sizeof(MatrixEntry));
  if (matrix_to_rank0 && me == 0) {
    out.matrix = matrix_of(std::span(part).subspan(sizeof count + count * sizeof(MatrixEntry)), n);
  }
  co_return out;
}

}  // namespace detail

namespace {

Task<std::vector<MatrixEntry>> concat_on(Communicator comm, std::span<const MatrixEntry> sendl) {
  const Communicator lib = comm.library(kGenerateRecvLibrary);
  co_return (co_await detail::gather_rows(lib, sendl, "Generate_Recv (concatenate)", false)).column;
}

}  // namespace

// The public calls copy the communicator into the coroutine's frame: a
// caller's temporary (a Process converted on the way in) may be gone by the
// time the task is awaited.
Task<std::vector<MatrixEntry>> generate_recv_concat(const Communicator& comm, std::span<const MatrixEntry> sendl) {
  return concat_on(comm, sendl);
}

GenerateRecvByActiveMessages::GenerateRecvByActiveMessages(Rank processes)
    : processes_(processes), slots_(std::make_unique<Slot[]>(processes)) {}

HandlerId GenerateRecvByActiveMessages::install(RunOptions& options) {
  handler_ = options.add_handler(
      kHandlerId, [this](Process& self, Rank src, std::span<const std::byte> body) { on_message(self, src, body); });
  return *handler_;
}

void GenerateRecvByActiveMessages::on_message(Process& self, Rank src, std::span<const std::byte> body) {
  std::uint64_t bytes;
  if (body.size() != sizeof bytes) {
    throw InvalidArgument("switchyard: Generate_Recv active message to rank " + std::to_string(self.rank()) +
                          " from rank " + std::to_string(src) + " has " + std::to_string(body.size()) + " bytes, not " +
                          std::to_string(sizeof bytes));
  }
  std::memcpy(&bytes, body.data(), sizeof bytes);
  slots_[self.rank()].received.push_back({src, bytes});
}

Task<std::vector<MatrixEntry>> GenerateRecvByActiveMessages::run(const Communicator& comm,
                                                                 std::span<const MatrixEntry> sendl) {
  return run_on(comm, sendl);
}

Task<std::vector<MatrixEntry>> GenerateRecvByActiveMessages::run_on(Communicator comm,
                                                                    std::span<const MatrixEntry> sendl) {
  Process& p = comm.process();
  if (p.size() != processes_) {
    throw InvalidArgument("switchyard: Generate_Recv (active messages) was made for " + std::to_string(processes_) +
                          " processes, the job has " + std::to_string(p.size()));
  }
  if (!handler_) {
    throw InvalidArgument("switchyard: Generate_Recv (active messages) on rank " + std::to_string(comm.rank()) +
                          ": install() it on the job's RunOptions first");
  }
  check_sendl(comm.rank(), comm.size(), sendl, "Generate_Recv (active messages)");
  const Communicator lib = comm.library(kGenerateRecvLibrary);
  Slot& slot = slots_[p.rank()];
  // Safe to reset before the first sum: no member sends this call's active
  // messages until every member has joined it, and the previous call's all
  // arrived before this process returned from it.
  slot.received.clear();

  // How many messages are on their way in all: once the members' lists hold
  // that many, every list is complete. Lists only grow, so a sum that reaches
  // it was not taken too early; most calls need one recount, the active
  // messages having crossed the rings before the recount's own packets.
  const std::int64_t sent = static_cast<std::int64_t>(sendl.size());
  const std::int64_t total = (co_await lib.allreduce(std::span(&sent, 1)))[0];
  for (const MatrixEntry& e : sendl) {
    lib.post_active(e.peer, *handler_, std::as_bytes(std::span<const std::uint64_t, 1>(&e.bytes, 1)));
  }
  for (;;) {
    const auto arrived = static_cast<std::int64_t>(slot.received.size());
    if ((co_await lib.allreduce(std::span(&arrived, 1)))[0] == total) break;
    co_await p.yield();  // a sum among processes of one core need not wait: let the worker deliver
  }
  std::vector<MatrixEntry> recvl = std::move(slot.received);
  slot.received = {};
  std::sort(recvl.begin(), recvl.end(), [](const MatrixEntry& a, const MatrixEntry& b) { return a.peer < b.peer; });
  co_return recvl;
}

}  // namespace switchyard::schedulers
