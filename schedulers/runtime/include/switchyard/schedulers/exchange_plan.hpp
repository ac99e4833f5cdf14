#pragma once
/// @file
/// ExchangePlan: a persistent personalized exchange, the switchyard form of
/// MPI_Neighbor_alltoallv_init. Made once from a communication pattern (who
/// sends how many bytes to whom) and a scheduler; run any number of times, in
/// any job, on the caller's own buffers. Every exchange of the project runs on
/// it: `switchyard exchange`, the exchange driver, array redistribution.
///
/// @code{.cpp}
///   // Once, from the whole pattern (a CommMatrix), shared by every process:
///   const ExchangePlan plan(matrix, {.scheduler = "optimal", .strict = true});
///   const ExchangePlan ac(matrix, "ac");  // the scheduler alone
///   // In each process, as often as needed:
///   co_await plan.run(p, send_spans, recv_spans);
///
///   // Or collectively inside a job, each process knowing only its own sends;
///   // receive counts are found by Generate_Recv:
///   ExchangePlan mine = co_await ExchangePlan::create(p, my_sends, {.scheduler = "ac"});
/// @endcode
///
/// create() of a static scheduler gathers the rows once per core, which gives
/// each member its column and rank 0 the whole matrix; rank 0 makes the
/// schedule and sends each member its own program; create() of "ac" or
/// "drsn" finds each member's receives by Generate_Recv, by active messages
/// when the options name an installed GenerateRecvByActiveMessages, else by
/// concatenation.
///
/// Schedulers: "ac" and "drsn" (online: no schedule table) and every static
/// scheduler of the registry ("lp", "gm", "cgm", "rsn", "rsnh", "optimal",
/// "optimal-bytes"). A static schedule runs loosely synchronously (executor.hpp).
/// "auto" charges ac, lp, cgm, optimal, optimal-bytes and drsn for the matrix
/// through the C³ model with options.machine (auto_scheduler.hpp) and makes the
/// plan of the cheapest; options().scheduler then names the one chosen and
/// options().chosen_by_auto is set. create() with "auto" gathers the rows to rank 0 the same way,
/// rank 0 chooses and tells the others, then the chosen scheduler's create()
/// follows.
///
/// Communicators: run() works on comm.library(kExchangePlanLibrary), the
/// duplicate of the caller's communicator reserved for exchange plans, so its
/// messages never match the caller's receives (or another library's), whatever
/// the tags. Runs of plans on one communicator by one process follow each other;
/// every member runs the same sequence of plans, as with MPI collectives.
///
/// Buffers are checked against the plan before anything is sent: a count, size
/// or displacement that does not match is an InvalidArgument naming the rank
/// and the entry.
///
/// Execution. By default a run is compiled (ExchangeExecution::compiled,
/// switchyard/compiled_exchange.hpp): the plan's messages, in its scheduler's
/// order, become per-core programs of copies, made once per job and
/// communicator, and each core copies every message of its members straight
/// from the sender's buffer into the receiver's: nothing announced, matched or
/// woken per message. By default the receiver's core copies (pull,
/// CopySide::receiver); DRS_N always pushes, a sender's core holding its
/// receiver's busy lock while it copies. ExchangeExecution::messages runs the
/// same plan on the runtime's point-to-point messages instead, as the papers'
/// processes send them (executor.hpp, online.hpp); it is also what runs when
/// the communicator spans several nodes. Hooks that describe their memory
/// (exchange_hooks.hpp) give a compiled run of a plan from the whole pattern,
/// on one node, their regions instead of buffers: it copies each message straight from its
/// sender's blocks into its receiver's, packing nothing.
///
/// Split phase (as MPI_Start and MPI_Wait, PetscSFBcastBegin and End):
/// start() begins a member's run and returns at once; the member computes,
/// then co_awaits wait() to complete it.
///
/// @code{.cpp}
///   plan.start(p, send_spans, recv_spans);  // never suspends
///   ... work that neither writes the send buffers nor reads the receive buffers ...
///   co_await plan.wait(p);                  // the receives are in, the sends free again
/// @endcode
///
/// Between the two the buffers (and the span lists naming them) are the
/// exchange's: the member must not write its send buffers nor read its
/// receive buffers, and keeps them alive until the wait. What start() does:
///  - compiled, on one node (the default): the member publishes its buffers
///    and arrives at its core; the last of its core's members to start also
///    says that the core has published, so the cores that copy out of its
///    members' buffers copy while it computes. The wait of that last member
///    copies its core's messages and waits for the cores that read its
///    members' buffers; the others' waits park until their core is done;
///  - hooks that describe memory: the same once the member's copies are
///    compiled (its first run); its first start records the run, which its
///    wait makes;
///  - on messages, across nodes' staging, or the Alltoallv and other hook
///    forms: start() checks what a run checks at its call and records the
///    run, which the wait makes: correct, without overlap.
///
/// Misuse is an InvalidArgument: a second start() by a member before its
/// wait(), or a wait() without a start(). A plan destroyed with a member's
/// split run in flight (inside the job) fails that job with an Error naming
/// the plan and the process; the plan's memory is kept until the job ends.
/// Every start must be waited in the same job.
///
/// A run allocates nothing once its process has run the plan before in the
/// job: a compiled run's programs are made on its first run in a job, and its
/// scratch is the plan's; a message run's coroutine frames, tickets and
/// scratch come from the runtime's per-core frame cache (detail::PooledArray),
/// except arrays beyond the cache's largest block (2 KiB: more than 127
/// tickets at once, as AC posts for a process with more messages than that one
/// way), which still come from the heap.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/compiled_exchange.hpp"
#include "switchyard/model/machine_file.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_hooks.hpp"
#include "switchyard/schedulers/online.hpp"
#include "switchyard/schedulers/schedule.hpp"
#include "switchyard/schedulers/scheduler_name.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers {

