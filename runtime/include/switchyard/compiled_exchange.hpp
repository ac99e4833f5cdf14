#pragma once
/// @file
/// Compiled exchanges: a persistent personalized exchange run as copies that
/// the cores make straight from the senders' buffers into the receivers', with
/// nothing announced, matched or woken per message. ExchangePlan runs on it by
/// default (exchange_plan.hpp); this is the runtime's half, which knows cores.
///
/// What is compiled. Each message (or piece of one) is a CopyStep: from a
/// region that its sender publishes, at an offset, into a region that its
/// receiver publishes. Every member hands the run its steps both ways; the
/// steps a core performs are those of its members on one side: the receivers'
/// (CopySide::receiver, "pull": a core copies out of the senders' buffers into
/// its own members') or the senders' ("push": into the receivers'). The first
/// run of a job on a core merges its members' steps into the core's program, in
/// the order the options ask for, and later runs of the job reuse it.
///
/// A run. Every participating member calls run_compiled_exchange() with the same
/// key on the same communicator, once per run, in the same sequence of runs:
///   1. it publishes its regions in a slot of its own, and parks unless it is
///      the last participant of its core to arrive;
///   2. that last one, the core's copier, says that its core has published
///      (one release store per core and run), then runs the core's program:
///      each step as soon as the core at its other end has published, so cores
///      wait for the cores they copy from, never for a global barrier;
///   3. it says that its core has copied, waits until every core that copies
///      out of or into its members has copied too, and wakes the core's other
///      participants: their sends may be reused and their receives are in.
/// A copier that finds every core it copies from published already (on one
/// node, untraced, in the orders any and phases) copies in the awaiting
/// process itself, without suspending, and its own run is complete at once
/// where the cores that copy out of its members are done as well.
/// A waiting copier is parked: its worker checks the word it waits for every
/// turn (Worker::watch) and the core that stores it rings that worker's
/// doorbell, so the core runs its other processes meanwhile and sleeps in the
/// kernel when it has none. Per step a run costs one memcpy and the step it
/// reads, with the step's two addresses as the core found them in its last
/// run: a member whose regions begin where they began in its last run leaves
/// them good, one whose regions moved has its core say so when it publishes,
/// and the cores at both ends of its steps then look them up again through
/// the members' slots. Per core and run, a few cache lines cross cores.
///
/// Small pairs. Pulling, in the orders `any` and `phases`, on one node and
/// with no trace recorded, the steps from one core's members to another
/// core's that come to at most 4 KiB a run, or to at most 64 KiB in pieces of
/// less than a cache line on average, go through a staging area of the
/// sending core: its copier packs them in step 2, before it says that its core
/// has published, and the receiving core unpacks them once it has seen that.
/// The sending core's run then waits for nobody's copies in step 3, so a run
/// of small messages crosses between two cores once rather than twice, for
/// a second copy of a few kilobytes; and pieces smaller than a line, packed,
/// cross in whole lines, where pulled one by one each took a line of its own.
/// The area has a half for runs of odd and of even numbers; a sender writes a
/// half again (two runs later) only once the receiving core has said that it
/// copied the run that read it.
///
/// Orders (CopyOrder): `any` copies each core's steps grouped by the core at
/// their other end, its own first (AC), or, pulling where a receiver takes a
/// page or more, each receiver's steps together, its own core's first (so its
/// buffers are written one after the other); `phases` in the order of their phases,
/// each step as soon as its peer core has published (a static schedule run
/// loosely synchronously), and, pulling where a member takes several strided
/// steps (a redistribution's messages, whose pieces interleave in the
/// receiver's memory), in rounds: each round copies a share of every strided
/// step's pieces in that order, so a receiver's lines stay in the cache from
/// one message's pieces to the next's (pulled, only the receiver's core writes
/// it: rounds change no contention); `strict_phases` puts a barrier of the
/// node's cores between phases (the papers' synchronous model);
/// `receiver_locks` (push only) copies each sender's steps only while it holds
/// its receiver's busy lock (a test-and-set per member, the runtime's), which
/// is released right after the copy: passes over the sender's pending steps,
/// in the order the caller's LockedStepOrder gives them each run (as listed
/// without one), repeated until all are copied, with yields between passes in
/// which every lock was taken. Which exchanges take the locks, and in what
/// order, is the caller's policy: the schedulers run DRS_N on them.
///
/// Split phase. A member may start its run early and await it later
/// (CompiledRun::start): start is step 1, and for the last participant of its
/// core also the core's "published" store of step 2 (on one node), so the
/// cores that pull from its members copy while they compute; awaiting the run
/// then does the rest of steps 2 and 3: the copier copies its core's program
/// and waits for its readers, the others park until their core is done.
/// Between the two the run's regions are the exchange's: the member writes
/// none of its send regions and reads none of its receive regions.
///
/// Safety. A core copies only inside a resume of one of its processes, and
/// cancellation quiesces every worker between resumes before any process
/// unwinds (Worker::quiesce_before_unwinding), so no core reads or writes a
/// region whose process has started to unwind; a member's run completes only
/// once every core that reads or writes its regions has copied.
///
/// Across nodes. A step between two nodes is packed by its sender's core
/// straight from the sender's region into a staging buffer for the receiver's
/// node, the two nodes' leaders (each node's lowest participant) move each
/// buffer as one message per node pair and run, and the receiver's core
/// unpacks it straight into the receiver's region (compiled_exchange_nodes.cpp),
/// each core at its members' addresses of the last run while none moved.
/// Strict phases and busy locks then order the copies within each node; the
/// pieces between nodes travel once per run.
///
/// Limits. Each region must hold the bytes its steps copy, which the caller
/// checks. An exchange keeps its state (a slot per participant, the cores'
/// programs, the staging buffers) on its communicator until the job ends (the
/// staging buffers then go back to the Runtime, which keeps the last job's for
/// the next, so their pages are mapped once per Runtime, not per job); a
/// communicator takes at most 4096 exchanges in a job, and refuses more with
/// an InvalidArgument.

