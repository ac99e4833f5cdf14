#pragma once
// HaloExchange<T>: the ghost exchange of a distributed sparse matrix, as
// PETSc's PetscSF (SFBcast, SFReduce) and Trilinos' Tpetra::Import/Export give
// it, on switchyard's exchange plans. Each process owns some entries of a
// vector (its rows' entries, for y = A x with A square) and needs others
// (the columns its rows touch): its ghosts.
//
//   // Once, from the matrix and its rows' partition: every process's part.
//   const auto rows = RowPartition::blocks(a.rows, p);
//   const HaloExchange<double> halo(a, rows);            // optimal's schedule
//   rt.run(p, [&](Process& proc) -> Task<void> {
//     const HaloMap& mine = halo.map(proc.rank());
//     const CsrMatrix<double> local = halo.local_rows(a, proc.rank());  // columns in local numbering
//     std::vector<double> x(mine.local_size());                         // owned, then ghosts
//     ... x's owned entries ...
//     const std::span<double> owned = std::span(x).first(mine.owned.size());
//     co_await halo.forward(proc, owned, std::span(x).subspan(owned.size()));   // SFBcast: ghosts <- owners
//     ... y = local * x ...
//     co_await halo.reverse(proc, ghost_sums, owned_y, std::plus<>{});          // SFReduce: owners op= ghosts
//   });
//
//   // Or collectively inside a job, each process knowing only the global
//   // indices it owns and those it needs:
//   HaloExchange<double> mine = co_await HaloExchange<double>::create(proc, owned, needed, options);
//
// T is any trivially copyable type; the plans move sizeof(T) bytes per
// entry. forward and reverse each run one ExchangePlan (made with `options`:
// the scheduler, ...) on the caller's spans: what a process receives from an
// owner lands straight in its ghosts; what it sends to a neighbour goes
// straight from `owned` where those entries are one run of it (forward: a
// row block's first or last rows, as a banded matrix has them), else is
// packed into a buffer of its own, made with the halo (a call stores only the
// entries whose bytes changed since the one before), so a run allocates
// nothing once its process has run a plan (exchange_plan.hpp). forward binds
// its plan to those sends and the caller's ghosts (ExchangePlan::bind: its
// runs check and publish nothing) where owned and ghosts are where the call
// before had them: once per job for arrays that stay put (making it
// allocates, once per job and per move). reverse combines, per owned entry, the
// contributions of the processes that hold it as a ghost in rank order, the
// same order every run: the result is reproducible bit for bit.
//
// Split phase: start_forward packs and starts the forward plan's run
// (ExchangePlan::start), the process computes (its interior: what needs no
// ghost), then co_awaits wait_forward and computes the rest:
//
//   halo.start_forward(proc, owned, ghosts);   // never suspends
//   ... the rows that read owned entries alone ...
//   co_await halo.wait_forward(proc);          // the ghosts are in
//   ... the rows that read ghosts ...
//
// `owned` is packed by the start, so the process may write it again at
// once; `ghosts` are the exchange's until the wait (not to be read). As
// much for reverse: start_reverse(ghosts, owned) starts it, the process may
// use `owned` meanwhile and must not write `ghosts`; wait_reverse(op) moves
// the last bytes and adds them into `owned`. A compiled run (the plans'
// default) publishes at the start, so the neighbours copy while the process
// computes; other executions run at the wait (ExchangePlan::start says
// which). Misuse is refused as the plans refuse it: an InvalidArgument for a
// second start before the wait (before the start touches anything the first
// run reads; the other cores stop first, ExchangePlan::refuse_second_start) or
// a wait without a start.
//
// One process's runs of one halo follow each other (its buffer is its own:
// a forward and a reverse are not in flight at once); processes run theirs
// at once. Every member runs the same sequence of
// forwards and reverses, as with MPI collectives.

#include <algorithm>
#include <coroutine>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/halo/csr_matrix.hpp"
#include "switchyard/halo/halo_map.hpp"
#include "switchyard/halo/row_partition.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/task.hpp"