/// The key of the communicator duplicate that plans run on (see Communicators above).
inline constexpr LibraryKey kExchangePlanLibrary{"switchyard.exchange_plan"};

class GenerateRecvByActiveMessages;

/// How a run moves the bytes (see above).
enum class ExchangeExecution : std::uint8_t {
  compiled,  ///< the compiled exchange (compiled_exchange.hpp): each core copies its members' messages, sender to
             ///< receiver
  messages,  ///< the runtime's point-to-point messages
  /// Deprecated: the compiled exchange's earlier name.
  copy [[deprecated("use ExchangeExecution::compiled")]] = compiled,
};

/// Trivially copyable (static_assert below): options written as braces inside
/// a co_await expression are safe (scheduler_name.hpp says why that matters).
struct ExchangePlanOptions {
  SchedulerName scheduler = "optimal";  ///< a name of the scheduler table, or "auto"
  std::uint64_t seed = 1;  ///< static schedulers' seed; DRS_N's order streams derive from it per run
  std::uint64_t max_phases = 0;  ///< optimal-bytes' phase cap (0: none)
  AcOptions ac{};  ///< ac's strip mining
  std::uint32_t drsn_retry_yields = 1;  ///< drsn: DrsnOptions::retry_yields
  BusyLockMonitor* drsn_monitor = nullptr;  ///< tests: counts DRS_N senders per receiver
  /// create() of "ac" and "drsn": Generate_Recv by active messages with this
  /// object, installed on the job's RunOptions; without one, by concatenation.
  GenerateRecvByActiveMessages* generate_recv = nullptr;
  /// A plan from the whole pattern may run on a communicator of more than
  /// processes() members, whose members from processes() on take no part
  /// (array redistribution: a job may be larger than its grids).
  bool allow_larger_communicator = false;
  /// "auto": the machine file whose core level charges the candidates; none:
  /// model::default_machine_file(). Read while the plan is made (the plan keeps
  /// a copy: options().machine points to it).
  const model::MachineFile* machine = nullptr;
  bool chosen_by_auto = false;  ///< set by the plan when "auto" chose options().scheduler
  ExchangeExecution execution = ExchangeExecution::compiled;  ///< compiled copies or the runtime's messages
  /// copy: whose core copies a message, its receiver's (pull) or its sender's
  /// (push). DRS_N pushes whatever this says.
  CopySide copy_side = CopySide::receiver;
  /// copy, static schedules: a barrier of the cores between phases (the
  /// papers' synchronous model) instead of running loosely synchronously.
  bool strict = false;
};
static_assert(std::is_trivially_copyable_v<ExchangePlanOptions>, "options safe as a braced temporary in co_await");