#include <coroutine>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/task.hpp"

namespace switchyard {

/// `bytes` bytes from member src's send region `src_region`, at `src_offset`,
/// into member dst's receive region `dst_region` at `dst_offset`; or, with a
/// count above one, `count` such pieces, the k-th at src_offset + k *
/// src_stride and dst_offset + k * dst_stride (a strided run, one step: a
/// core's compiling merges consecutive steps that form one). Ranks are the
/// communicator's. One cache line.
struct CopyStep {
  Rank src = 0,  ///< the sending member
      dst = 0;  ///< the receiving member
  std::uint32_t src_region = 0,  ///< the sender's region: an index into its CompiledRegions::send
      dst_region = 0;  ///< the receiver's region: an index into its CompiledRegions::recv
  std::uint64_t src_offset = 0,  ///< where the (first) piece starts in the send region, in bytes
      dst_offset = 0,  ///< where the (first) piece starts in the receive region, in bytes
      bytes = 0;  ///< the bytes of each piece
  std::uint32_t phase = 0;  ///< the schedule's phase (CopyOrder::phases and strict_phases)
  std::uint32_t count = 1;  ///< pieces: above one, a strided run
  std::uint64_t src_stride = 0,  ///< bytes from one piece's start to the next's in the send region
      dst_stride = 0;  ///< the same in the receive region
};
static_assert(sizeof(CopyStep) == 64, "a step is one cache line");

/// Whether `next` continues `run` as one more piece of one strided step (the
/// same members, regions, size and phase; `next` a single piece, `run`'s
/// strides past its last one, or its second piece, which sets the strides),
/// and if so makes it so. A core's compiling merges its members' steps so,
/// and a maker of many small steps may merge them before.
bool extend_strided(CopyStep& run, const CopyStep& next) noexcept;

/// Which side's steps a core copies (see the file's description).
enum class CopySide : std::uint8_t {
  receiver,  ///< pull: a core copies the steps into its members
  sender,  ///< push: a core copies the steps out of its members
};

/// The order in which a core copies its steps (see the file's description, "Orders").
enum class CopyOrder : std::uint8_t {
  any,  ///< by the core at the other end, the core's own first (AC), or by receiver for large pulls
  phases,  ///< in the order of their phases, each as soon as its peer core has published
  strict_phases,  ///< phases, with a barrier of the node's cores between phases
  receiver_locks,  ///< push only: each step under its receiver's busy lock, in the LockedStepOrder of each run
  /// Deprecated: receiver_locks (the order that DRS_N runs on).
  busy_locks [[deprecated("use CopyOrder::receiver_locks")]] = receiver_locks,
};

/// A receiver_locks exchange's order of one sender's steps in one run: permutes
/// `steps` (the sender's steps' indices, as listed) in place. Called by the
/// sender's core before the run's first pass, with the options' seed, the
/// run's number in the job (1, 2, ...) and the sender's rank; a function, not
/// a closure, so that every member passes the same one.
using LockedStepOrder = void (*)(std::uint64_t seed, std::uint64_t run, Rank sender,
                                 std::span<std::uint32_t> steps) noexcept;

/// Sees each busy-lock holder while it copies (tests count the copies into
/// each receiver at once, which the locks keep at one).
class BusyLockObserver {
 public:
  /// A copy into `receiver` starts, its busy lock held.
  virtual void enter(Rank receiver) noexcept = 0;
  /// That copy is done; the lock is released next.
  virtual void leave(Rank receiver) noexcept = 0;