namespace switchyard::halo {

/// The pattern of a matrix: where its rows' entries are, not what they hold.
struct SparsityPattern {
  /// The number of rows.
  std::uint64_t rows = 0, columns = 0;  ///< the number of columns
  std::span<const std::uint64_t> row_start;  ///< row i's entries are [row_start[i], row_start[i + 1]) of column
  std::span<const ColumnIndex> column;  ///< each entry's column, row after row
};
/// The pattern of `a`; it refers to a's arrays, which must outlive it.
template <class V>
SparsityPattern pattern_of(const CsrMatrix<V>& a) {
  return {a.rows, a.columns, a.row_start, a.column};
}

/// Every part's map: part p owns the entries of its rows and needs every
/// column of its rows that another part owns. The matrix must be square.
std::vector<HaloMap> halo_maps(const SparsityPattern& a, const RowPartition& rows);
/// The forward exchange's messages: (owner, needer) carries element_bytes per
/// entry (the reverse exchange's are its transpose).
schedulers::CommMatrix halo_matrix(std::span<const HaloMap> maps, std::uint64_t element_bytes);
/// This member's map, collectively over comm: it owns `owned` (its local
/// order) and needs `needed` (in any order; repeats and its own indices are
/// left out). Every global index is owned by one member at most, and every
/// needed one by some member: else InvalidArgument, naming the index and ranks.
Task<HaloMap> halo_map_create(const Communicator& comm, std::span<const GlobalIndex> owned,
                              std::span<const GlobalIndex> needed);

template <class T>
/// The ghost exchange of a distributed sparse matrix, entries of type T (see the file's description).
class HaloExchange {
  static_assert(std::is_trivially_copyable_v<T>, "a halo moves trivially copyable entries");

 public:
  /// Every part's exchange, shared by all the processes of a job of
  /// rows.parts() processes (like an ExchangePlan from a CommMatrix).
  template <class V>
  HaloExchange(const CsrMatrix<V>& a, const RowPartition& rows, schedulers::ExchangePlanOptions options = {})
      : HaloExchange(pattern_of(a), rows, std::move(options)) {}
  /// Every part's exchange from the matrix's pattern alone (see the constructor above).
  HaloExchange(const SparsityPattern& a, const RowPartition& rows, schedulers::ExchangePlanOptions options = {})
      : first_(0) {
    std::vector<HaloMap> maps = halo_maps(a, rows);
    const schedulers::CommMatrix forward = halo_matrix(maps, sizeof(T));
    forward_ = std::make_unique<schedulers::ExchangePlan>(forward, options);
    reverse_ = std::make_unique<schedulers::ExchangePlan>(transpose(forward), std::move(options));
    for (HaloMap& m : maps) parts_.push_back(std::make_unique<Part>(std::move(m)));
  }
  /// Collective over comm, inside a job: this member's part alone, from what
  /// it owns and needs (halo_map_create). No default argument for the options:
  /// GCC 12 corrupts a temporary with a std::string made in a co_await
  /// expression, as `co_await create(p, owned, needed)` would make one.
  static Task<HaloExchange> create(const Communicator& comm, std::span<const GlobalIndex> owned,
                                   std::span<const GlobalIndex> needed, schedulers::ExchangePlanOptions options) {
    return create_on(comm, owned, needed, std::move(options));
  }
  /// As above, with the default ExchangePlanOptions.
  static Task<HaloExchange> create(const Communicator& comm, std::span<const GlobalIndex> owned,
                                   std::span<const GlobalIndex> needed) {
    return create_on(comm, owned, needed, schedulers::ExchangePlanOptions{});
  }

  HaloExchange(HaloExchange&&) noexcept = default;  ///< takes over the other halo's plans and parts
  HaloExchange& operator=(HaloExchange&&) noexcept = default;  ///< takes over the other halo's plans and parts

  Rank processes() const noexcept { return forward_->processes(); }  ///< the job's processes (the plans')
  /// Process r's maps; a halo from create() has its own member's only.
  const HaloMap& map(Rank r) const { return part(r).map; }
  const schedulers::ExchangePlan& forward_plan() const noexcept { return *forward_; }  ///< the plan forward() runs
  /// The plan reverse() runs: forward's transposed.
  const schedulers::ExchangePlan& reverse_plan() const noexcept { return *reverse_; }

  /// Process r's rows of `a` (a matrix of its pattern), its columns in r's
  /// local numbering: y's owned entries = local_rows * (owned, then ghosts).
  /// Each row keeps a's order of entries, so that a product sums in the same
  /// order as the global one and gives the same bits.
  template <class V>
  CsrMatrix<V> local_rows(const CsrMatrix<V>& a, Rank r) const;