/// What one run did, for the statistics of the online schedulers: DRS_N's
/// busy_lock_inquiries, this process's test-and-set attempts. The compiled
/// run's statistics themselves, so that a run returns the runtime's task as it is.
using ExchangeRunStats = CompiledRunStats;
/// A run, to co_await (or to keep as a Task<ExchangeRunStats>, which it
/// converts to): a compiled run awaited at once makes no coroutine frame for
/// the process that awaits it (CompiledRun).
using ExchangeRun = CompiledRun;

namespace detail {
struct ExchangePlanData;
}

/// One member's buffers bound to a plan for the runs of a job
/// (ExchangePlan::bind), as MPI 4's persistent collectives bind theirs: each
/// run then checks and publishes nothing that the binding settled once, and a
/// compiled run's core compares one number where an unbound run compares the
/// buffer lists. The buffers stay where they are and alive while the binding
/// runs (their bytes are the caller's to change between runs); the plan
/// outlives it (moving the plan is fine). A binding belongs to the job of its
/// communicator.
///
/// @code{.cpp}
///   BoundExchange halo = plan.bind(p, send_spans, recv_spans);
///   for (int it = 0; it < iterations; ++it) {
///     fill(send_spans);
///     co_await halo.run();   // or: halo.start(); compute(); co_await plan.wait(p);
///     use(recv_spans);
///   }
/// @endcode
class BoundExchange {
 public:
  /// An empty binding: run() refuses it.
  BoundExchange() = default;
  /// Takes `other`'s binding, which refuses to run from then on.
  BoundExchange(BoundExchange&& other) noexcept;
  /// Takes `other`'s binding, which refuses to run from then on.
  BoundExchange& operator=(BoundExchange&& other) noexcept;
  BoundExchange(const BoundExchange&) = delete;
  BoundExchange& operator=(const BoundExchange&) = delete;
  ~BoundExchange() = default;

  /// One run of the plan on the bound buffers, to co_await as ExchangePlan::run's.
  /// InvalidArgument for an empty or moved-from binding. Inline where the plan
  /// runs compiled: it stands on every bound run's path.
  ExchangeRun run() { return copies_.bound() ? copies_.run() : run_uncompiled(); }
  /// Split phase of run() (ExchangePlan::start on the bound buffers, without
  /// their checks): starts the binding communicator's run and returns at
  /// once; the plan's wait() completes it. InvalidArgument as run(), and for
  /// a second start of the member before its wait.
  void start();

 private:
  friend class ExchangePlan;
  ExchangeRun run_uncompiled();  ///< run() of a plan that does not run compiled, or of an empty binding
  CompiledBinding copies_;  ///< a compiled plan's member: the runtime's binding, which holds the lists
  const detail::ExchangePlanData* plan_ = nullptr;  ///< nullptr: empty
  Communicator comm_;  ///< the caller's communicator (not compiled: runs go through the plan)
  std::vector<std::span<const std::byte>> send_;  ///< not compiled: the bound lists
  std::vector<std::span<std::byte>> recv_;  ///< see send_
};

/// A persistent personalized exchange (see the file's description): made once, run many times.
class ExchangePlan {
 public:
  /// From the whole pattern: every process's part. Throws InvalidArgument for
  /// an unknown scheduler. Schedules are validated.
  explicit ExchangePlan(const CommMatrix& m, ExchangePlanOptions options = {});
  /// The same with default options but the scheduler.
  ExchangePlan(const CommMatrix& m, SchedulerName scheduler);
  /// Collective over comm: each member passes its own sends (destination and
  /// bytes, in any order, each destination once). The returned plan holds only
  /// this member's part, its sends sorted by destination (sends(rank): run()'s
  /// send buffers follow that order), and runs only on a communicator of the
  /// same members.
  static Task<ExchangePlan> create(const Communicator& comm, std::span<const MatrixEntry> sends,
                                   ExchangePlanOptions options = {});
  /// The same with default options but the scheduler.
  static Task<ExchangePlan> create(const Communicator& comm, std::span<const MatrixEntry> sends,
                                   SchedulerName scheduler);
  /// From the whole pattern and a schedule made elsewhere (redistribution's
  /// tables). The schedule must carry every byte of m exactly once; unlike the
  /// static schedulers' it may have contention (a process receiving several
  /// transfers in one phase, as a naive schedule does). options().scheduler
  /// becomes the schedule's name.
  /// (A named function, not a constructor beside the options' one.)
  static ExchangePlan from_schedule(const CommMatrix& m, Schedule schedule, ExchangePlanOptions options = {});

