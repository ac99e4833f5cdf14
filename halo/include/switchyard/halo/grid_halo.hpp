#pragma once
// GridHalo<T>: the ghost exchange of a structured grid, as PETSc's DMDA and
// MPI's Cartesian topologies with subarray types give it. A 1-, 2- or 3-D
// array of global extents is cut into blocks on a process grid (MPI's block
// distribution: the first extent % processes blocks of a dimension are one
// longer); each process keeps its block plus a ghost layer of width g[d] on
// every side, in one row-major array of its own (the last dimension fastest).
//
//   GridShape shape;                       // 512 x 512, 2 x 4 blocks, ghosts 1 deep
//   shape.dims = 2;
//   shape.extents = {512, 512};
//   shape.processes = {0, 0};              // 0: chosen like MPI_Dims_create
//   const GridHalo<double> halo(shape, 8); // once, for a job of 8 processes
//   rt.run(8, [&](Process& p) -> Task<void> {
//     std::vector<double> a(halo.local_elements(p.rank()));  // block and ghosts
//     ... a's interior: halo.block(p.rank()).first + i ...
//     co_await halo.forward(p, a);                       // ghosts <- the neighbours' interiors
//     co_await halo.reverse(p, a, std::plus<>{});        // interiors op= the neighbours' ghosts
//   });
//
// Neighbours. With `corners` false a process exchanges its faces only (the
// 2d neighbours of a star stencil: the 5- and 7-point ones); with true also
// its edges and corners (3^d - 1 neighbours, a box stencil). Every ghost box
// comes from one neighbour's interior in one message, never through another
// neighbour's ghosts: one exchange, no ordering between dimensions. A
// periodic dimension wraps; in one that is not, the ghosts beyond the global
// array are left alone (the boundary condition is the caller's). A
// neighbour that is the process itself (one process across a periodic
// dimension) is a local copy.
//
// How the bytes move. forward and reverse each run one ExchangePlan from the
// whole pattern (made with `options`), with hooks that describe every
// message as strided runs of the arrays (exchange_hooks.hpp). A compiled run
// on one node copies each ghost box row by row straight from the
// neighbour's array into the process's: no packing. Where a run goes
// through buffers (ExchangeExecution::messages, a communicator across MPI
// nodes, every node holding the same plan) the hooks pack before a send and
// unpack after a receive into scratch of the process's own, made on its
// first such run. reverse receives the neighbours' ghost boxes into scratch
// (described as the receive region, so it is still one copy per byte), then
// adds them into the interior with op, per element in the order of the
// sending ranks and, from one rank, of the directions: the same order every
// run, so the result is reproducible bit for bit.
//
// Made once, outside the job, from the shape alone: every process would
// compute the same decomposition, with nothing to gather, so there is no
// collective create() (as HaloExchange has). The processes of a node share
// the one object (a compiled run that copies between arrays needs the plan
// from the whole pattern, exchange_plan.hpp); in an MPI job each node makes
// the same one, and runs between nodes go through the packing path above.
//
// Split phase (start_forward, then wait_forward): a stencil starts the
// exchange, sweeps the points that read no ghost, waits, then sweeps the
// rest; the array is the exchange's meanwhile as ExchangePlan::start says
// (its boundary layers not written, its ghosts not read):
//
//   halo.start_forward(p, a);         // never suspends
//   ... b's interior from a's interior ...
//   co_await halo.wait_forward(p);    // a's ghosts are in
//   ... b's boundary layers from a ...
//
// Compiled on one node, from the second run on, the neighbours copy out of
// the array while the process sweeps; a first run, and runs on messages or
// across nodes, are made at the wait. A second start before the wait (or a
// forward or a reverse then), or a wait without a start, is an
// InvalidArgument; the other cores stop reading the array before it is thrown.
//
// A run allocates nothing once its process has run the halo before in the
// job (the plan's rule, exchange_plan.hpp). One process's runs of one halo
// follow each other, and one job at a time runs a halo (a process's scratch
// is the halo's: a rank that runs in two at once is an InvalidArgument);
// every member runs the same sequence of forwards and
// reverses, as with MPI collectives. Bad shapes and arrays of the wrong
// length are an InvalidArgument naming the dimension, the rank and the sizes.

#include <array>
#include <atomic>
#include <coroutine>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/task.hpp"

