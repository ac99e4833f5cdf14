#include "switchyard/schedulers/online.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::size_t first_peer_at_least(std::span<const MatrixEntry> entries, Rank r) {
  return static_cast<std::size_t>(
      std::lower_bound(entries.begin(), entries.end(), r, [](const MatrixEntry& e, Rank x) { return e.peer < x; }) -
      entries.begin());
}

[[noreturn]] void wrong_size(const char* scheme, Rank me, Rank src, std::uint64_t want, std::uint64_t got) {
  throw InvalidArgument("switchyard: " + std::string(scheme) + " on rank " + std::to_string(me) + ": expected " +
                        std::to_string(want) + " bytes from rank " + std::to_string(src) + ", got " +
                        std::to_string(got));
}

}  // namespace

Task<void> execute_ac(Process& p, ExchangeBuffers& buffers, AcOptions options) {
  const Rank me = p.rank();
  if (buffers.rank() != me) {
    throw InvalidArgument("switchyard: AC on rank " + std::to_string(me) + ": given the buffers of rank " +
                          std::to_string(buffers.rank()));
  }
  const auto row = buffers.row();
  const auto column = buffers.column();
  const std::size_t sends = row.size(), recvs = column.size();
  // Distance order (see the header): sends from the first destination >= me
  // upwards, wrapping; receives from the last source <= me downwards, wrapping.
  const std::size_t send_start = first_peer_at_least(row, me);
  const std::size_t recv_start = first_peer_at_least(column, me + 1) + recvs - 1;
  auto send_entry = [&](std::size_t k) { return (send_start + k) % sends; };
  auto recv_entry = [&](std::size_t k) { return (recv_start - k) % recvs; };

  const std::size_t window = options.strip ? options.strip : std::max<std::size_t>({sends, recvs, 1});
  std::vector<RecvTicket> recv_slots(std::min(window, recvs));
  std::vector<SendTicket> send_slots(std::min(window, sends));
  std::size_t recv_posted = 0, recv_done = 0, send_posted = 0, send_done = 0;
  auto oldest_recv_done = [&] { return recv_done < recv_posted && p.test(recv_slots[recv_done % window]); };
  auto oldest_send_done = [&] { return send_done < send_posted && p.test(send_slots[send_done % window]); };

  for (;;) {
    // Receives first: with no strip limit this is Fig. 2 exactly, every
    // receive posted before the first send.
    for (; recv_posted < recvs && recv_posted - recv_done < window; ++recv_posted) {
      const std::size_t i = recv_entry(recv_posted);
      recv_slots[recv_posted % window] = p.post_recv_into(column[i].peer, buffers.recv_buffer(i), kOnlineTag);
    }
    for (; send_posted < sends && send_posted - send_done < window; ++send_posted) {
      const std::size_t i = send_entry(send_posted);
      send_slots[send_posted % window] = p.post_send(row[i].peer, buffers.send_buffer(i), kOnlineTag);
    }
    if (recv_done == recvs && send_done == sends) break;
    if (!oldest_recv_done() && !oldest_send_done()) {
      co_await p.wait_until([&] { return oldest_recv_done() || oldest_send_done(); }, "AC: a receive or a send");
    }
    // Retire in order: a slot is reused only once every older one is complete.
    for (; oldest_recv_done(); ++recv_done) {
      const std::size_t i = recv_entry(recv_done);
      RecvTicket& t = recv_slots[recv_done % window];
      if (t.size() != column[i].bytes) wrong_size("AC", me, column[i].peer, column[i].bytes, t.size());
      t = RecvTicket{};
    }
    for (; oldest_send_done(); ++send_done) send_slots[send_done % window] = SendTicket{};
  }
}

BusyLockMonitor::BusyLockMonitor(Rank processes) : counters_(std::make_unique<Counter[]>(processes)) {}

void BusyLockMonitor::enter(Rank receiver) noexcept {
  const int now = counters_[receiver].in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
  int seen = max_.load(std::memory_order_relaxed);
  while (now > seen && !max_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
  transfers_.fetch_add(1, std::memory_order_relaxed);
}

void BusyLockMonitor::leave(Rank receiver) noexcept {
  counters_[receiver].in_flight.fetch_sub(1, std::memory_order_relaxed);
}

Task<DrsnStats> execute_drsn(Process& p, std::span<const MatrixEntry> recvl, ExchangeBuffers& buffers,
                             DrsnOptions options) {
  const Rank me = p.rank();
  if (buffers.rank() != me) {
    throw InvalidArgument("switchyard: DRS_N on rank " + std::to_string(me) + ": given the buffers of rank " +
                          std::to_string(buffers.rank()));
  }
  // The receiving vector is what this process learned; the buffers are where
  // the messages must land. Each source once, each with its buffer's size, and
  // none missing: otherwise a message would wait unmatched forever.
  if (recvl.size() != buffers.column().size()) {
    throw InvalidArgument("switchyard: DRS_N on rank " + std::to_string(me) + ": the receiving vector lists " +
                          std::to_string(recvl.size()) + " messages, the matrix column has " +
                          std::to_string(buffers.column().size()));
  }
  std::vector<RecvTicket> recvs;
  recvs.reserve(recvl.size());
  for (std::size_t k = 0; k < recvl.size(); ++k) {
    const MatrixEntry& e = recvl[k];
    const auto i = buffers.recv_index(e.peer);
    if (!i || buffers.column()[*i].bytes != e.bytes || (k > 0 && recvl[k - 1].peer >= e.peer)) {
      throw InvalidArgument("switchyard: DRS_N on rank " + std::to_string(me) + ": receiving vector entry (" +
                            std::to_string(e.peer) + ", " + std::to_string(e.bytes) +
                            " bytes) has no matching buffer, or the vector is not sorted by source");
    }
    recvs.push_back(p.post_recv_into(e.peer, buffers.recv_buffer(*i), kOnlineTag));
  }

  const auto row = buffers.row();
  std::vector<std::uint32_t> pending(row.size());
  std::iota(pending.begin(), pending.end(), 0u);
  std::uint64_t rng = options.seed ^ (std::uint64_t{me} * 0xd1b54a32d192ed03ull);
  for (std::size_t k = pending.size(); k > 1; --k) std::swap(pending[k - 1], pending[splitmix64(rng) % k]);

  DrsnStats stats;
  const std::uint32_t yields = std::max<std::uint32_t>(options.retry_yields, 1);
  while (!pending.empty()) {
    bool sent = false;
    for (std::size_t k = 0; k < pending.size();) {
      const std::uint32_t i = pending[k];
      const Rank dst = row[i].peer;
      ++stats.inquiries;
      BusyLock& lock = p.busy_lock(dst);
      if (!lock.try_acquire()) {
        ++k;
        continue;
      }
      if (options.monitor) options.monitor->enter(dst);
      // Synchronous: complete only once dst has taken the message in, so the
      // lock is held for exactly the transfer.
      co_await p.ssend(dst, buffers.send_buffer(i), kOnlineTag);
      if (options.monitor) options.monitor->leave(dst);
      lock.release();
      ++stats.messages;
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));  // the rest keep their random order
      sent = true;
    }
    if (!sent) {
      for (std::uint32_t y = 0; y < yields; ++y) co_await p.yield();
    }
  }
  for (std::size_t k = 0; k < recvs.size(); ++k) {
    co_await p.wait(recvs[k]);
    if (recvs[k].size() != recvl[k].bytes) wrong_size("DRS_N", me, recvl[k].peer, recvl[k].bytes, recvs[k].size());
  }
  co_return stats;
}

}  // namespace switchyard::schedulers
