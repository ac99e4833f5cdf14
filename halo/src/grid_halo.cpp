// The structured-grid halo: the decomposition, its ghost boxes and the hooks
// that describe them to the exchange plans (grid_halo.hpp).

#include "switchyard/halo/grid_halo.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include "switchyard/errors.hpp"
#include "switchyard/schedulers/exchange_hooks.hpp"

namespace switchyard::halo {

namespace {

using detail::GridBox;
using detail::GridRank;
using detail::GridSide;
using detail::GridTransfer;
using schedulers::StridedRun;

[[noreturn]] void refuse(const std::string& what) { throw InvalidArgument("switchyard: GridHalo: " + what); }

std::vector<std::uint32_t> prime_factors(std::uint64_t n) {
  std::vector<std::uint32_t> f;
  for (std::uint32_t p = 2; std::uint64_t{p} * p <= n; ++p) {
    for (; n % p == 0; n /= p) f.push_back(p);
  }
  if (n > 1) f.push_back(static_cast<std::uint32_t>(n));
  return f;
}

// Block k of an extent over p processes: MPI's block distribution.
std::pair<std::uint64_t, std::uint64_t> block_of(std::uint64_t extent, std::uint64_t p, std::uint64_t k) {
  const std::uint64_t base = extent / p, extra = extent % p;
  return {k * base + std::min(k, extra), base + (k < extra ? 1 : 0)};
}

// Where box b of an array of extents `local` lies: one run per plane, or one
// block where its rows are whole.
void describe_box(const GridBox& b, const std::array<std::uint64_t, 3>& local, std::uint64_t bytes,
                  std::vector<StridedRun>& runs) {
  for (std::uint64_t i = 0; i < b.size[0]; ++i) {
    const std::uint64_t first = ((b.lo[0] + i) * local[1] + b.lo[1]) * local[2] + b.lo[2];
    if (b.size[2] == local[2]) {
      runs.push_back({first * bytes, b.size[1] * b.size[2] * bytes, b.size[1] * b.size[2] * bytes, 1});
    } else {
      runs.push_back({first * bytes, b.size[2] * bytes, local[2] * bytes, b.size[1]});
    }
  }
}

// Copies box `from` of one array into box `to` of another (or packed, where
// the stride of a side is its row's own length: see the callers).
void copy_box(const GridBox& from, const std::byte* src, const GridBox& to, std::byte* dst,
              const std::array<std::uint64_t, 3>& local, std::uint64_t bytes) {
  detail::for_each_row(from, to, local, [&](std::uint64_t a, std::uint64_t b, std::uint64_t n) {
    std::memcpy(dst + b * bytes, src + a * bytes, n * bytes);
  });
}

// Packs the boxes of transfers [first, last) of a side (`from` or `to` of
// each, as `box` picks) into `out`, or unpacks `out` into them.
template <class Box>
void pack(std::span<const GridTransfer* const> transfers, Box box, const std::byte* array, std::byte* out,
          const std::array<std::uint64_t, 3>& local, std::uint64_t bytes) {
  for (const GridTransfer* t : transfers) {
    detail::for_each_row(box(*t), box(*t), local, [&](std::uint64_t a, std::uint64_t, std::uint64_t n) {
      std::memcpy(out, array + a * bytes, n * bytes);
      out += n * bytes;
    });
  }
}
template <class Box>
void unpack(std::span<const GridTransfer* const> transfers, Box box, const std::byte* in, std::byte* array,
            const std::array<std::uint64_t, 3>& local, std::uint64_t bytes) {
  for (const GridTransfer* t : transfers) {
    detail::for_each_row(box(*t), box(*t), local, [&](std::uint64_t a, std::uint64_t, std::uint64_t n) {
      std::memcpy(array + a * bytes, in, n * bytes);
      in += n * bytes;
    });
  }
}

const GridBox& from_box(const GridTransfer& t) { return t.from; }
const GridBox& to_box(const GridTransfer& t) { return t.to; }

// The transfers of group k of a side.
std::span<const GridTransfer* const> group(const GridSide& s, std::size_t k) {
  return std::span(s.transfers).subspan(s.start[k], s.start[k + 1] - s.start[k]);
}

// Scratch for a process's runs through buffers (and reverse's receives).
void make_scratch(const GridRank& me, std::uint64_t bytes, detail::GridScratch& s) {
  if (s.sends) return;
  s.sends = std::make_unique<std::byte[]>(me.sends.packed_start.back() * bytes);
  s.recvs = std::make_unique<std::byte[]>(me.recvs.packed_start.back() * bytes);
}

// Hooks of both directions. Forward: a process sends its interior boxes
// (`from` of its sends) and receives into its ghost boxes (`to` of its
// recvs), through scratch where a run needs buffers. Reverse: it sends its
// ghost boxes (`to` of its recvs) and receives them packed into
// scratch.sends, which is then also what it describes as its receive region.
class GridHooks final : public schedulers::ExchangeHooks {
 public:
  GridHooks(const GridRank& me, std::uint64_t bytes, detail::GridScratch& s, std::span<const std::byte> in,
            std::span<std::byte> out, bool reverse)
      : me_(me), bytes_(bytes), s_(s), in_(in), out_(out), reverse_(reverse) {}