 protected:
  ~BusyLockObserver() = default;
};

/// Where the cores' programs of a compiled exchange outlive its job: the
/// owner of an exchange (an ExchangePlan) makes one and passes it with every
/// run. At the end of a job each core's program goes back to it (to the cache
/// of the core's first participant); the first run of a later job on a core
/// whose participants, and the cores of every participant, are those the
/// program was compiled for takes it back instead of compiling again, its
/// addresses looked up anew. Thread-safe; the programs it holds are freed
/// with the last of the cache and the jobs that borrowed from it.
class CompiledProgramCache;
/// A new, empty CompiledProgramCache, for CompiledExchangeOptions::programs.
std::shared_ptr<CompiledProgramCache> make_compiled_program_cache();

/// How an exchange is run: the same on every member and in every run of a job.
struct CompiledExchangeOptions {
  CopySide side = CopySide::receiver;  ///< whose steps each core copies
  CopyOrder order = CopyOrder::any;  ///< in what order
  std::uint32_t phases = 0;  ///< strict_phases: the schedule's phases (every core passes each)
  std::uint64_t seed = 0;  ///< receiver_locks: passed to step_order
  /// receiver_locks: each run's order of each sender's steps; nullptr: as listed.
  LockedStepOrder step_order = nullptr;
  std::uint32_t retry_yields = 1;  ///< receiver_locks: yields after a pass in which every lock was taken
  BusyLockObserver* observer = nullptr;  ///< receiver_locks: sees each copy under a lock (tests); not owned
  /// From make_compiled_program_cache(), alive for as long as runs use it; nullptr:
  /// each job compiles its programs.
  CompiledProgramCache* programs = nullptr;
};

/// One member's part, the same in every run: its steps as receiver and as
/// sender (each exactly once in the whole exchange). The steps must stay alive
/// and unchanged for as long as a job runs the exchange.
struct CompiledMember {
  std::span<const CopyStep> incoming;  ///< dst == this member
  std::span<const CopyStep> outgoing;  ///< src == this member
};

/// This member's regions for one run: they must stay alive until the run returns.
struct CompiledRegions {
  std::span<const std::span<const std::byte>> send;  ///< the regions its outgoing steps copy from
  std::span<const std::span<std::byte>> recv;  ///< the regions its incoming steps copy into
};

/// A check of a member's regions (their sizes against the caller's plan, say)
/// that a run makes only when its span lists differ from the member's last
/// run's in the job: a run on the same spans again was checked already. It
/// throws to refuse them, before the member publishes anything; the task
/// rethrows it.
struct CompiledRegionCheck {
  void (*check)(const void* context, const CompiledRegions& regions) = nullptr;  ///< the check; nullptr: none
  const void* context = nullptr;  ///< passed to check, as the caller's state
};

/// What one member's run counted.
struct CompiledRunStats {
  std::uint64_t busy_lock_inquiries = 0;  ///< receiver_locks: test-and-sets made for this member's steps
};

namespace detail {
struct CompiledEngine;
class CompiledExchangeState;
}  // namespace detail

class CompiledBinding;

/// A run of a compiled exchange, to co_await where it is made: no coroutine
/// frame of its own. Awaited, the process arrives (step 1 above) in its own
/// frame; a participant that is not its core's copier then parks in the
/// awaiting coroutine itself until its core wakes it; the copier (and a node's
/// leader across nodes) goes on in a task made then, one per core and run
/// rather than one per process. It may also carry any other run as a Task (a
/// plan's other forms). Awaited once, not moved once awaited; a caller that
/// keeps Tasks converts it to one (a frame around it).
class [[nodiscard]] CompiledRun {
 public:
  /// A run that is `task` (another form of a plan's run), awaited as it is.
  explicit CompiledRun(Task<CompiledRunStats> task) noexcept : task_(std::move(task)) {}
  /// Moves a run that has not been awaited.
  CompiledRun(CompiledRun&&) noexcept = default;
  /// Moves a run that has not been awaited.
  CompiledRun& operator=(CompiledRun&&) noexcept = default;

