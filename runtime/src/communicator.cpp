// The Communicator handle: what a process holds of a group (its state is in
// group.cpp, the job's registry of groups in group_registry.cpp).

#include "switchyard/communicator.hpp"

#include <string>

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
  const std::string here = detail::running_job == 0 ? "on a thread outside every job"
                                                    : "in job " + std::to_string(detail::running_job);
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
                          std::to_string(r) + " lives on another node, which alone holds its lock "
                          "(try_busy_lock and release_busy_lock reach it)");
  }
  return *lock;
}

Task<Communicator> Communicator::dup() const {
  return [](Communicator c) -> Task<Communicator> {
    const detail::Group& parent = c.group();
    c.process_->check_cancelled();
    const std::uint64_t seq = parent.member(c.rank_).derived++;
    co_return Communicator(c.process_, &c.process_->job_.groups().dup(parent, seq), c.rank_);
  }(*this);
}

Task<Communicator> Communicator::split(std::int64_t color, std::int64_t key) const {
  return [](Communicator c, std::int64_t color, std::int64_t key) -> Task<Communicator> {
    const detail::Group& parent = c.group();
    c.process_->check_cancelled();
    const std::uint64_t seq = parent.member(c.rank_).derived++;
    const std::pair<std::int64_t, std::int64_t> mine{color, key};
    const std::vector<std::byte> all = co_await c.allgather(std::as_bytes(std::span(&mine, 1)));
    const auto [g, rank] = c.process_->job_.groups().split(parent, seq, c.rank_, all);
    co_return g ? Communicator(c.process_, g, rank) : Communicator();
  }(*this, color, key);
}

Communicator Communicator::library(LibraryKey key) const {
  const detail::Group& parent = group();  // checked before process_ is read
  return Communicator(process_, &process_->job_.groups().library(parent, key.value()), rank_);
}


}  // namespace switchyard