namespace switchyard::halo {

/// The decomposition: the first `dims` entries of each array count.
struct GridShape {
  int dims = 2;  ///< 1, 2 or 3
  std::array<std::uint64_t, 3> extents{};  ///< the global array's, every one >= its processes
  std::array<std::uint32_t, 3> processes{};  ///< the process grid's; 0: chosen (dims_create)
  std::array<std::uint32_t, 3> ghost{1, 1, 1};  ///< ghost width, <= every block's extent
  std::array<bool, 3> periodic{};  ///< per dimension: whether it wraps around
  bool corners = false;  ///< also edges and corners (see the file's description)
};

/// MPI_Dims_create: `fixed`'s zero entries among its first `dims` filled so
/// that the product is `processes` and the chosen entries are as close to
/// each other as they can be, in non-increasing order. InvalidArgument if the
/// fixed entries do not divide `processes`.
std::array<std::uint32_t, 3> dims_create(Rank processes, int dims, std::array<std::uint32_t, 3> fixed = {});

/// A process's block, in the user's dimensions (the first `dims` entries).
struct GridBlock {
  std::array<std::uint32_t, 3> coords{};  ///< in the process grid
  std::array<std::uint64_t, 3> first{};  ///< global index of its first interior element
  std::array<std::uint64_t, 3> size{};  ///< interior extents
  std::array<std::uint64_t, 3> local{};  ///< size + 2 ghost: its array's extents
};

namespace detail {

/// Elements of a process's array, internally always 3-D: a grid of fewer
/// dimensions has leading ones of extent 1, one process and no ghosts.
struct GridBox {
  std::array<std::uint64_t, 3> lo{}, size{};
  std::uint64_t elements() const noexcept { return size[0] * size[1] * size[2]; }
};

/// One ghost box: `to` in dst's array is filled from `from` in src's.
struct GridTransfer {
  Rank src = 0, dst = 0;
  GridBox from, to;
};

/// A process's side of the exchange: its transfers grouped by peer in
/// ascending order, as the plan's sends(r) and receives(r) are, each group
/// [start[k], start[k + 1]) of its list, and where each group lies in packed
/// scratch (element offsets).
struct GridSide {
  std::vector<const GridTransfer*> transfers;
  std::vector<std::uint32_t> start{0};
  std::vector<std::uint64_t> packed_start{0};
};

/// What a rank adds into its interior box `transfer->from` in reverse: the
/// ghost box `transfer->to` of transfer->dst, received packed at element
/// `packed_at` of its scratch, or its own (transfer->dst is the rank).
struct GridContribution {
  const GridTransfer* transfer = nullptr;
  std::uint64_t packed_at = 0;
};

struct GridRank {
  GridBlock block;
  std::array<std::uint64_t, 3> local{};  // padded to 3-D
  /// Forward's sends and receives with other processes; reverse's receives
  /// are forward's sends transposed (the same packed layout), its sends
  /// forward's receives.
  GridSide sends, recvs;
  std::vector<const GridTransfer*> own;  ///< src == dst == this rank
  /// reverse's additions, in the order of the forward receivers' ranks (this
  /// one among them), then of their directions.
  std::vector<GridContribution> reverse_in;
  std::uint64_t elements() const noexcept { return local[0] * local[1] * local[2]; }
};

/// The whole decomposition and its messages, for elements of element_bytes.
class GridPattern {
 public:
  GridPattern(const GridShape& shape, Rank processes, std::uint64_t element_bytes);
  GridPattern(const GridPattern&) = delete;
  GridPattern& operator=(const GridPattern&) = delete;

  /// The user's shape, its process grid chosen.
  const GridShape& shape() const noexcept { return user_; }
  Rank processes() const noexcept { return static_cast<Rank>(ranks_.size()); }
  const GridRank& rank(Rank r) const;
  /// The forward exchange's messages, or the reverse's: their transpose.
  schedulers::CommMatrix matrix(bool reverse) const;
  std::uint64_t element_bytes() const noexcept { return element_bytes_; }
  /// comm.rank()'s part, once `elements` is its array's length.
  const GridRank& checked(const Communicator& comm, const char* call, std::size_t elements) const;

 private:
  void decompose();
  void connect();
  void group_by_peer();
  GridShape user_, shape_;  ///< shape_: padded to 3-D, the user's dimensions last
  std::uint64_t element_bytes_;
  std::vector<GridTransfer> transfers_;  ///< sorted by (src, dst, direction)
  std::vector<GridRank> ranks_;
};

/// A process's scratch, made on first use, named after forward's sides:
/// `sends` is as long as its forward sends packed (forward's staging where a
/// run goes through buffers, reverse's receive area), `recvs` as its forward
/// receives (forward's receive staging, reverse's send staging).
struct GridScratch {
  std::unique_ptr<std::byte[]> sends, recvs;
  /// A split forward between its start and its wait (GridHalo::start_forward),
  /// touched by its process alone: whether one is in flight, its
  /// communicator (whose job a stale one tells apart), its array, and the
  /// hooks it runs with (made on the first start, aimed anew at each).
  bool split_started = false;
  Communicator split_comm;
  std::span<std::byte> split_array;
  std::unique_ptr<schedulers::ExchangeHooks> split_hooks;
  /// Claimed by a run for its whole length (exchange, then reverse's sums):
  /// acquire on the claim pairs with the release of the previous run's end,
  /// so that a run sees the scratch as the one before left it.
  std::atomic<bool> busy{false};
};

/// A run's claim on its process's scratch, ended however the run ends.
class GridClaim {
 public:
  GridClaim(GridScratch& s, Rank r);
  ~GridClaim() {
    if (!kept_) s_.busy.store(false, std::memory_order_release);
  }
  GridClaim(const GridClaim&) = delete;
  GridClaim& operator=(const GridClaim&) = delete;
  /// The claim outlives this object: a split forward's wait releases it (GridForwardWait).
  void keep() noexcept { kept_ = true; }