  /// Step 1: checks and publishes this member's regions and arrives at its
  /// core; false, as the run is not complete then (a run that is a Task: as the Task).
  bool await_ready();
  /// Parks a participant until its core has copied, or starts the copier's
  /// (or the leader's) task; returns the coroutine to run next.
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter);
  /// The member's run is complete: its counts. Rethrows what failed the run.
  CompiledRunStats await_resume();
  /// The run as a Task (a coroutine frame around it), for a caller that keeps Tasks.
  operator Task<CompiledRunStats>() &&;  // NOLINT(google-explicit-constructor): where callers keep Tasks

  /// Split phase (see the file's description): step 1 now, never suspending;
  /// awaiting the run later completes it. Its regions stay the exchange's
  /// until then. A run that is a Task is left as it is (it runs when awaited).
  /// The run may be moved between the two. InvalidArgument if started already.
  void start();
  /// Whether start() was called (and the run not awaited since).
  bool started() const noexcept { return started_; }
  /// The owner of a started run goes away before awaiting it (a plan
  /// destroyed with a split run in flight): fails the job of `comm` (the
  /// run's communicator) with an Error saying `why`, and keeps `keep` (what
  /// the run's regions and part live in) until the job ends, so that no core
  /// reads freed memory meanwhile. Does nothing outside a running job of comm
  /// on this thread (the job is over: nothing reads them any more).
  void abandon(const Communicator& comm, const std::string& why, std::shared_ptr<const void> keep) noexcept;
  /// Refuses a call that would leave this started run behind (a second start
  /// before its wait): the job is cancelled, and every core has stopped
  /// reading and writing the job's regions, before InvalidArgument(`why`) is
  /// thrown, so that unwinding the caller's frame may free the run's buffers.
  [[noreturn]] void refuse_while_started(const std::string& why);