  /// Like SFBcast: every ghost gets its owner's entry. owned and ghosts are
  /// comm.rank()'s, map().owned.size() and map().ghosts.size() long. The call
  /// checks the spans and packs what `owned` sends in pieces that are not one
  /// run of it; awaiting what it returns, the forward plan's run (no coroutine
  /// frame of its own), moves it: until then `owned` is read by the run and
  /// `ghosts` written (neither to be written by the process).
  /// InvalidArgument while a start_forward of the process awaits its wait.
  schedulers::ExchangeRun forward(const Communicator& comm, std::span<const T> owned, std::span<T> ghosts) const;
  template <class Op>
  class ReverseRun;
  /// Like SFReduce: owned[i] = op(owned[i], ghost) for every ghost copy of
  /// owned entry i held elsewhere, in the holders' rank order; op(T, T) -> T.
  /// The call checks the spans; awaiting what it returns moves the ghosts and
  /// adds them in.
  template <class Op>
  ReverseRun<Op> reverse(const Communicator& comm, std::span<const T> ghosts, std::span<T> owned, Op op) const;

  /// Split phase of forward (see the file's description): checks the spans,
  /// packs `owned` and starts the run; `ghosts` are the exchange's until
  /// wait_forward. InvalidArgument as forward, or for a second start before the wait.
  void start_forward(const Communicator& comm, std::span<const T> owned, std::span<T> ghosts) const;
  /// Completes comm.rank()'s started forward: to co_await at once. InvalidArgument without a start.
  schedulers::ExchangeRun wait_forward(const Communicator& comm) const;
  /// Split phase of reverse: checks the spans and starts the run on
  /// `ghosts`, which the process must not write until wait_reverse; `owned`
  /// is the process's own until then, and gets the sums in wait_reverse.
  void start_reverse(const Communicator& comm, std::span<const T> ghosts, std::span<T> owned) const;
  /// Completes comm.rank()'s started reverse and adds into the `owned` its
  /// start named, with op: to co_await at once. InvalidArgument without a start.
  template <class Op>
  ReverseRun<Op> wait_reverse(const Communicator& comm, Op op) const;

 private:
  /// A process's map and its scratch: one entry per value it sends (forward)
  /// or receives (reverse), and the spans plan.run takes, cut once.
  struct Part {
    explicit Part(HaloMap m) : map(std::move(m)), packed(map.sent.size()) {
      for (std::size_t d = 0; d < map.destinations.size(); ++d) {
        const std::uint64_t first = map.destination_start[d], last = map.destination_start[d + 1];
        const auto slice = std::span(packed).subspan(first, last - first);
        packed_out.push_back(std::as_bytes(slice));
        packed_in.push_back(std::as_writable_bytes(slice));
        bool run = true;
        for (std::uint64_t k = first + 1; k < last; ++k) run = run && map.sent[k] == map.sent[k - 1] + 1;
        if (!run) forward_packs.push_back({first, last});
        forward_packed.push_back(run ? 0 : 1);
      }
      forward_out.resize(map.destinations.size());
      ghosts_in.resize(map.sources.size());
      ghosts_out.resize(map.sources.size());
    }
    HaloMap map;
    std::vector<T> packed;
    std::span<T> reverse_owned;  ///< a started reverse's owned entries, for its wait
    bool forward_started = false;  ///< start_forward ran and its wait has not (or its job failed between)
    /// forward's plan bound to packed_out and the ghosts at bound_ghosts for
    /// the runs of bound_comm (ExchangePlan::bind), made where a call finds
    /// the ghosts where the call before had them (see forward()).
    schedulers::BoundExchange bound;
    Communicator bound_comm;  ///< the binding's communicator (its job: valid() says whether it runs)
    const T* bound_ghosts = nullptr;  ///< where the bound ghosts are
    const T* last_ghosts = nullptr;  ///< where the last forward's ghosts were
    const T* bound_owned = nullptr;  ///< where the bound owned entries are
    const T* last_owned = nullptr;  ///< where the last forward's owned entries were
    /// start_forward's binding: the plan bound to packed_out and the ghosts at
    /// split_ghosts for the runs of split_comm, made as `bound` is (see
    /// start_bound_forward).
    schedulers::BoundExchange split_bound;
    Communicator split_comm;  ///< the split binding's communicator
    const T* split_ghosts = nullptr;  ///< where the split binding's ghosts are
    const T* last_split_ghosts = nullptr;  ///< where the last start's ghosts were
    /// forward's sends: a destination's run of owned entries where its sent
    /// entries are one (no packing: the plan copies from `owned`), else its
    /// stretch of `packed`.
    std::vector<std::span<const std::byte>> forward_out;
    /// The stretches [first, last) of packed (and of map.sent) that forward
    /// packs: its destinations whose sent entries are not one run.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> forward_packs;
    std::vector<std::uint8_t> forward_packed;  ///< per destination: 1 where forward packs it