  bool describes_memory() const override { return true; }
  void describe_send(std::size_t i, std::vector<StridedRun>& runs) override {
    for (const GridTransfer* t : group(send_side(), i))
      describe_box(reverse_ ? t->to : t->from, me_.local, bytes_, runs);
  }
  void describe_recv(std::size_t j, std::vector<StridedRun>& runs) override {
    if (reverse_) {
      const std::uint64_t at = me_.sends.packed_start[j] * bytes_,
                          length = (me_.sends.packed_start[j + 1] - me_.sends.packed_start[j]) * bytes_;
      runs.push_back({at, length, length, 1});
      return;
    }
    for (const GridTransfer* t : group(me_.recvs, j)) describe_box(t->to, me_.local, bytes_, runs);
  }
  schedulers::ExchangeMemory memory() override { return {in_, out_}; }
  // Points the hooks at another array (a split forward's hooks, kept from run to run).
  void aim(std::span<const std::byte> in, std::span<std::byte> out) noexcept {
    in_ = in;
    out_ = out;
  }

  std::span<const std::byte> send_buffer(std::size_t i) override { return staged(send_side(), send_staging(), i); }
  std::span<std::byte> recv_buffer(std::size_t j) override { return staged(recv_side(), recv_staging(), j); }
  void before_send(std::size_t i) override {
    std::byte* at = send_staging() + send_side().packed_start[i] * bytes_;
    if (reverse_) {
      pack(group(me_.recvs, i), to_box, in_.data(), at, me_.local, bytes_);
    } else {
      pack(group(me_.sends, i), from_box, in_.data(), at, me_.local, bytes_);
    }
  }
  void after_receive(std::size_t j) override {
    if (reverse_) return;  // received where GridHalo adds from
    unpack(group(me_.recvs, j), to_box, recv_staging() + me_.recvs.packed_start[j] * bytes_, out_.data(), me_.local,
           bytes_);
  }