 private:
  friend struct detail::CompiledEngine;
  friend class CompiledBinding;
  /// Where an awaited run stands: a Task; not arrived; parked until its core
  /// has copied; its core's copier; a node's leader; the copier waiting in
  /// task_ for the cores that copy out of its members; complete.
  enum class Step : std::uint8_t { task, arrive, parked, copier, leader, readers, complete };
  /// An unbound run's arguments (run_compiled_exchange's, but the communicator).
  struct Unbound {
    std::uint64_t key = 0;  ///< the exchange
    Rank participants = 0;  ///< its participants
    const CompiledMember* mine = nullptr;  ///< this member's steps
    CompiledRegions regions;  ///< this run's regions
    CompiledExchangeOptions options;  ///< how the exchange runs
    CompiledRegionCheck check;  ///< the caller's check of regions that moved
  };
  CompiledRun(const Communicator& comm, std::uint64_t key, Rank participants, const CompiledMember& mine,
              CompiledRegions regions, const CompiledExchangeOptions& options, CompiledRegionCheck check) noexcept
      : comm_(comm), step_(Step::arrive), unbound_(Unbound{key, participants, &mine, regions, options, check}) {}
  /// A run of `binding`: everything but the communicator is the binding's.
  explicit CompiledRun(CompiledBinding& binding) noexcept;

  // What a bound run reads and writes comes first, the unbound run's
  // arguments last: a bound run of a process among hundreds on its core finds
  // none of its lines in L1 and pays for each line it touches.
  Communicator comm_;
  CompiledBinding* binding_ = nullptr;  ///< a bound run's binding, which holds the rest
  Step step_ = Step::task;
  bool started_ = false;  ///< start() was called: awaiting completes steps 2 and 3
  std::uint64_t run_ = 0;  ///< once arrived: the member's run number
  detail::CompiledExchangeState* state_ = nullptr;  ///< once arrived
  Task<CompiledRunStats> task_;  ///< Step::task, copier and leader
  /// An unbound run's arguments; none for a bound run, whose binding holds
  /// them (nothing to write for them on every bound run), or a Task.
  std::optional<Unbound> unbound_;
};

/// One member's regions bound for the runs of an exchange in a job, as MPI 4's
/// persistent collectives bind their buffers: its runs check and publish
/// nothing that the binding settled once. The member's core compares the
/// binding's number instead of the region lists, and looks the exchange's
/// state up in the first run alone. The regions stay where they are and alive
/// for as long as the binding runs (their bytes are the caller's to change
/// between runs); a caller checks their sizes before binding them. A binding
/// belongs to the job of its communicator. Moving it keeps its lists where
/// they are; a moved-from binding refuses to run.
class CompiledBinding {
 public:
  /// An empty binding: run() refuses it.
  CompiledBinding() = default;
  /// Binds member comm.rank()'s regions `send` and `recv` for runs of the
  /// exchange `key` (run_compiled_exchange's other arguments, the same in every run).
  CompiledBinding(const Communicator& comm, std::uint64_t key, Rank participants, const CompiledMember& mine,
                  std::vector<std::span<const std::byte>> send, std::vector<std::span<std::byte>> recv,
                  const CompiledExchangeOptions& options);
  /// Takes `other`'s binding, which refuses to run from then on.
  CompiledBinding(CompiledBinding&& other) noexcept;
  /// Takes `other`'s binding, which refuses to run from then on.
  CompiledBinding& operator=(CompiledBinding&& other) noexcept;
  CompiledBinding(const CompiledBinding&) = delete;
  CompiledBinding& operator=(const CompiledBinding&) = delete;
  ~CompiledBinding() = default;

  /// One run on the bound regions, to co_await (a CompiledRun); InvalidArgument
  /// for an empty or moved-from binding. Inline: it stands on every bound run's path.
  CompiledRun run() {
    if (id_ == 0) [[unlikely]]
      refuse_empty();
    return CompiledRun(*this);
  }
  /// Whether the binding holds regions (not empty, not moved from).
  bool bound() const noexcept { return id_ != 0; }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] static void refuse_empty();
  friend struct detail::CompiledEngine;
  friend class CompiledRun;
  // What every run reads first, on one line where the binding starts one:
  // the rest is read only where the regions are published again.
  Communicator comm_;
  std::uint64_t id_ = 0;  ///< distinct among the program's bindings; 0: none
  detail::CompiledExchangeState* state_ = nullptr;  ///< the exchange's state in the job, once a run has looked it up
  std::uint64_t key_ = 0;
  Rank participants_ = 0;
  const CompiledMember* mine_ = nullptr;
  std::vector<std::span<const std::byte>> send_;
  std::vector<std::span<std::byte>> recv_;
  CompiledExchangeOptions options_;
};