    std::vector<std::span<const std::byte>> packed_out, ghosts_out;
    std::vector<std::span<std::byte>> packed_in, ghosts_in;
  };

  HaloExchange() = default;
  static schedulers::CommMatrix transpose(const schedulers::CommMatrix& m) {
    schedulers::CommMatrix t(m.size());
    for (Rank src = 0; src < m.size(); ++src) {
      for (const schedulers::MatrixEntry& e : m.row(src)) t.set(e.peer, src, e.bytes);
    }
    return t;
  }
  /// The shortest run of owned entries pack_forward compares and copies whole.
  static constexpr std::size_t kWholeRunBytes = 128;
  /// The packing and unpacking loops, in functions of their own, never
  /// inlined: inside a coroutine the compiler keeps a loop's index in the
  /// frame and stores it there on every iteration, and inlined into the
  /// caller's coroutine (forward() is) it reloads its pointers from the stack.
  [[gnu::noinline]] static void pack_forward(Part& p, std::span<const T> owned, bool every_destination);
  static void point_forward(Part& p, std::span<T> ghosts);
  static void point_sends(Part& p, std::span<const T> owned);
  static schedulers::ExchangeRun bound_forward(const schedulers::ExchangePlan& plan, Part& p, const Communicator& comm,
                                               std::span<const T> owned, std::span<T> ghosts);
  static void start_bound_forward(const schedulers::ExchangePlan& plan, Part& p, const Communicator& comm,
                                  std::span<T> ghosts);
  /// A forward, whole or started, while a start of the process awaits its
  /// wait: refused before any packing the first run reads (the other cores
  /// stop first), unless that start's job failed since, which leaves the
  /// flag stale: cleared then.
  void refuse_pending_forward(Part& p, const Communicator& comm, const char* call) const {
    if (!p.forward_started) [[likely]]
      return;
    forward_->refuse_second_start(comm, call);
    p.forward_started = false;
  }
  /// Whether a binding's communicator `kept` is `comm` in the running job (a
  /// communicator of an ended job may compare equal to a new one).
  static bool same_running(const Communicator& kept, const Communicator& comm) noexcept {
    return kept.valid() && kept == comm && kept.job() == comm.job();
  }
  static void point_reverse(Part& p, std::span<const T> ghosts);
  template <class Op>
  [[gnu::noinline]] static void unpack_reverse(const Part& p, std::span<T> owned, Op& op);
  static Task<HaloExchange> create_on(Communicator comm, std::span<const GlobalIndex> owned,
                                      std::span<const GlobalIndex> needed, schedulers::ExchangePlanOptions options);
  Part& part(Rank r) const {
    if (r < first_ || r - first_ >= parts_.size()) {
      throw InvalidArgument("switchyard: HaloExchange: rank " + std::to_string(r) +
                            (parts_.size() == 1
                                 ? " is not the member this halo was created by (rank " + std::to_string(first_) + ")"
                                 : " is beyond its " + std::to_string(parts_.size()) + " processes"));
    }
    return *parts_[r - first_];
  }
  /// comm.rank()'s part, once the spans' lengths are its map's.
  Part& checked_part(const Communicator& comm, const char* call, std::size_t owned, std::size_t ghosts) const {
    Part& p = part(comm.rank());
    if (owned != p.map.owned.size() || ghosts != p.map.ghosts.size()) {
      throw InvalidArgument("switchyard: HaloExchange::" + std::string(call) + " on rank " +
                            std::to_string(comm.rank()) + ": " + std::to_string(owned) + " owned and " +
                            std::to_string(ghosts) + " ghost entries given, its map has " +
                            std::to_string(p.map.owned.size()) + " and " + std::to_string(p.map.ghosts.size()));
    }
    return p;
  }
  /// The stretch of `ghosts` that source s fills (forward) or is sent (reverse).
  template <class Span>
  static Span from_source(const HaloMap& m, Span ghosts, std::size_t s) {
    return ghosts.subspan(m.source_start[s], m.source_start[s + 1] - m.source_start[s]);
  }

