// The Communicator handle: what a process holds of a group (its state is in
// group.cpp, the job's registry of groups in group_registry.cpp).

#include "switchyard/communicator.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "group.hpp"
#include "group_registry.hpp"
#include "job.hpp"
#include "switchyard/errors.hpp"
#include "worker.hpp"

namespace switchyard {

// --- Communicator ---

Communicator::Communicator(Process& p) noexcept : Communicator(p.world()) {}

void Communicator::not_valid() const {
  if (!group_) throw InvalidArgument("switchyard: a null communicator (from split with kUndefined, or default-made)");
  // Nothing of the job is read: once it has ended, its processes and groups are gone.
  const std::string here =
      detail::running_job == 0 ? "on a thread outside every job" : "in job " + std::to_string(detail::running_job);
  throw InvalidArgument("switchyard: a communicator of job " + std::to_string(job_) + " (rank " +
                        std::to_string(rank_) + ") used " + here + ": job " + std::to_string(job_) +
                        " has ended, or runs elsewhere; a communicator is valid only in the processes of the job "
                        "that made it");
}

Rank Communicator::size() const { return group().size(); }
std::uint32_t Communicator::nodes() const { return group().members().nodes_spanned; }
ContextId Communicator::context() const { return group().context(); }
Process& Communicator::process() const {
  group();
  return *process_;
}

Rank Communicator::job_rank(Rank r) const {
  process_->check_rank(group(), r, "job_rank");
  return group_->members().to_job(r);
}

Rank Communicator::rank_of_job_rank(Rank job) const { return group().members().to_comm(job); }

void Communicator::post_active(Rank dst, HandlerId handler, std::span<const std::byte> body) const {
  process_->post_active_on(group(), dst, handler, body);
}
Task<void> Communicator::send_active(Rank dst, HandlerId handler, std::span<const std::byte> body) const {
  return process_->send_active_on(group(), dst, handler, body);
}

Process::BusyLockAwaiter Communicator::try_busy_lock(Rank r) const { return process_->try_busy_lock_on(group(), r); }
void Communicator::release_busy_lock(Rank r) const { process_->release_busy_lock_on(group(), r); }

BusyLock* Communicator::busy_lock_if_local(Rank r) const {
  process_->check_rank(group(), r, "busy_lock");
  return process_->on_this_node(group_->members().to_job(r)) ? &group_->busy_lock(r) : nullptr;
}

BusyLock& Communicator::busy_lock(Rank r) const {
  BusyLock* lock = busy_lock_if_local(r);
  if (!lock) {
    throw InvalidArgument("switchyard: busy_lock on rank " + std::to_string(process_->rank()) + ": rank " +
                          std::to_string(r) +
                          " lives on another node, which alone holds its lock "
                          "(try_busy_lock and release_busy_lock reach it)");
  }
  return *lock;
}

Task<Communicator> Communicator::dup() const {
  return [](Communicator c) -> Task<Communicator> {
    const detail::Group& parent = c.group();
    c.process_->check_cancelled();
    const std::uint64_t seq = parent.member(c.rank_).derived++;
    detail::GroupRegistry& groups = c.process_->job_.groups();
    ContextId id = detail::GroupRegistry::kAllocate;
    if (parent.members().nodes_spanned > 1) {
      // Across nodes the new rank 0's node hands the id out, and the parent's members learn it.
      ContextId mine = c.rank_ == 0 ? groups.allocate_id() : 0;
      const auto agreed = co_await c.broadcast(0, std::as_bytes(std::span(&mine, 1)));
      std::memcpy(&id, agreed.data(), sizeof id);
    }
    const detail::Group* g = &groups.dup(parent, seq, id);
    co_return Communicator(c.process_, g, c.rank_);
  }(*this);
}

Task<Communicator> Communicator::split(std::int64_t color, std::int64_t key) const {
  return [](Communicator c, std::int64_t color, std::int64_t key) -> Task<Communicator> {
    const detail::Group& parent = c.group();
    c.process_->check_cancelled();
    const std::uint64_t seq = parent.member(c.rank_).derived++;
    detail::GroupRegistry& groups = c.process_->job_.groups();
    // Each member brings its node's id for its color; the new rank 0's is taken.
    const std::int64_t mine[3] = {color, key, static_cast<std::int64_t>(groups.split_proposal(parent, seq, color))};
    const std::vector<std::byte> all = co_await c.allgather(std::as_bytes(std::span(mine)));
    const auto [g, rank] = groups.split(parent, seq, c.rank_, all);
    co_return g ? Communicator(c.process_, g, rank) : Communicator();
  }(*this, color, key);
}

Communicator Communicator::library(LibraryKey key) const {
  const detail::Group& parent = group();  // checked before process_ is read
  const detail::Group* g = parent.cached_library(key.value());  // made before: no call into the registry
  if (!g) g = &process_->job_.groups().library(parent, key.value());
  g->note_asked();
  return Communicator(process_, g, rank_);
}

Task<void> Communicator::free() {
  const detail::Group& g = group();
  if (g.context() == 0) throw InvalidArgument("switchyard: free: the world communicator lasts as long as its job");
  if (g.library_key() != 0) {
    throw InvalidArgument("switchyard: free: communicator " + std::to_string(g.context()) +
                          " is a library's duplicate, freed with the communicator it duplicates");
  }
  const Communicator c = std::exchange(*this, Communicator());
  return [](Communicator c) -> Task<void> {
    Process& p = *c.process_;
    const detail::Group& g = *c.group_;
    detail::GroupRegistry& groups = p.job_.groups();
    co_await c.drain_for_free(groups.family(g));
    groups.free_leave(g);
    // The last message on g, to its rank 0: see GroupRegistry's "freeing".
    const Tag tag = kFirstReservedTag | (kFirstReservedTag - 1);
    if (c.rank_ != 0) {
      SendTicket last = p.post_send_on(g, 0, {}, tag, false);
      co_await p.wait(last);
    } else {
      for (Rank r = 1; r < g.size(); ++r) {
        RecvTicket last = p.post_recv_on(g, kAnySource, tag, {}, false);
        co_await p.wait(last);
      }
    }
    groups.free_finish(g, c.rank_ == 0);
  }(c);
}

// Step 1 of free(): rounds of an allreduce of the family's traffic until it
// balances. Every member of a core counts on that core's counters (one
// thread), so the core's count is taken by the last of its members to come
// to a round: it includes everything its members did on the family.
Task<void> Communicator::drain_for_free(std::vector<const detail::Group*> family) const {
  Process& p = *process_;
  const std::uint32_t core = p.global_core_;
  const detail::Group& g = *group_;
  const Rank here = static_cast<Rank>(g.members().local[core].size());
  const auto deadline = Process::Clock::now() + p.job_.options().stall_timeout;
  for (auto pause = std::chrono::microseconds(10);; pause = std::min(pause * 2, decltype(pause)(10'000))) {
    std::int64_t pending[2] = {0, 0};  // traffic not taken; what this member left (Mailbox::left_on)
    for (const detail::Group* member : family) {
      pending[1] += static_cast<std::int64_t>(p.worker_.endpoint().left_on(p.rank_, member->context()));
    }
    if (++g.core(core).freeing == here) {
      g.core(core).freeing = 0;
      for (const detail::Group* member : family) pending[0] += member->core(core).traffic;
    }
    const auto total = co_await allreduce(std::span<const std::int64_t>(pending));
    if (total[1] != 0) {
      throw InvalidArgument("switchyard: free of communicator " + std::to_string(g.context()) + ": " +
                            std::to_string(total[1]) +
                            " receive(s) posted on it (or on its library duplicates) "
                            "never matched, or message(s) that arrived on it never received; every member completes "
                            "what it started on a communicator before freeing it");
    }
    if (total[0] == 0) co_return;
    if (Process::Clock::now() > deadline) {
      throw InvalidArgument(
          "switchyard: free of communicator " + std::to_string(g.context()) + ": " + std::to_string(total[0]) +
          " message(s), active message(s) or busy-lock release(s) "
          "sent on it (or on its library duplicates) were still not taken by a receive or a handler "
          "after the stall timeout; every message sent on a communicator is received before it is freed");
    }
    co_await p.sleep_for(pause);
  }
}

}  // namespace switchyard