 private:
  const GridSide& send_side() const noexcept { return reverse_ ? me_.recvs : me_.sends; }
  const GridSide& recv_side() const noexcept { return reverse_ ? me_.sends : me_.recvs; }
  std::byte* send_staging() {
    make_scratch(me_, bytes_, s_);
    return reverse_ ? s_.recvs.get() : s_.sends.get();
  }
  std::byte* recv_staging() {
    make_scratch(me_, bytes_, s_);
    return reverse_ ? s_.sends.get() : s_.recvs.get();
  }
  std::span<std::byte> staged(const GridSide& side, std::byte* base, std::size_t k) const {
    return {base + side.packed_start[k] * bytes_, (side.packed_start[k + 1] - side.packed_start[k]) * bytes_};
  }
  const GridRank& me_;
  std::uint64_t bytes_;
  detail::GridScratch& s_;
  std::span<const std::byte> in_;
  std::span<std::byte> out_;
  bool reverse_;
};

}  // namespace

std::array<std::uint32_t, 3> dims_create(Rank processes, int dims, std::array<std::uint32_t, 3> fixed) {
  if (dims < 1 || dims > 3) refuse("dims is " + std::to_string(dims) + ", not 1, 2 or 3");
  if (processes == 0) refuse("a grid of 0 processes");
  std::uint64_t rest = processes;
  std::vector<int> free;
  for (int d = 0; d < dims; ++d) {
    if (fixed[d] == 0) {
      free.push_back(d);
    } else if (rest % fixed[d] != 0) {
      refuse("the process grid's fixed extents do not divide " + std::to_string(processes) + " processes (dimension " +
             std::to_string(d) + ": " + std::to_string(fixed[d]) + ")");
    } else {
      rest /= fixed[d];
    }
  }
  if (free.empty()) {
    if (rest != 1) {
      refuse("the process grid's extents multiply to " + std::to_string(processes / rest) + ", not " +
             std::to_string(processes) + " processes");
    }
    return fixed;
  }
  // The largest factors first, each to the free dimension with the smallest product.
  std::vector<std::uint64_t> chosen(free.size(), 1);
  std::vector<std::uint32_t> f = prime_factors(rest);
  for (auto it = f.rbegin(); it != f.rend(); ++it) *std::min_element(chosen.begin(), chosen.end()) *= *it;
  std::sort(chosen.begin(), chosen.end(), std::greater<>());
  for (std::size_t k = 0; k < free.size(); ++k) fixed[free[k]] = static_cast<std::uint32_t>(chosen[k]);
  return fixed;
}

namespace detail {

GridPattern::GridPattern(const GridShape& shape, Rank processes, std::uint64_t element_bytes)
    : user_(shape), element_bytes_(element_bytes) {
  user_.processes = dims_create(processes, shape.dims, shape.processes);
  decompose();
  connect();
  group_by_peer();
}

void GridPattern::decompose() {
  const int lead = 3 - user_.dims;  // internal dimension of the user's first
  shape_ = GridShape{3, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {false, false, false}, user_.corners};
  for (int u = 0; u < user_.dims; ++u) {
    const int d = lead + u;
    shape_.extents[d] = user_.extents[u];
    shape_.processes[d] = user_.processes[u];
    shape_.ghost[d] = user_.ghost[u];
    shape_.periodic[d] = user_.periodic[u];
    const std::string where = "dimension " + std::to_string(u) + ": ";
    if (user_.extents[u] < user_.processes[u]) {
      refuse(where + "extent " + std::to_string(user_.extents[u]) + " is smaller than its " +
             std::to_string(user_.processes[u]) + " processes");
    }
    const std::uint64_t smallest = user_.extents[u] / user_.processes[u];
    if (user_.ghost[u] > smallest) {
      refuse(where + "ghost width " + std::to_string(user_.ghost[u]) + " is wider than its smallest block (" +
             std::to_string(smallest) + " of extent " + std::to_string(user_.extents[u]) + " over " +
             std::to_string(user_.processes[u]) + " processes)");
    }
  }
  const auto& p = shape_.processes;
  ranks_.resize(std::size_t{p[0]} * p[1] * p[2]);
  for (Rank r = 0; r < ranks_.size(); ++r) {
    GridRank& g = ranks_[r];
    const std::array<std::uint64_t, 3> c{r / (p[1] * p[2]), r / p[2] % p[1], r % p[2]};
    for (int d = 0; d < 3; ++d) {
      const auto [first, size] = block_of(shape_.extents[d], p[d], c[d]);
      g.local[d] = size + 2 * std::uint64_t{shape_.ghost[d]};
      if (d < lead) continue;
      g.block.coords[d - lead] = static_cast<std::uint32_t>(c[d]);
      g.block.first[d - lead] = first;
      g.block.size[d - lead] = size;
      g.block.local[d - lead] = g.local[d];
    }
  }
}

// Every receiver's ghost boxes, direction by direction, each from its
// neighbour's interior; then sorted by (src, dst), directions in order.
void GridPattern::connect() {
  const auto& p = shape_.processes;
  for (Rank r = 0; r < ranks_.size(); ++r) {
    const std::array<std::uint64_t, 3> c{r / (p[1] * p[2]), r / p[2] % p[1], r % p[2]};
    for (int dir = 0; dir < 27; ++dir) {
      const std::array<int, 3> o{dir / 9 - 1, dir / 3 % 3 - 1, dir % 3 - 1};
      const int moved = (o[0] != 0) + (o[1] != 0) + (o[2] != 0);
      if (moved == 0 || (moved > 1 && !shape_.corners)) continue;
      GridTransfer t;
      t.dst = r;
      std::uint64_t src = 0;
      bool exists = true;
      for (int d = 0; d < 3 && exists; ++d) {
        const std::uint64_t g = shape_.ghost[d], b = ranks_[r].local[d] - 2 * g;
        std::int64_t n = static_cast<std::int64_t>(c[d]) + o[d];
        if (o[d] != 0 && g == 0) exists = false;
        if (n < 0 || n >= static_cast<std::int64_t>(p[d])) {
          if (!shape_.periodic[d]) exists = false;
          n = (n + p[d]) % p[d];
        }
        src = src * p[d] + static_cast<std::uint64_t>(n);
        // The neighbour's block size along d (its local less its ghosts).
        const std::uint64_t nb = block_of(shape_.extents[d], p[d], static_cast<std::uint64_t>(n)).second;
        t.to.lo[d] = o[d] < 0 ? 0 : o[d] == 0 ? g : g + b;
        t.to.size[d] = o[d] == 0 ? b : g;
        t.from.lo[d] = o[d] < 0 ? nb : g;  // below: its last g rows; above: its first
        t.from.size[d] = t.to.size[d];
      }
      if (!exists) continue;
      t.src = static_cast<Rank>(src);
      transfers_.push_back(t);
    }
  }
  std::stable_sort(transfers_.begin(), transfers_.end(), [](const GridTransfer& a, const GridTransfer& b) {
    return std::pair(a.src, a.dst) < std::pair(b.src, b.dst);
  });
}

// Cuts a side's transfers (in the order of transfers_) into groups by peer.
void cut_groups(GridSide& side, Rank GridTransfer::*peer) {
  std::uint64_t packed = 0;
  for (std::size_t i = 0; i < side.transfers.size(); ++i) {
    if (i > 0 && side.transfers[i]->*peer != side.transfers[i - 1]->*peer) {
      side.start.push_back(static_cast<std::uint32_t>(i));
      side.packed_start.push_back(packed);
    }
    packed += side.transfers[i]->to.elements();
  }
  if (side.transfers.empty()) return;
  side.start.push_back(static_cast<std::uint32_t>(side.transfers.size()));
  side.packed_start.push_back(packed);
}

void GridPattern::group_by_peer() {
  for (const GridTransfer& t : transfers_) {
    if (t.src == t.dst) {
      ranks_[t.src].own.push_back(&t);
      continue;
    }
    ranks_[t.src].sends.transfers.push_back(&t);
    ranks_[t.dst].recvs.transfers.push_back(&t);
  }
  for (GridRank& g : ranks_) {
    cut_groups(g.sends, &GridTransfer::dst);
    cut_groups(g.recvs, &GridTransfer::src);
  }
  // reverse's additions: a rank's transfers as sender, in order (transfers_
  // is sorted by src, then dst); the others' packed as its sends are.
  std::vector<std::uint64_t> packed(ranks_.size(), 0);
  for (const GridTransfer& t : transfers_) {
    ranks_[t.src].reverse_in.push_back({&t, t.src == t.dst ? 0 : packed[t.src]});
    if (t.src != t.dst) packed[t.src] += t.to.elements();
  }
}

const GridRank& GridPattern::rank(Rank r) const {
  if (r >= ranks_.size()) {
    refuse("rank " + std::to_string(r) + " is beyond its " + std::to_string(ranks_.size()) + " processes");
  }
  return ranks_[r];
}

schedulers::CommMatrix GridPattern::matrix(bool reverse) const {
  schedulers::CommMatrix m(processes());
  for (Rank r = 0; r < ranks_.size(); ++r) {
    const GridSide& s = ranks_[r].sends;
    for (std::size_t k = 0; k + 1 < s.start.size(); ++k) {
      const Rank dst = group(s, k).front()->dst;
      const std::uint64_t bytes = (s.packed_start[k + 1] - s.packed_start[k]) * element_bytes_;
      if (reverse) {
        m.set(dst, r, bytes);
      } else {
        m.set(r, dst, bytes);
      }
    }
  }
  return m;
}

const GridRank& GridPattern::checked(const Communicator& comm, const char* call, std::size_t elements) const {
  if (comm.size() != processes()) {
    refuse(std::string(call) + " on a communicator of " + std::to_string(comm.size()) + " members; the grid has " +
           std::to_string(processes()) + " processes");
  }
  const GridRank& me = rank(comm.rank());
  if (elements != me.elements()) {
    refuse(std::string(call) + " on rank " + std::to_string(comm.rank()) + ": an array of " + std::to_string(elements) +
           " elements, its block and ghosts have " + std::to_string(me.elements()));
  }
  return me;
}

GridClaim::GridClaim(GridScratch& s, Rank r) : s_(s) {
  if (s.split_started && !s.split_comm.valid()) {  // started in a job that failed before its wait
    s.split_started = false;
    s.busy.store(false, std::memory_order_release);
  }
  if (s.busy.exchange(true, std::memory_order_acquire)) {
    refuse("rank " + std::to_string(r) + " runs the halo in two jobs at once (one job at a time runs a halo)");
  }
}

Task<void> grid_forward(const GridPattern& g, const schedulers::ExchangePlan& plan, Communicator comm,
                        GridScratch& scratch, std::span<std::byte> array) {
  const GridRank& me = g.rank(comm.rank());
  const GridClaim claim(scratch, comm.rank());
  GridHooks hooks(me, g.element_bytes(), scratch, array, array, false);
  co_await plan.run(comm, hooks);
  for (const GridTransfer* t : me.own)
    copy_box(t->from, array.data(), t->to, array.data(), me.local, g.element_bytes());
}

void grid_start_forward(const GridPattern& g, const schedulers::ExchangePlan& plan, const Communicator& comm,
                        GridScratch& scratch, std::span<std::byte> array) {
  const GridRank& me = g.rank(comm.rank());
  // Before the claim and the hooks' aim: the first start's run may be reading them.
  plan.refuse_second_start(comm, "GridHalo::start_forward");
  GridClaim claim(scratch, comm.rank());  // released here if the start throws
  if (!scratch.split_hooks)
    scratch.split_hooks = std::make_unique<GridHooks>(me, g.element_bytes(), scratch, array, array, false);
  auto& hooks = static_cast<GridHooks&>(*scratch.split_hooks);
  hooks.aim(array, array);
  plan.start(comm, hooks);
  claim.keep();  // until the wait's end
  scratch.split_started = true;
  scratch.split_comm = comm;
  scratch.split_array = array;
}

GridForwardWait grid_wait_forward(const GridPattern& g, const schedulers::ExchangePlan& plan, const Communicator& comm,
                                  GridScratch& scratch) {
  if (!scratch.split_started || !scratch.split_comm.valid()) {
    refuse("wait_forward on rank " + std::to_string(comm.rank()) + ": no start to wait for");
  }
  scratch.split_started = false;
  return GridForwardWait(plan.wait(comm), g.rank(comm.rank()), g.element_bytes(), scratch);
}

void GridForwardWait::await_resume() {
  struct Release {  // however the run ends
    GridScratch& s;
    ~Release() { s.busy.store(false, std::memory_order_release); }
  } release{*scratch_};
  run_.await_resume();
  for (const GridTransfer* t : me_->own)
    copy_box(t->from, scratch_->split_array.data(), t->to, scratch_->split_array.data(), me_->local, element_bytes_);
}

Task<void> grid_reverse(const GridPattern& g, const schedulers::ExchangePlan& plan, Communicator comm,
                        GridScratch& scratch, std::span<const std::byte> array) {
  const GridRank& me = g.rank(comm.rank());
  make_scratch(me, g.element_bytes(), scratch);
  GridHooks hooks(me, g.element_bytes(), scratch, array,
                  {scratch.sends.get(), me.sends.packed_start.back() * g.element_bytes()}, true);
  co_await plan.run(comm, hooks);
}

}  // namespace detail

}  // namespace switchyard::halo
