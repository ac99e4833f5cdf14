#pragma once
/// @file
/// Communicators, as in MPI: a group of the job's processes with a context of
/// its own. Every message carries its communicator's context id and matches only
/// receives posted on the same communicator, so two libraries on two
/// communicators can use the same tags between the same processes and never see
/// each other's messages. Ranks, tags, collectives and busy locks are relative to
/// the communicator.
///
/// A Communicator is a handle held by one process (the member it speaks for):
/// cheap to copy, valid for the job it was made in. A Process converts to its
/// job's world communicator, so every call that takes a communicator also takes
/// a process. Kept past its job (or handed to a thread outside it), it is no
/// longer valid(), and every call on it but rank() is an InvalidArgument naming
/// that job (JobStats::job): it never reaches the job's freed state.
///
/// @code
///   Communicator world = p;                           // or p.world()
///   Communicator mine = co_await world.dup();         // collective over world
///   Communicator half = co_await world.split(p.rank() % 2, p.rank());
///   co_await half.send(0, bytes, /*tag*/ 5);          // rank 0 of `half`
/// @endcode
///
/// Libraries: a library that runs on a caller's communicator works on
/// comm.library(kMyKey), the duplicate reserved for it, which is the same every
/// time it is asked for in a job and costs no communication.
///
/// Context ids are allocated: no two live communicators of a job share one
/// (across nodes: but for library duplicates, numbered from their communicator
/// and key, which is checked). free() gives them back; a node holds at most
/// 65,536 communicators at once (GroupRegistry::kMaxContexts).

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "switchyard/busy_lock.hpp"
#include "switchyard/message.hpp"
#include "switchyard/process.hpp"
#include "switchyard/task.hpp"

namespace switchyard {

namespace detail {
class Group;
struct CompiledEngine;
}  // namespace detail

/// The name under which a library reserves its duplicate of a communicator:
/// a 64-bit FNV-1a hash of a string, computed at compile time.
class LibraryKey {
 public:
  /// The key of the library named `name`; each library takes a name of its own.
  explicit constexpr LibraryKey(std::string_view name) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    value_ = h | 1;  // never 0: 0 means "not a library's duplicate"
  }
  /// The hash, never 0.
  constexpr std::uint64_t value() const noexcept { return value_; }

 private:
  std::uint64_t value_ = 1;
};

/// A process's handle on a communicator: a group of the job's processes with a
/// context of its own (see the file's description). Cheap to copy; valid only
/// in the job it was made in, and only in the process it speaks for.
class Communicator {
 public:
  /// split(): the color of a process that joins no new communicator (MPI_UNDEFINED).
  static constexpr std::int64_t kUndefined = std::numeric_limits<std::int64_t>::min();

  Communicator() = default;  ///< a null communicator: valid() is false
  /// The job's world communicator, as `p` sees it (Process::world()).
  Communicator(Process& p) noexcept;  // NOLINT(google-explicit-constructor): p's world communicator

  /// A communicator of the job this thread runs (not a null one).
  bool valid() const noexcept { return group_ != nullptr && job_ == detail::running_job; }
  /// This process's rank in the communicator; the one call that a handle kept
  /// past its job still answers.
  Rank rank() const noexcept { return rank_; }
  /// The job it was made in (JobStats::job); 0 for a null communicator.
  std::uint64_t job() const noexcept { return job_; }
  /// The number of members.
  Rank size() const;
  /// Nodes (MPI ranks of a job across machines) with at least one member: 1 on one machine.
  std::uint32_t nodes() const;
  /// The context id that its messages carry.
  ContextId context() const;
  /// The process this handle speaks for.
  Process& process() const;
  /// The rank in the job (the world communicator) of this communicator's rank r.
  Rank job_rank(Rank r) const;
  /// This communicator's rank of the job's rank `job`, or kAnySource if that process is not a member.
  Rank rank_of_job_rank(Rank job) const;