  Rank first_ = 0;  ///< the rank of parts_[0]
  /// unique_ptr: a Part's spans point into its own buffer, which must not move.
  std::vector<std::unique_ptr<Part>> parts_;
  /// Their compiled runs' keys: each node's own for plans from the whole
  /// pattern, rank 0's node and count for plans from create()
  /// (plan_keys.cpp, local_compiled_key and shared_compiled_key).
  std::unique_ptr<schedulers::ExchangePlan> forward_, reverse_;
};

/// What reverse() returns: the reverse plan's run, and then, as its awaiting
/// ends, the sums into the owned entries. Awaited once, where it is made.
template <class T>
template <class Op>
class [[nodiscard]] HaloExchange<T>::ReverseRun {
 public:
  /// The reverse plan's run of `part`'s ghosts, to add into `owned` with `op`.
  ReverseRun(schedulers::ExchangeRun run, const Part& part, std::span<T> owned, Op op)
      : run_(std::move(run)), part_(&part), owned_(owned), op_(std::move(op)) {}
  bool await_ready() { return run_.await_ready(); }  ///< whether the reverse exchange has completed already
  /// Waits for the reverse exchange.
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) { return run_.await_suspend(awaiter); }
  void await_resume() {  ///< completes the exchange, then adds the received ghosts into the owned entries
    run_.await_resume();
    unpack_reverse(*part_, owned_, op_);
  }

 private:
  schedulers::ExchangeRun run_;
  const Part* part_;
  std::span<T> owned_;
  Op op_;
};

template <class T>
Task<HaloExchange<T>> HaloExchange<T>::create_on(Communicator comm, std::span<const GlobalIndex> owned,
                                                 std::span<const GlobalIndex> needed,
                                                 schedulers::ExchangePlanOptions options) {
  HaloMap m = co_await halo_map_create(comm, owned, needed);
  std::vector<schedulers::MatrixEntry> to_needers, to_owners;
  for (std::size_t d = 0; d < m.destinations.size(); ++d) {
    to_needers.push_back({m.destinations[d], (m.destination_start[d + 1] - m.destination_start[d]) * sizeof(T)});
  }
  for (std::size_t s = 0; s < m.sources.size(); ++s) {
    to_owners.push_back({m.sources[s], (m.source_start[s + 1] - m.source_start[s]) * sizeof(T)});
  }
  HaloExchange h;
  h.first_ = comm.rank();
  h.forward_ =
      std::make_unique<schedulers::ExchangePlan>(co_await schedulers::ExchangePlan::create(comm, to_needers, options));
  h.reverse_ =
      std::make_unique<schedulers::ExchangePlan>(co_await schedulers::ExchangePlan::create(comm, to_owners, options));
  h.parts_.push_back(std::make_unique<Part>(std::move(m)));
  co_return h;
}

template <class T>
template <class V>
CsrMatrix<V> HaloExchange<T>::local_rows(const CsrMatrix<V>& a, Rank r) const {
  const HaloMap& m = map(r);
  CsrMatrix<V> local;
  local.rows = m.owned.size();
  local.columns = m.local_size();
  for (const GlobalIndex i : m.owned) {
    for (std::uint64_t k = a.row_start.at(i); k < a.row_start.at(i + 1); ++k) {
      const std::uint64_t j = m.local_index(a.column[k]);
      if (j == HaloMap::kNotLocal) {
        throw InvalidArgument("switchyard: HaloExchange::local_rows: column " + std::to_string(a.column[k]) +
                              " of row " + std::to_string(i) + " is not in rank " + std::to_string(r) +
                              "'s halo (a matrix of another pattern)");
      }
      local.column.push_back(static_cast<ColumnIndex>(j));
      local.value.push_back(a.value[k]);
    }
    local.row_start.push_back(local.column.size());
  }
  return local;
}

