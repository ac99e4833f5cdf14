#include "switchyard/schedulers/generate_recv.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers {

namespace {

void check_sendl(const Process& p, std::span<const MatrixEntry> sendl, const char* how) {
  for (std::size_t k = 0; k < sendl.size(); ++k) {
    if (sendl[k].peer >= p.size() || sendl[k].bytes == 0 || (k > 0 && sendl[k - 1].peer >= sendl[k].peer)) {
      throw InvalidArgument("switchyard: Generate_Recv (" + std::string(how) + ") on rank " + std::to_string(p.rank()) +
                            ": sending vector entry " + std::to_string(k) + " (destination " +
                            std::to_string(sendl[k].peer) + ", " + std::to_string(sendl[k].bytes) +
                            " bytes) is out of range, empty or out of order");
    }
  }
}

// The wire form of a sending vector: its length, then (destination, bytes)
// pairs, packed. The allgather concatenates them in rank order, so the lengths
// are what lets a reader step from one process's vector to the next.
constexpr std::size_t kPair = sizeof(Rank) + sizeof(std::uint64_t);

}  // namespace

Task<std::vector<MatrixEntry>> generate_recv_concat(Process& p, std::span<const MatrixEntry> sendl) {
  check_sendl(p, sendl, "concatenate");
  std::vector<std::byte> mine(sizeof(std::uint64_t) + sendl.size() * kPair);
  const std::uint64_t count = sendl.size();
  std::memcpy(mine.data(), &count, sizeof count);
  for (std::size_t k = 0; k < sendl.size(); ++k) {
    std::byte* at = mine.data() + sizeof count + k * kPair;
    std::memcpy(at, &sendl[k].peer, sizeof(Rank));
    std::memcpy(at + sizeof(Rank), &sendl[k].bytes, sizeof(std::uint64_t));
  }
  const std::vector<std::byte> all = co_await p.allgather(mine);

  const Rank me = p.rank();
  std::vector<MatrixEntry> recvl;
  const std::byte* at = all.data();
  for (Rank src = 0; src < p.size(); ++src) {
    std::uint64_t entries;
    std::memcpy(&entries, at, sizeof entries);
    at += sizeof entries;
    // Rows are sorted by destination: at most one entry is ours.
    for (std::uint64_t k = 0; k < entries; ++k, at += kPair) {
      Rank dst;
      std::memcpy(&dst, at, sizeof dst);
      if (dst == me) {
        std::uint64_t bytes;
        std::memcpy(&bytes, at + sizeof(Rank), sizeof bytes);
        recvl.push_back({src, bytes});
      }
    }
  }
  co_return recvl;
}

GenerateRecvByActiveMessages::GenerateRecvByActiveMessages(Rank processes)
    : processes_(processes), slots_(std::make_unique<Slot[]>(processes)) {}

void GenerateRecvByActiveMessages::install(RunOptions& options) {
  options.on_active_message(
      kHandlerId, [this](Process& self, Rank src, std::span<const std::byte> body) { on_message(self, src, body); });
}

void GenerateRecvByActiveMessages::on_message(Process& self, Rank src, std::span<const std::byte> body) {
  std::uint64_t bytes;
  if (body.size() != sizeof bytes) {
    throw InvalidArgument("switchyard: Generate_Recv active message to rank " + std::to_string(self.rank()) +
                          " from rank " + std::to_string(src) + " has " + std::to_string(body.size()) + " bytes, not " +
                          std::to_string(sizeof bytes));
  }
  std::memcpy(&bytes, body.data(), sizeof bytes);
  Slot& slot = slots_[self.rank()];
  slot.received.push_back({src, bytes});
  --slot.outstanding;
}

Task<std::vector<MatrixEntry>> GenerateRecvByActiveMessages::run(Process& p, std::span<const MatrixEntry> sendl) {
  if (p.size() != processes_) {
    throw InvalidArgument("switchyard: Generate_Recv (active messages) was made for " + std::to_string(processes_) +
                          " processes, the job has " + std::to_string(p.size()));
  }
  check_sendl(p, sendl, "active messages");
  const Rank me = p.rank();
  Slot& slot = slots_[me];
  // Safe to reset before the vector sum: no process sends this call's active
  // messages until every process has joined the sum, and the previous call's
  // all arrived before this process returned from it.
  slot.received.clear();
  slot.outstanding = 0;

  std::vector<std::int64_t> mask(p.size(), 0);
  for (const MatrixEntry& e : sendl) mask[e.peer] = 1;
  const std::vector<std::int64_t> counts = co_await p.allreduce(mask);
  slot.outstanding += counts[me];

  for (const MatrixEntry& e : sendl) {
    p.post_active(e.peer, kHandlerId, std::as_bytes(std::span<const std::uint64_t, 1>(&e.bytes, 1)));
  }
  co_await p.wait_until([&slot] { return slot.outstanding == 0; }, "Generate_Recv: its incoming active messages");
  std::vector<MatrixEntry> recvl = std::move(slot.received);
  slot.received = {};
  std::sort(recvl.begin(), recvl.end(), [](const MatrixEntry& a, const MatrixEntry& b) { return a.peer < b.peer; });
  co_return recvl;
}

}  // namespace switchyard::schedulers