 private:
  GridScratch& s_;
  bool kept_ = false;
};

/// Calls f(offset in b, offset in c, elements) for each contiguous row of the
/// boxes b and c (of equal sizes) in arrays of extents `local`, in row-major
/// order.
template <class F>
void for_each_row(const GridBox& b, const GridBox& c, const std::array<std::uint64_t, 3>& local, F f) {
  const auto at = [&](const GridBox& x, std::uint64_t i, std::uint64_t j) {
    return ((x.lo[0] + i) * local[1] + x.lo[1] + j) * local[2] + x.lo[2];
  };
  for (std::uint64_t i = 0; i < b.size[0]; ++i) {
    for (std::uint64_t j = 0; j < b.size[1]; ++j) f(at(b, i, j), at(c, i, j), b.size[2]);
  }
}

/// What GridHalo::wait_forward returns: the forward plan's run, then, as its
/// awaiting ends, the process's copies to itself and the scratch released
/// (however the run ends). Awaited once, where it is made.
class [[nodiscard]] GridForwardWait {
 public:
  /// The started run of `me`'s forward, on `scratch`.
  GridForwardWait(schedulers::ExchangeRun run, const GridRank& me, std::uint64_t element_bytes,
                  GridScratch& scratch) noexcept
      : run_(std::move(run)), me_(&me), element_bytes_(element_bytes), scratch_(&scratch) {}
  bool await_ready() { return run_.await_ready(); }  ///< whether the run has completed already
  /// Waits for the run.
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) { return run_.await_suspend(awaiter); }
  void await_resume();  ///< completes the run, then the copies to itself; releases the scratch

 private:
  schedulers::ExchangeRun run_;
  const GridRank* me_;
  std::uint64_t element_bytes_;
  GridScratch* scratch_;
};

/// Split phase of forward: checks, claims comm.rank()'s scratch and starts the plan's run.
void grid_start_forward(const GridPattern& g, const schedulers::ExchangePlan& plan, const Communicator& comm,
                        GridScratch& scratch, std::span<std::byte> array);
/// Its wait: InvalidArgument without a start.
GridForwardWait grid_wait_forward(const GridPattern& g, const schedulers::ExchangePlan& plan, const Communicator& comm,
                                  GridScratch& scratch);

/// One run of forward (ghosts <- interiors) on comm.rank()'s array.
Task<void> grid_forward(const GridPattern& g, const schedulers::ExchangePlan& plan, Communicator comm,
                        GridScratch& scratch, std::span<std::byte> array);
/// One run of reverse's exchange: the neighbours' ghost boxes that
/// comm.rank() owns, packed into scratch.sends (what GridHalo then adds).
Task<void> grid_reverse(const GridPattern& g, const schedulers::ExchangePlan& plan, Communicator comm,
                        GridScratch& scratch, std::span<const std::byte> array);

}  // namespace detail

template <class T>
/// The ghost exchange of a structured grid, elements of type T (see the file's description).
class GridHalo {
  static_assert(std::is_trivially_copyable_v<T>, "a halo moves trivially copyable elements");

 public:
  /// Every process's part, shared by all the processes of a job of
  /// `processes` (the product of shape.processes once chosen).
  GridHalo(const GridShape& shape, Rank processes, schedulers::ExchangePlanOptions options = {})
      : pattern_(std::make_unique<detail::GridPattern>(shape, processes, sizeof(T))),
        forward_(std::make_unique<schedulers::ExchangePlan>(pattern_->matrix(false), options)),
        reverse_(std::make_unique<schedulers::ExchangePlan>(pattern_->matrix(true), options)),
        scratch_(std::make_unique<detail::GridScratch[]>(processes)) {}
  GridHalo(GridHalo&&) noexcept = default;  ///< takes over the other halo's pattern, plans and scratch
  GridHalo& operator=(GridHalo&&) noexcept = default;  ///< takes over the other halo's pattern, plans and scratch