/// The plans' runs keep their own copy of the communicator: a caller's
/// temporary (a Process converted on the way in) may be gone by the time the
/// run is awaited.
template <class T>
schedulers::ExchangeRun HaloExchange<T>::forward(const Communicator& comm, std::span<const T> owned,
                                                 std::span<T> ghosts) const {
  Part& p = checked_part(comm, "forward", owned.size(), ghosts.size());
  refuse_pending_forward(p, comm, "HaloExchange::forward");
  pack_forward(p, owned, false);
  return bound_forward(*forward_, p, comm, owned, ghosts);
}

/// The forward run on the binding where owned and ghosts are the bound ones
/// (the plan checks and publishes nothing then), else unbound. A binding is
/// made (it allocates) where they are where the last call had them: once per
/// job for arrays that stay put, never for arrays that alternate.
template <class T>
schedulers::ExchangeRun HaloExchange<T>::bound_forward(const schedulers::ExchangePlan& plan, Part& p,
                                                       const Communicator& comm, std::span<const T> owned,
                                                       std::span<T> ghosts) {
  // Stored only where they moved: a call on the same buffers writes nothing
  // of the part's.
  const bool ghosts_stayed = p.last_ghosts == ghosts.data(), owned_stayed = p.last_owned == owned.data();
  if (!ghosts_stayed) p.last_ghosts = ghosts.data();
  if (!owned_stayed) p.last_owned = owned.data();
  // The same communicator of the running job: no call out of line.
  const bool current =
      p.bound_ghosts == ghosts.data() && p.bound_owned == owned.data() && same_running(p.bound_comm, comm);
  if (current) return p.bound.run();
  point_forward(p, ghosts);
  point_sends(p, owned);
  if (!ghosts_stayed || !owned_stayed) return plan.run(comm, p.forward_out, p.ghosts_in);
  p.bound = plan.bind(comm, p.forward_out, p.ghosts_in);
  p.bound_comm = comm;
  p.bound_ghosts = ghosts.data();
  p.bound_owned = owned.data();
  return p.bound.run();
}

/// Checks the spans, points the run at comm.rank()'s ghosts, and starts the reverse plan's run.
template <class T>
template <class Op>
typename HaloExchange<T>::template ReverseRun<Op> HaloExchange<T>::reverse(const Communicator& comm,
                                                                           std::span<const T> ghosts,
                                                                           std::span<T> owned, Op op) const {
  Part& p = checked_part(comm, "reverse", owned.size(), ghosts.size());
  point_reverse(p, ghosts);
  return ReverseRun<Op>(reverse_->run(comm, p.ghosts_out, p.packed_in), p, owned, std::move(op));
}

template <class T>
void HaloExchange<T>::start_forward(const Communicator& comm, std::span<const T> owned, std::span<T> ghosts) const {
  Part& p = checked_part(comm, "start_forward", owned.size(), ghosts.size());
  refuse_pending_forward(p, comm, "HaloExchange::start_forward");
  pack_forward(p, owned, true);
  start_bound_forward(*forward_, p, comm, ghosts);
  p.forward_started = true;
}

/// The split forward's start from `packed` into the ghosts: on the split
/// binding where the ghosts are the bound ones (the plan checks and
/// publishes nothing then), else unbound; bound (it allocates, once) where
/// they are where the last start had them, as bound_forward does.
template <class T>
void HaloExchange<T>::start_bound_forward(const schedulers::ExchangePlan& plan, Part& p, const Communicator& comm,
                                          std::span<T> ghosts) {
  const bool stayed = p.last_split_ghosts == ghosts.data();
  if (!stayed) p.last_split_ghosts = ghosts.data();
  if (p.split_ghosts == ghosts.data() && same_running(p.split_comm, comm)) return p.split_bound.start();
  point_forward(p, ghosts);
  if (!stayed) return plan.start(comm, p.packed_out, p.ghosts_in);
  p.split_bound = plan.bind(comm, p.packed_out, p.ghosts_in);
  p.split_comm = comm;
  p.split_ghosts = ghosts.data();
  p.split_bound.start();
}

template <class T>
schedulers::ExchangeRun HaloExchange<T>::wait_forward(const Communicator& comm) const {
  schedulers::ExchangeRun run = forward_->wait(comm);  // checks that a start came first
  part(comm.rank()).forward_started = false;
  return run;
}