  // --- point to point: as the Process calls of the same names, on this communicator ---
  /// Process::send to member `dst`.
  Process::SendAwaiter send(Rank dst, std::span<const std::byte> bytes, Tag tag = 0) const;
  /// Process::ssend to member `dst`.
  Process::SendAwaiter ssend(Rank dst, std::span<const std::byte> bytes, Tag tag = 0) const;
  /// Process::recv from member `src` (or kAnySource).
  Process::RecvAwaiter recv(Rank src, Tag tag = 0) const;
  /// Process::recv_into from member `src` (or kAnySource).
  Process::RecvIntoAwaiter recv_into(Rank src, std::span<std::byte> buffer, Tag tag = 0) const;
  /// Process::post_send to member `dst`.
  [[nodiscard]] SendTicket post_send(Rank dst, std::span<const std::byte> bytes, Tag tag = 0) const;
  /// Process::post_ssend to member `dst`.
  [[nodiscard]] SendTicket post_ssend(Rank dst, std::span<const std::byte> bytes, Tag tag = 0) const;
  /// Process::post_recv from member `src` (or kAnySource).
  [[nodiscard]] RecvTicket post_recv(Rank src, Tag tag = 0) const;
  /// Process::post_recv_into from member `src` (or kAnySource).
  [[nodiscard]] RecvTicket post_recv_into(Rank src, std::span<std::byte> buffer, Tag tag = 0) const;

  // --- active messages: the handler sees the sender's rank in this communicator ---
  /// Process::post_active to member `dst`.
  void post_active(Rank dst, HandlerId handler, std::span<const std::byte> body) const;
  /// Process::send_active to member `dst`.
  Task<void> send_active(Rank dst, HandlerId handler, std::span<const std::byte> body) const;

  // --- busy locks: one per member, this communicator's own ---
  // The lock of member r lives on r's node, in a CPU atomic that the
  // processes of that node test-and-set directly. try_busy_lock is one
  // test-and-set of it from anywhere; co_await yields whether the lock is now
  // this process's. From another node it is a request to r's core, which
  // arbitrates it with the same atomic (so at most one process of the job
  // holds the lock) and answers; the process waits for the answer without
  // holding its core. release_busy_lock gives a lock so acquired back (from
  // another node: a one-way message).
  /// One test-and-set of member r's busy lock; co_await yields whether the
  /// lock is now this process's (from another node, once r's core answers).
  Process::BusyLockAwaiter try_busy_lock(Rank r) const;
  /// Gives back member r's busy lock, which this process acquired.
  void release_busy_lock(Rank r) const;
  /// The atomic itself, for a member on this node (InvalidArgument for a
  /// member of another node: only its node holds its lock).
  BusyLock& busy_lock(Rank r) const;
  /// The same, or nullptr for a member of another node: for a caller that
  /// looks its locks up once and tries them many times.
  BusyLock* busy_lock_if_local(Rank r) const;

  // --- collectives: every member calls them, in the same order ---
  /// Returns once every member has called it (BarrierCall).
  BarrierCall barrier() const;
  /// Every member's bytes, concatenated in rank order (Process::allgather).
  Task<std::vector<std::byte>> allgather(std::span<const std::byte> mine) const;
  /// allgather of one trivially copyable value per member, in rank order.
  template <class T>
  Task<std::vector<T>> allgather_value(const T& mine) const;
  /// An allgather of which each member receives only its own part: once per
  /// core, split(gathered, members, parts) gets the concatenation allgather
  /// would return, the ranks of the members on this core and an empty part per
  /// member to fill. A core holds one gathered copy, not one per member, and a
  /// member reads only its part: how every member learns its column of a
  /// matrix whose rows are spread over the members (Generate_Recv) in
  /// O(cores * (n + entries)), not O(n * entries). Every member passes the same split.
  using GatherSplit = std::function<void(std::span<const std::byte> gathered, std::span<const Rank> members,
                                         std::span<std::vector<std::byte>> parts)>;
  /// The allgather described at GatherSplit: yields this member's part.
  Task<std::vector<std::byte>> allgather_split(std::span<const std::byte> mine, GatherSplit split) const;
  /// Element-wise sum over the members (Process::allreduce).
  Task<std::vector<std::int64_t>> allreduce(std::span<const std::int64_t> mine) const;
  /// Element-wise sum of the vectors of all lower ranks (Process::exclusive_scan).
  Task<std::vector<std::int64_t>> exclusive_scan(std::span<const std::int64_t> mine) const;
  /// Member root's bytes, on every member (Process::broadcast).
  Task<std::vector<std::byte>> broadcast(Rank root, std::span<const std::byte> bytes) const;

