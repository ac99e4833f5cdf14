#include "switchyard/schedulers/online.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "drsn_order.hpp"
#include "hooks_support.hpp"
#include "switchyard/detail/pooled_array.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/trace.hpp"

namespace switchyard::schedulers {

namespace {

using switchyard::detail::PooledArray;

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

// AC's sends from the first destination >= me upwards, wrapping; receives from
// the last source <= me downwards, wrapping (see the header).
Task<void> run_ac(Communicator comm, std::span<const MatrixEntry> sends, std::span<const MatrixEntry> receives,
                  ExchangeHooks& hooks, AcOptions options) {
  const Rank me = comm.rank();
  detail::check_buffer_sizes("AC", me, sends, receives, hooks);
  const Communicator lib = comm.library(kAcLibrary);
  Process& p = comm.process();
  const std::size_t n_sends = sends.size(), n_recvs = receives.size();
  // Distance order (see the header): sends from the first destination >= me
  // upwards, wrapping; receives from the last source <= me downwards, wrapping.
  // Entries advance by one with a compare, not a division: this loop runs per message.
  const std::size_t send_start = n_sends ? first_peer_at_least(sends, me) % n_sends : 0;
  const std::size_t recv_start = n_recvs ? (first_peer_at_least(receives, me + 1) + n_recvs - 1) % n_recvs : 0;
  auto next_send = [n_sends](std::size_t i) { return i + 1 == n_sends ? 0 : i + 1; };
  auto next_recv = [n_recvs](std::size_t i) { return i == 0 ? n_recvs - 1 : i - 1; };

  if (options.strip == 0) {
    // The papers' AC: every receive posted, every send posted, then the
    // waits, each parked on its own ticket so that only its completion
    // resumes the process.
    PooledArray<RecvTicket> recvs(n_recvs);
    PooledArray<std::uint32_t> recv_entry(n_recvs);
    PooledArray<SendTicket> sent(n_sends);
    for (std::size_t k = 0, i = recv_start; k < n_recvs; ++k, i = next_recv(i)) {
      recv_entry[k] = static_cast<std::uint32_t>(i);
      recvs.emplace(k, [&] { return lib.post_recv_into(receives[i].peer, hooks.recv_buffer(i), kOnlineTag); });
    }
    for (std::size_t k = 0, i = send_start; k < n_sends; ++k, i = next_send(i)) {
      hooks.before_send(i);
      sent.emplace(k, [&] { return lib.post_send(sends[i].peer, hooks.send_buffer(i), kOnlineTag); });
    }
    for (std::size_t k = 0; k < n_recvs; ++k) {
      if (!p.test(recvs[k])) co_await p.wait(recvs[k]);
      const std::size_t i = recv_entry[k];
      if (recvs[k].size() != receives[i].bytes)
        wrong_size("AC", me, receives[i].peer, receives[i].bytes, recvs[k].size());
      hooks.after_receive(i);
    }
    for (std::size_t k = 0; k < n_sends; ++k) {
      if (!p.test(sent[k])) co_await p.wait(sent[k]);
    }
    co_return;
  }

  // Strip mining: windows of `strip` tickets each way, retired in order.
  const std::size_t window = options.strip;
  PooledArray<RecvTicket> recv_slots(std::min(window, n_recvs));
  PooledArray<SendTicket> send_slots(std::min(window, n_sends));
  std::size_t recv_posted = 0, recv_done = 0, send_posted = 0, send_done = 0;
  std::size_t next_recv_entry = recv_start, done_recv_entry = recv_start, next_send_entry = send_start;
  auto slot = [window](std::size_t k) { return k % window; };
  auto oldest_recv_done = [&] { return recv_done < recv_posted && p.test(recv_slots[slot(recv_done)]); };
  auto oldest_send_done = [&] { return send_done < send_posted && p.test(send_slots[slot(send_done)]); };
  for (;;) {
    // Receives first: each window's receives are posted before its sends.
    for (; recv_posted < n_recvs && recv_posted - recv_done < window; ++recv_posted) {
      const std::size_t i = std::exchange(next_recv_entry, next_recv(next_recv_entry));
      recv_slots.emplace(slot(recv_posted),
                         [&] { return lib.post_recv_into(receives[i].peer, hooks.recv_buffer(i), kOnlineTag); });
    }
    for (; send_posted < n_sends && send_posted - send_done < window; ++send_posted) {
      const std::size_t i = std::exchange(next_send_entry, next_send(next_send_entry));
      hooks.before_send(i);
      send_slots.emplace(slot(send_posted),
                         [&] { return lib.post_send(sends[i].peer, hooks.send_buffer(i), kOnlineTag); });
    }
    if (recv_done == n_recvs && send_done == n_sends) break;
    if (!oldest_recv_done() && !oldest_send_done()) {
      co_await p.wait_until([&] { return oldest_recv_done() || oldest_send_done(); }, "AC: a receive or a send");
    }
    // Retire in order: a slot is reused only once every older one is complete.
    for (; oldest_recv_done(); ++recv_done) {
      const std::size_t i = std::exchange(done_recv_entry, next_recv(done_recv_entry));
      RecvTicket& t = recv_slots[slot(recv_done)];
      if (t.size() != receives[i].bytes) wrong_size("AC", me, receives[i].peer, receives[i].bytes, t.size());
      t = RecvTicket{};
      hooks.after_receive(i);
    }
    for (; oldest_send_done(); ++send_done) send_slots[slot(send_done)] = SendTicket{};
  }
}

void check_buffers_rank(const char* scheme, Rank me, const ExchangeBuffers& buffers) {
  if (buffers.rank() != me) {
    throw InvalidArgument("switchyard: " + std::string(scheme) + " on rank " + std::to_string(me) +
                          ": given the buffers of rank " + std::to_string(buffers.rank()));
  }
}

Task<void> run_ac_with_buffers(Communicator comm, ExchangeBuffers& buffers, AcOptions options) {
  check_buffers_rank("AC", comm.rank(), buffers);
  detail::BufferHooks hooks(buffers);
  co_await run_ac(comm, buffers.row(), buffers.column(), hooks, options);
}

}  // namespace

// The public calls copy the communicator into the coroutine's frame: a
// caller's temporary (a Process converted on the way in) may be gone by the
// time the task is awaited.
Task<void> execute_ac(const Communicator& comm, ExchangeBuffers& buffers, AcOptions options) {
  return run_ac_with_buffers(comm, buffers, options);
}

Task<void> execute_ac(const Communicator& comm, std::span<const MatrixEntry> sends,
                      std::span<const MatrixEntry> receives, ExchangeHooks& hooks, AcOptions options) {
  return run_ac(comm, sends, receives, hooks, options);
}

BusyLockMonitor::BusyLockMonitor(Rank processes)
    : owned_(std::make_unique<Counter[]>(processes)), counters_(owned_.get()) {}

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

namespace {

// Out of the coroutines: the strings of the errors would otherwise take room in every run's frame.
void check_sorted_sources(Rank me, Rank size, std::span<const MatrixEntry> recvl) {
  for (std::size_t k = 0; k < recvl.size(); ++k) {
    if (recvl[k].peer >= size || (k > 0 && recvl[k - 1].peer >= recvl[k].peer)) {
      throw InvalidArgument("switchyard: DRS_N on rank " + std::to_string(me) + ": receiving vector entry " +
                            std::to_string(k) + " (source " + std::to_string(recvl[k].peer) +
                            ") is outside the communicator or not sorted by source");
    }
  }
}

// The receiving vector is what this process learned; the buffers are where
// the messages must land. Each source once, each with its buffer's size, and
// none missing: otherwise a message would wait unmatched forever.
void check_receiving_vector(Rank me, std::span<const MatrixEntry> recvl, const ExchangeBuffers& buffers) {
  check_buffers_rank("DRS_N", me, buffers);
  if (recvl.size() != buffers.column().size()) {
    throw InvalidArgument("switchyard: DRS_N on rank " + std::to_string(me) + ": the receiving vector lists " +
                          std::to_string(recvl.size()) + " messages, the matrix column has " +
                          std::to_string(buffers.column().size()));
  }
  for (std::size_t k = 0; k < recvl.size(); ++k) {
    const MatrixEntry& e = recvl[k];
    if (e != buffers.column()[k]) {
      throw InvalidArgument("switchyard: DRS_N on rank " + std::to_string(me) + ": receiving vector entry (" +
                            std::to_string(e.peer) + ", " + std::to_string(e.bytes) +
                            " bytes) has no matching buffer, or the vector is not sorted by source");
    }
  }
}

Task<DrsnStats> run_drsn(Communicator comm, std::span<const MatrixEntry> sends, std::span<const MatrixEntry> receives,
                         ExchangeHooks& hooks, DrsnOptions options) {
  const Rank me = comm.rank();
  check_sorted_sources(me, comm.size(), receives);
  detail::check_buffer_sizes("DRS_N", me, sends, receives, hooks);
  const Communicator lib = comm.library(kDrsnLibrary);
  Process& p = comm.process();
  // Nobody takes a busy lock while a member is still in an earlier run: a
  // sender holding B's lock waits for B to take its message in, which B, still
  // waiting in its earlier run for a message whose sender needs that very
  // lock, never would.
  co_await lib.barrier();
  PooledArray<RecvTicket> recvs(receives.size());
  for (std::size_t k = 0; k < receives.size(); ++k) {
    recvs.emplace(k, [&] { return lib.post_recv_into(receives[k].peer, hooks.recv_buffer(k), kOnlineTag); });
  }
  // Every message is made ready up front, so that a receiver's lock is held
  // for the transfer alone.
  for (std::size_t i = 0; i < sends.size(); ++i) hooks.before_send(i);

  // The locks of the receivers on this node, looked up once: their tries are
  // the loop below's hot path (nullptr: another node's, asked for by request).
  PooledArray<BusyLock*> local_lock(sends.size());
  for (std::size_t i = 0; i < sends.size(); ++i) local_lock[i] = lib.busy_lock_if_local(sends[i].peer);
  PooledArray<std::uint32_t> pending(sends.size());
  std::iota(pending.begin(), pending.end(), 0u);
  detail::shuffle_pending(options.seed, me, std::span(pending.begin(), pending.end()));

  DrsnStats stats;
  const std::uint32_t yields = std::max<std::uint32_t>(options.retry_yields, 1);
  for (std::size_t left = pending.size(); left > 0;) {
    bool sent = false;
    for (std::size_t k = 0; k < left;) {
      const std::uint32_t i = pending[k];
      const Rank dst = sends[i].peer;
      // One inquiry, wherever dst lives: on this node a test-and-set of its
      // lock; on another, the same test-and-set done by dst's core on request
      // (this process waits for the answer, its core runs the others).
      ++stats.inquiries;
      BusyLock* const lock = local_lock[i];
      bool acquired = false;
      {
        TraceSpan attempt(p, TraceCategory::lock, "busy_lock", TraceArgs{.dst = dst});
        if (lock) {
          acquired = lock->try_acquire();
        } else {
          acquired = co_await lib.try_busy_lock(dst);
        }
        attempt.set("acquired", acquired);
      }
      if (!acquired) {
        ++k;
        continue;
      }
      const TraceSpan locked(p, TraceCategory::lock, "locked send",
                             TraceArgs{.dst = dst, .has_bytes = true, .bytes = sends[i].bytes});
      if (options.monitor) options.monitor->enter(dst);
      // Synchronous: complete only once dst has taken the message in, so the
      // lock is held for exactly the transfer.
      co_await lib.ssend(dst, hooks.send_buffer(i), kOnlineTag);
      if (options.monitor) options.monitor->leave(dst);
      if (lock) {
        lock->release();
      } else {
        lib.release_busy_lock(dst);
      }
      ++stats.messages;
      std::copy(pending.begin() + k + 1, pending.begin() + left, pending.begin() + k);  // the rest keep their order
      --left;
      sent = true;
    }
    if (!sent) {
      for (std::uint32_t y = 0; y < yields; ++y) co_await p.yield();
    }
  }
  for (std::size_t k = 0; k < receives.size(); ++k) {
    co_await p.wait(recvs[k]);
    if (recvs[k].size() != receives[k].bytes) {
      wrong_size("DRS_N", me, receives[k].peer, receives[k].bytes, recvs[k].size());
    }
    hooks.after_receive(k);
  }
  co_return stats;
}

Task<DrsnStats> run_drsn_with_buffers(Communicator comm, std::span<const MatrixEntry> recvl, ExchangeBuffers& buffers,
                                      DrsnOptions options) {
  check_receiving_vector(comm.rank(), recvl, buffers);
  detail::BufferHooks hooks(buffers);
  co_return co_await run_drsn(comm, buffers.row(), recvl, hooks, options);
}

}  // namespace

Task<DrsnStats> execute_drsn(const Communicator& comm, std::span<const MatrixEntry> recvl, ExchangeBuffers& buffers,
                             DrsnOptions options) {
  return run_drsn_with_buffers(comm, recvl, buffers, options);
}

Task<DrsnStats> execute_drsn(const Communicator& comm, std::span<const MatrixEntry> sends,
                             std::span<const MatrixEntry> receives, ExchangeHooks& hooks, DrsnOptions options) {
  return run_drsn(comm, sends, receives, hooks, options);
}

}  // namespace switchyard::schedulers