template <class T>
void HaloExchange<T>::start_reverse(const Communicator& comm, std::span<const T> ghosts, std::span<T> owned) const {
  Part& p = checked_part(comm, "start_reverse", owned.size(), ghosts.size());
  reverse_->refuse_second_start(comm, "HaloExchange::start_reverse");  // before the lists the first run reads
  point_reverse(p, ghosts);
  reverse_->start(comm, p.ghosts_out, p.packed_in);
  p.reverse_owned = owned;
}

/// Takes the started reverse's run, to add into the owned entries its start named.
template <class T>
template <class Op>
typename HaloExchange<T>::template ReverseRun<Op> HaloExchange<T>::wait_reverse(const Communicator& comm, Op op) const {
  schedulers::ExchangeRun run = reverse_->wait(comm);  // checks that a start came first
  const Part& p = part(comm.rank());
  return ReverseRun<Op>(std::move(run), p, p.reverse_owned, std::move(op));
}

/// Stores an entry only where its bytes differ from what `packed` holds
/// (bytes, not T's ==: 0.0 and -0.0 compare equal, a NaN unequal to itself).
/// The cores that copy out of `packed` (another core's, for most messages)
/// keep its lines shared in their caches across calls whose values stayed,
/// instead of losing them to this core's stores and missing on them in every
/// run (at lund_a's 16 blocks, a good part of what forward cost beyond its
/// plan's run on buffers packed once: bench_halo). A call whose values all
/// changed stores what it stored before, after one compare each.
template <class T>
void HaloExchange<T>::pack_forward(Part& p, std::span<const T> owned, bool every_destination) {
  T* out = p.packed.data();
  const T* in = owned.data();
  const auto* sent = p.map.sent.data();
  const auto gather = [&](std::uint64_t first, std::uint64_t last) {
    for (std::uint64_t k = first; k < last; ++k) {
      if (std::memcmp(&out[k], &in[sent[k]], sizeof(T)) != 0) std::memcpy(&out[k], &in[sent[k]], sizeof(T));
    }
  };
  if (!every_destination) {
    for (const auto& [first, last] : p.forward_packs) gather(first, last);
    return;
  }
  // The split phase packs the runs too: each of kWholeRunBytes or more with
  // one compare and one copy (bitwise, and only where it changed, as the
  // gather), not entry by entry; shorter ones (a row block of lund_a sends
  // runs of one to a few entries) entry by entry, inline, rather than
  // through two calls.
  for (std::size_t d = 0; d < p.forward_packed.size(); ++d) {
    const std::uint64_t first = p.map.destination_start[d], last = p.map.destination_start[d + 1];
    const std::size_t bytes = (last - first) * sizeof(T);
    if (p.forward_packed[d] || bytes < kWholeRunBytes) {
      gather(first, last);
    } else if (std::memcmp(out + first, in + sent[first], bytes) != 0) {
      std::memcpy(out + first, in + sent[first], bytes);
    }
  }
}

template <class T>
void HaloExchange<T>::point_sends(Part& p, std::span<const T> owned) {
  for (std::size_t d = 0; d < p.map.destinations.size(); ++d) {
    const std::uint64_t first = p.map.destination_start[d], last = p.map.destination_start[d + 1];
    p.forward_out[d] = p.forward_packed[d] != 0
                           ? p.packed_out[d]
                           : std::as_bytes(owned.subspan(first == last ? 0 : p.map.sent[first], last - first));
  }
}

template <class T>
void HaloExchange<T>::point_forward(Part& p, std::span<T> ghosts) {
  for (std::size_t s = 0; s < p.map.sources.size(); ++s)
    p.ghosts_in[s] = std::as_writable_bytes(from_source(p.map, ghosts, s));
}

template <class T>
void HaloExchange<T>::point_reverse(Part& p, std::span<const T> ghosts) {
  for (std::size_t s = 0; s < p.map.sources.size(); ++s) p.ghosts_out[s] = std::as_bytes(from_source(p.map, ghosts, s));
}

template <class T>
template <class Op>
void HaloExchange<T>::unpack_reverse(const Part& p, std::span<T> owned, Op& op) {
  for (std::size_t k = 0; k < p.packed.size(); ++k) owned[p.map.sent[k]] = op(owned[p.map.sent[k]], p.packed[k]);
}

}  // namespace switchyard::halo