  // --- new communicators ---
  /// Collective: a new context with the same members and ranks.
  Task<Communicator> dup() const;
  /// Collective: members passing the same color form one new communicator,
  /// ranked by (key, rank here); color kUndefined gives a null communicator.
  Task<Communicator> split(std::int64_t color, std::int64_t key = 0) const;
  /// The duplicate reserved for a library: the same context every time it is
  /// asked for in this job, distinct from every other. Local, no communication.
  Communicator library(LibraryKey key) const;
  /// Collective, as MPI_Comm_free: every member calls it once it has completed
  /// everything it started on this communicator and its library duplicates
  /// (its receives matched, every message it sent received, its active
  /// messages posted). Frees them all and gives their context ids back for
  /// later communicators; this handle becomes a null one, and every copy of it
  /// is dangling (as in MPI: not to be used). InvalidArgument for the world or
  /// a library's duplicate (freed with what it duplicates), for a receive
  /// posted and never matched or a message never received (named), or a
  /// message sent and not taken within the job's stall timeout.
  Task<void> free();

  /// The same communicator, seen by the same process (two null ones are equal).
  friend bool operator==(const Communicator& a, const Communicator& b) noexcept {
    return a.group_ == b.group_ && a.process_ == b.process_;
  }

 private:
  friend class Process;
  friend struct detail::CompiledEngine;
  Communicator(Process* p, const detail::Group* g, Rank rank) noexcept
      : process_(p), group_(g), job_(p->job_serial_), rank_(rank) {}
  /// The group, once this communicator is known to be valid(); else an InvalidArgument.
  const detail::Group& group() const;
  [[noreturn, gnu::cold, gnu::noinline]] void not_valid() const;
  /// free()'s first step: until the family's traffic balances (communicator.cpp).
  Task<void> drain_for_free(std::vector<const detail::Group*> family) const;

  Process* process_ = nullptr;
  const detail::Group* group_ = nullptr;
  std::uint64_t job_ = 0;  ///< the job's serial: process_ and group_ are read only while it runs
  Rank rank_ = 0;
};

// The point-to-point calls are inline: they are on the path of every message.

inline Communicator Process::world() noexcept { return Communicator(this, world_, rank_); }

inline const detail::Group& Communicator::group() const {
  if (job_ != detail::running_job || !group_) [[unlikely]]
    not_valid();
  return *group_;
}

inline Process::SendAwaiter Communicator::send(Rank dst, std::span<const std::byte> bytes, Tag tag) const {
  return Process::SendAwaiter(*process_, post_send(dst, bytes, tag));
}
inline Process::SendAwaiter Communicator::ssend(Rank dst, std::span<const std::byte> bytes, Tag tag) const {
  return Process::SendAwaiter(*process_, post_ssend(dst, bytes, tag));
}
inline Process::RecvAwaiter Communicator::recv(Rank src, Tag tag) const {
  return Process::RecvAwaiter(*process_, post_recv(src, tag), src);
}
inline Process::RecvIntoAwaiter Communicator::recv_into(Rank src, std::span<std::byte> buffer, Tag tag) const {
  return Process::RecvIntoAwaiter(*process_, post_recv_into(src, buffer, tag), src);
}
inline SendTicket Communicator::post_send(Rank dst, std::span<const std::byte> bytes, Tag tag) const {
  process_->check_user_tag(tag, "send");
  return process_->post_send_on(group(), dst, bytes, tag, false);
}
inline SendTicket Communicator::post_ssend(Rank dst, std::span<const std::byte> bytes, Tag tag) const {
  process_->check_user_tag(tag, "ssend");
  return process_->post_send_on(group(), dst, bytes, tag, true);
}
inline RecvTicket Communicator::post_recv(Rank src, Tag tag) const {
  process_->check_user_tag(tag, "recv");
  return process_->post_recv_on(group(), src, tag, {}, false);
}
inline RecvTicket Communicator::post_recv_into(Rank src, std::span<std::byte> buffer, Tag tag) const {
  process_->check_user_tag(tag, "recv_into");
  return process_->post_recv_on(group(), src, tag, buffer, true);
}

template <class T>
Task<std::vector<T>> Communicator::allgather_value(const T& mine) const {
  static_assert(std::is_trivially_copyable_v<T>, "allgather_value needs a trivially copyable type");
  // By value: the coroutine must not refer to `mine` or *this after the call returns.
  return [](Communicator c, T value) -> Task<std::vector<T>> {
    auto bytes = co_await c.allgather(std::as_bytes(std::span<const T, 1>(&value, 1)));
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    co_return out;
  }(*this, mine);
}

}  // namespace switchyard