  Rank processes() const noexcept { return pattern_->processes(); }  ///< the job's processes
  /// The shape, its process grid chosen.
  const GridShape& shape() const noexcept { return pattern_->shape(); }
  const GridBlock& block(Rank r) const { return pattern_->rank(r).block; }  ///< process r's block
  /// The length of process r's array: the product of block(r).local.
  std::size_t local_elements(Rank r) const { return pattern_->rank(r).elements(); }
  const schedulers::ExchangePlan& forward_plan() const noexcept { return *forward_; }  ///< the plan forward() runs
  /// The plan reverse() runs: forward's transposed.
  const schedulers::ExchangePlan& reverse_plan() const noexcept { return *reverse_; }

  /// Every ghost element of comm.rank()'s array (local_elements long) that a
  /// neighbour owns gets the neighbour's value. InvalidArgument while a split
  /// forward of the process is started (as for a second start).
  Task<void> forward(const Communicator& comm, std::span<T> array) const {
    (void)pattern_->checked(comm, "forward", array.size());
    forward_->refuse_second_start(comm, "GridHalo::forward");  // the other cores stop before this unwinds
    return detail::grid_forward(*pattern_, *forward_, comm, scratch_[comm.rank()], std::as_writable_bytes(array));
  }
  /// Split phase of forward (see the file's description): starts it on
  /// comm.rank()'s array and returns at once. Until wait_forward the process
  /// may read the array's interior and write elsewhere (a second array), but
  /// must not write the interior elements its neighbours take (its boundary
  /// layers) nor read its ghosts. InvalidArgument as forward, and for a
  /// second start before the wait.
  void start_forward(const Communicator& comm, std::span<T> array) const {
    (void)pattern_->checked(comm, "start_forward", array.size());
    detail::grid_start_forward(*pattern_, *forward_, comm, scratch_[comm.rank()], std::as_writable_bytes(array));
  }
  /// Completes comm.rank()'s started forward: to co_await at once. InvalidArgument without a start.
  detail::GridForwardWait wait_forward(const Communicator& comm) const {
    (void)pattern_->rank(comm.rank());
    return detail::grid_wait_forward(*pattern_, *forward_, comm, scratch_[comm.rank()]);
  }
  /// Every interior element that neighbours hold as ghosts becomes
  /// op(element, ghost) for each such ghost, in a fixed order (see above);
  /// op(T, T) -> T. The array's ghosts are read, never written.
  /// InvalidArgument while a split forward of the process is started.
  template <class Op>
  Task<void> reverse(const Communicator& comm, std::span<T> array, Op op) const {
    (void)pattern_->checked(comm, "reverse", array.size());
    forward_->refuse_second_start(comm, "GridHalo::reverse");  // the other cores stop before this unwinds
    return reverse_on(comm, array, std::move(op));
  }

 private:
  /// The communicator copied into the frame: a caller's temporary (a Process
  /// converted on the way in) may be gone by the time the task is awaited.
  template <class Op>
  Task<void> reverse_on(Communicator comm, std::span<T> array, Op op) const {
    const detail::GridRank& me = pattern_->checked(comm, "reverse", array.size());
    detail::GridScratch& s = scratch_[comm.rank()];
    const detail::GridClaim claim(s, comm.rank());
    co_await detail::grid_reverse(*pattern_, *reverse_, comm, s, std::as_bytes(array));
    add_contributions(me, s, array, op);
  }
  template <class Op>
  static void add_contributions(const detail::GridRank& me, const detail::GridScratch& s, std::span<T> array, Op& op) {
    for (const detail::GridContribution& c : me.reverse_in) {
      const detail::GridTransfer& t = *c.transfer;
      const std::byte* packed = s.sends.get() + c.packed_at * sizeof(T);
      const bool own = t.dst == t.src;
      detail::for_each_row(t.from, t.to, me.local, [&](std::uint64_t owned, std::uint64_t ghost, std::uint64_t n) {
        T* out = array.data() + owned;
        if (own) {
          for (std::uint64_t k = 0; k < n; ++k) out[k] = op(out[k], array[ghost + k]);
          return;
        }
        for (std::uint64_t k = 0; k < n; ++k, packed += sizeof(T)) {
          T v;  // packed bytes need not be aligned for T
          std::memcpy(&v, packed, sizeof(T));
          out[k] = op(out[k], v);
        }
      });
    }
  }

  std::unique_ptr<detail::GridPattern> pattern_;
  std::unique_ptr<schedulers::ExchangePlan> forward_, reverse_;
  /// One per process; a process's runs follow each other.
  std::unique_ptr<detail::GridScratch[]> scratch_;
};

}  // namespace switchyard::halo