  ~ExchangePlan();
  /// Takes the plan over; the moved-from one may only be destroyed or assigned to.
  ExchangePlan(ExchangePlan&&) noexcept;
  /// Takes the plan over; the moved-from one may only be destroyed or assigned to.
  ExchangePlan& operator=(ExchangePlan&&) noexcept;

  Rank processes() const noexcept;  ///< the pattern's processes (for create(): the communicator's members)
  /// As made: for "auto", scheduler names the one chosen and chosen_by_auto is set.
  const ExchangePlanOptions& options() const noexcept;
  bool is_static() const noexcept;  ///< a phased schedule runs it (not "ac" or "drsn")
  /// The schedule (static schedulers, plans made from the whole pattern), else nullptr.
  const Schedule* schedule() const noexcept;
  std::uint64_t phases() const noexcept;  ///< static: phases of the schedule; 0 otherwise
  double schedule_ms() const noexcept;  ///< time spent making the schedule
  /// Process r's messages: destinations (sources) and sizes, sorted by peer.
  /// For a plan from create(), only the member's own r is available.
  std::span<const MatrixEntry> sends(Rank r) const;
  std::span<const MatrixEntry> receives(Rank r) const;  ///< see sends

  /// Runs comm.rank()'s part: send[i] is the message to sends(rank)[i].peer, of
  /// exactly sends(rank)[i].bytes; recv[j] receives the message from
  /// receives(rank)[j].peer, exactly receives(rank)[j].bytes long.
  ExchangeRun run(const Communicator& comm, std::span<const std::span<const std::byte>> send,
                  std::span<const std::span<std::byte>> recv) const;
  /// MPI_Alltoallv form: one buffer each way; the message to (from) peer q
  /// starts at send_displacements[q] (recv_displacements[q]), both indexed by
  /// rank and comm.size() long; counts are the plan's.
  ExchangeRun run(const Communicator& comm, std::span<const std::byte> send_buffer,
                  std::span<const std::uint64_t> send_displacements, std::span<std::byte> recv_buffer,
                  std::span<const std::uint64_t> recv_displacements) const;
  /// With hooks that reach each message's bytes, or describe where they lie (exchange_hooks.hpp).
  ExchangeRun run(const Communicator& comm, ExchangeHooks& hooks) const;
  /// Binds comm.rank()'s buffers, as run() takes them, for the runs of this
  /// job (BoundExchange): their counts and sizes are checked here, once.
  BoundExchange bind(const Communicator& comm, std::span<const std::span<const std::byte>> send,
                     std::span<const std::span<std::byte>> recv) const;

  /// Split phase (see the file's description): starts comm.rank()'s run on
  /// these buffers (as run() takes them) and returns at once; wait()
  /// completes it. The buffers and the span lists stay the exchange's until
  /// then. InvalidArgument for a second start before the wait, and for what
  /// run() refuses.
  void start(const Communicator& comm, std::span<const std::span<const std::byte>> send,
             std::span<const std::span<std::byte>> recv) const;
  /// Split phase, the MPI_Alltoallv form (a recorded run: its wait makes it).
  void start(const Communicator& comm, std::span<const std::byte> send_buffer,
             std::span<const std::uint64_t> send_displacements, std::span<std::byte> recv_buffer,
             std::span<const std::uint64_t> recv_displacements) const;
  /// Split phase with hooks, which must stay alive until the wait.
  void start(const Communicator& comm, ExchangeHooks& hooks) const;
  /// Completes comm.rank()'s started run: to co_await at once. InvalidArgument
  /// without a start.
  ExchangeRun wait(const Communicator& comm) const;
  /// What start() refuses first, alone: where comm.rank() has a started run
  /// not yet handed to its wait, the job's cores stop reading and writing its
  /// buffers, then InvalidArgument names `call` and the rank; else nothing.
  /// For a caller (a halo) that must refuse a second start before it touches
  /// what the first run reads (its packing buffer, its span lists, its hooks).
  void refuse_second_start(const Communicator& comm, const char* call) const;

 private:
  explicit ExchangePlan(std::unique_ptr<detail::ExchangePlanData> data);
  /// create() with the communicator copied into the coroutine's frame.
  static Task<ExchangePlan> create_on(Communicator comm, std::span<const MatrixEntry> sends,
                                      ExchangePlanOptions options);
  std::unique_ptr<detail::ExchangePlanData> data_;
};

}  // namespace switchyard::schedulers