inline CompiledRun::CompiledRun(CompiledBinding& binding) noexcept
    : comm_(binding.comm_), binding_(&binding), step_(Step::arrive) {}

/// Runs comm.rank()'s part of the exchange `key` (the same on every member of
/// a node, distinct from every other exchange run on comm in the job). The
/// members of rank below `participants` take part; the others must not call.
/// Options and participants are the same on every member. Throws
/// InvalidArgument for a step of another member or of a rank beyond the
/// participants, or options that differ from the first run's in the job.
/// Awaited in the calling process (CompiledRun).
CompiledRun run_compiled_exchange(const Communicator& comm, std::uint64_t key, Rank participants,
                                  const CompiledMember& mine, CompiledRegions regions,
                                  const CompiledExchangeOptions& options, CompiledRegionCheck check = {});

/// Compiles the cores' programs of the exchange `key` on comm ahead of its
/// first run (which then costs what every run costs): a collective of the
/// participants of each core, which call it once, as they would run it, with
/// the same arguments but regions.
Task<void> prepare_compiled_exchange(const Communicator& comm, std::uint64_t key, Rank participants,
                                     const CompiledMember& mine, CompiledExchangeOptions options);

// The compiled exchange's earlier names, before it took one name in code and
// prose ("compiled"): kept for applications written against them.

/// Deprecated: CompiledExchangeOptions.
using CopyExchangeOptions [[deprecated("use CompiledExchangeOptions")]] = CompiledExchangeOptions;
/// Deprecated: CompiledMember.
using CopyMember [[deprecated("use CompiledMember")]] = CompiledMember;
/// Deprecated: CompiledRegions.
using CopyRegions [[deprecated("use CompiledRegions")]] = CompiledRegions;
/// Deprecated: CompiledRegionCheck.
using CopyRegionCheck [[deprecated("use CompiledRegionCheck")]] = CompiledRegionCheck;
/// Deprecated: CompiledRunStats.
using CopyRunStats [[deprecated("use CompiledRunStats")]] = CompiledRunStats;
/// Deprecated: CompiledRun.
using CopyRun [[deprecated("use CompiledRun")]] = CompiledRun;
/// Deprecated: CompiledBinding.
using CopyBinding [[deprecated("use CompiledBinding")]] = CompiledBinding;
/// Deprecated: CompiledProgramCache.
using CopyProgramCache [[deprecated("use CompiledProgramCache")]] = CompiledProgramCache;

/// Deprecated: make_compiled_program_cache().
[[deprecated("use make_compiled_program_cache")]] inline std::shared_ptr<CompiledProgramCache>
make_copy_program_cache() {
  return make_compiled_program_cache();
}

/// Deprecated: run_compiled_exchange().
[[deprecated("use run_compiled_exchange")]] inline CompiledRun run_copy_exchange(
    const Communicator& comm, std::uint64_t key, Rank participants, const CompiledMember& mine, CompiledRegions regions,
    const CompiledExchangeOptions& options, CompiledRegionCheck check = {}) {
  return run_compiled_exchange(comm, key, participants, mine, regions, options, check);
}

/// Deprecated: prepare_compiled_exchange().
[[deprecated("use prepare_compiled_exchange")]] inline Task<void> prepare_copy_exchange(
    const Communicator& comm, std::uint64_t key, Rank participants, const CompiledMember& mine,
    CompiledExchangeOptions options) {
  return prepare_compiled_exchange(comm, key, participants, mine, options);
}

}  // namespace switchyard
