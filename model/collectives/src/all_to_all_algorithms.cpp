// All-to-all: 1-lev-dir, 1-lev-perm (linear and XOR permutations), 2-lev-r,c,
// 2-lev-sq and logp-lev-bfly. The 2-level algorithms see the p processes as an
// R x C grid with R * C = p, R the largest divisor of p not above sqrt(p)
// (square for square p; a single row, where the 2-level algorithms become
// 1-lev-dir, for prime p). Process (g, a) is rank g * C + a; rows are the
// sub-machines of 2-lev-sq, rows then columns those of 2-lev-r,c.
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "algorithm_state.hpp"
#include "switchyard/errors.hpp"

namespace switchyard::model::collectives::detail {
namespace {

// Block i of a buffer of L-byte blocks.
template <class Byte>
std::span<Byte> block(std::span<Byte> buffer, std::uint64_t i, std::uint64_t bytes, std::uint64_t count = 1) {
  return buffer.subspan(i * bytes, count * bytes);
}
void copy_block(std::span<std::byte> to, std::uint64_t i, std::span<const std::byte> from, std::uint64_t j,
                std::uint64_t bytes) {
  std::memcpy(to.data() + i * bytes, from.data() + j * bytes, bytes);
}

class AllToAllBase : public AlgorithmState {
 protected:
  AllToAllBase(Communicator comm, std::uint64_t bytes) : comm_(comm), p_(comm.size()), me_(comm.rank()), L_(bytes) {}
  Communicator comm_;
  Rank p_, me_;
  std::uint64_t L_;
};

// Every process posts its p - 1 receives and p - 1 sends at once and leaves the
// congestion to the mailboxes: one superstep.
class Direct final : public AllToAllBase {
 public:
  Direct(Communicator comm, std::uint64_t bytes) : AllToAllBase(comm, bytes), sends_(p_ - 1), recvs_(p_ - 1) {}
  Task<void> run(Buffers b, TransferLog* log) override {
    for (Rank k = 1; k < p_; ++k) {
      const Rank src = (me_ + p_ - k) % p_;
      recvs_[k - 1] = comm_.post_recv_into(src, block(b.recv, src, L_));
    }
    for (Rank k = 1; k < p_; ++k) {
      const Rank dst = (me_ + k) % p_;
      sends_[k - 1] = comm_.post_send(dst, block(b.send, dst, L_));
      if (log) log->add({0, me_, dst, L_});
    }
    copy_block(b.recv, me_, b.send, me_, L_);
    co_await comm_.process().wait_all(std::span(sends_));
    co_await comm_.process().wait_all(std::span(recvs_));
  }

 private:
  std::vector<SendTicket> sends_;
  std::vector<RecvTicket> recvs_;
};

// p - 1 permutations, one per superstep: linear (step k: me -> me + k) or XOR
// (step k: me <-> me ^ k, k < p rounded up to a power of two; a partner beyond
// p leaves the process idle in that step).
class Permutation final : public AllToAllBase {
 public:
  Permutation(Communicator comm, std::uint64_t bytes, bool xor_pairs)
      : AllToAllBase(comm, bytes), xor_(xor_pairs), steps_(xor_pairs ? std::bit_ceil(std::uint64_t{p_}) - 1 : p_ - 1) {}
  Task<void> run(Buffers b, TransferLog* log) override {
    copy_block(b.recv, me_, b.send, me_, L_);
    for (std::uint64_t k = 1; k <= steps_; ++k) {
      const Rank dst = xor_ ? static_cast<Rank>(me_ ^ k) : static_cast<Rank>((me_ + k) % p_);
      const Rank src = xor_ ? dst : static_cast<Rank>((me_ + p_ - k) % p_);
      if (dst >= p_) continue;
      RecvTicket in = comm_.post_recv_into(src, block(b.recv, src, L_));
      if (log) log->add({static_cast<std::uint32_t>(k - 1), me_, dst, L_});
      co_await comm_.send(dst, block(b.send, dst, L_));
      co_await comm_.process().wait(in);
    }
  }

 private:
  bool xor_;
  std::uint64_t steps_;
};

// Shared by the 2-level algorithms: the grid, its row and column
// sub-communicators, two staging buffers of p blocks and the tickets.
class GridBase : public AllToAllBase {
 protected:
  GridBase(Communicator comm, std::uint64_t bytes, Communicator row, Communicator col)
      : AllToAllBase(comm, bytes),
        grid_(grid_of(p_)),
        g_(me_ / grid_.cols),
        a_(me_ % grid_.cols),
        row_(row),
        col_(col),
        pack_(std::uint64_t{p_} * bytes),
        hold_(std::uint64_t{p_} * bytes),
        sends_(p_),
        recvs_(p_) {}
  Rank at(Rank g, Rank a) const { return g * grid_.cols + a; }
  // Waits for the first n sends and receives of a superstep.
  Task<void> finish(std::size_t sends, std::size_t recvs) {
    co_await comm_.process().wait_all(std::span(sends_.data(), sends));
    co_await comm_.process().wait_all(std::span(recvs_.data(), recvs));
  }
  Grid grid_;
  Rank g_, a_;
  Communicator row_, col_;  // ranked by a within a row, by g within a column
  std::vector<std::byte> pack_, hold_;
  std::vector<SendTicket> sends_;
  std::vector<RecvTicket> recvs_;
};

// Two supersteps: in its row, (g, a) sends (g, b) the R messages for column b;
// in its column, (g, b) sends (h, b) the C messages for it, which land in place.
class RowColumn final : public GridBase {
 public:
  RowColumn(Communicator comm, std::uint64_t bytes, Communicator row, Communicator col)
      : GridBase(comm, bytes, row, col) {}
  Task<void> run(Buffers b, TransferLog* log) override {
    const Rank R = grid_.rows, C = grid_.cols;
    std::span<std::byte> pack(pack_), hold(hold_);
    std::size_t ns = 0, nr = 0;
    for (Rank c = 0; c < C; ++c) {  // pack_/hold_ block c * R + h: for (h, c)
      std::span<std::byte> to = c == a_ ? hold : pack;
      for (Rank h = 0; h < R; ++h) copy_block(to, c * R + h, b.send, at(h, c), L_);
      if (c == a_) continue;
      recvs_[nr++] = row_.post_recv_into(c, block(hold, c * R, L_, R), 0);
      sends_[ns++] = row_.post_send(c, block(std::span<const std::byte>(pack), c * R, L_, R), 0);
      if (log) log->add({0, me_, at(g_, c), R * L_});
    }
    co_await finish(ns, nr);
    ns = nr = 0;
    for (Rank h = 0; h < R; ++h) {  // hold_ block c * R + h: from (g, c) to (h, a)
      std::span<std::byte> to = h == g_ ? b.recv : pack;
      for (Rank c = 0; c < C; ++c) copy_block(to, h * C + c, hold, c * R + h, L_);
      if (h == g_) continue;
      recvs_[nr++] = col_.post_recv_into(h, block(b.recv, h * C, L_, C), 1);
      sends_[ns++] = col_.post_send(h, block(std::span<const std::byte>(pack), h * C, L_, C), 1);
      if (log) log->add({1, me_, at(h, a_), C * L_});
    }
    co_await finish(ns, nr);
  }
};

// Three supersteps on square sub-machines (the rows, R <= C): in its row,
// (g, a) sends member x < R its C messages for row x; then (g, x) sends all it
// holds, everything from row g to row x, to (x, g) as one message (on the whole
// machine); in its row, (x, g) sends each (x, b) the C messages for it. For R < C
// only the first R members of a row relay (for prime p, R = 1: all through 0).
class Square final : public GridBase {
 public:
  Square(Communicator comm, std::uint64_t bytes, Communicator row, Communicator col)
      : GridBase(comm, bytes, row, col), relay_(std::uint64_t{grid_.cols} * grid_.cols * bytes) {
    // A relay holds C x C messages, more than p when R < C.
    pack_.resize(relay_.size());
    hold_.resize(relay_.size());
  }
  Task<void> run(Buffers b, TransferLog* log) override {
    const Rank R = grid_.rows, C = grid_.cols;
    std::span<std::byte> hold(hold_);
    const std::span<const std::byte> send = b.send;
    // Step 1. hold_ block c * C + t: from (g, c) to (a, t).
    std::size_t ns = 0, nr = 0;
    for (Rank x = 0; x < R; ++x) {
      if (x == a_) {
        std::memcpy(block(hold, a_ * C, L_, C).data(), block(send, at(x, 0), L_, C).data(), C * L_);
        continue;
      }
      sends_[ns++] = row_.post_send(x, block(send, at(x, 0), L_, C), 0);
      if (log) log->add({0, me_, at(g_, x), C * L_});
    }
    if (a_ < R) {
      for (Rank c = 0; c < C; ++c) {
        if (c != a_) recvs_[nr++] = row_.post_recv_into(c, block(hold, c * C, L_, C), 0);
      }
    }
    co_await finish(ns, nr);
    // Step 3's messages to this process come from the relays y < R of its row.
    nr = 0;
    for (Rank y = 0; y < R; ++y) {
      if (y != a_) recvs_[nr++] = row_.post_recv_into(y, block(b.recv, at(y, 0), L_, C), 2);
    }
    ns = 0;
    if (a_ < R) ns = co_await relay_rows(b, log);
    co_await finish(ns, nr);
  }

 private:
  // Steps 2 and 3 of relay (g, a), a < R; returns the step-3 sends posted.
  Task<std::size_t> relay_rows(Buffers b, TransferLog* log) {
    const Rank C = grid_.cols;
    std::span<std::byte> relay = hold_;
    // Step 2: (g, a) -> (a, g), and from (a, g) back: relay then holds, block
    // c * C + t, the message from (a, c) to (g, t). A diagonal process keeps its own.
    if (g_ != a_) {
      relay = relay_;
      RecvTicket in = comm_.post_recv_into(at(a_, g_), block(relay, 0, L_, C * C), 1);
      if (log) log->add({1, me_, at(a_, g_), C * C * L_});
      co_await comm_.send(at(a_, g_), block(std::span<const std::byte>(hold_), 0, L_, C * C), 1);
      co_await comm_.process().wait(in);
    }
    // Step 3: to each (g, t) the messages from (a, c), c < C, which land in place.
    std::size_t ns = 0;
    const std::span<std::byte> pack(pack_);
    for (Rank t = 0; t < C; ++t) {
      std::span<std::byte> to = t == a_ ? b.recv.subspan(at(a_, 0) * L_) : pack.subspan(t * C * L_);
      for (Rank c = 0; c < C; ++c) copy_block(to, c, relay, c * C + t, L_);
      if (t == a_) continue;
      sends_[ns++] = row_.post_send(t, block(std::span<const std::byte>(pack), t * C, L_, C), 2);
      if (log) log->add({2, me_, at(g_, t), C * L_});
    }
    co_return ns;
  }

 private:
  std::vector<std::byte> relay_;
};

// log p supersteps over slots of p blocks, in superstep k every slot j that
// `moves(j, bit)` (bit = 2^k) goes to the same slot at the partner.
//   p a power of two, the butterfly: slot j starts as the message to j; it
//   moves across dimension k to me ^ bit when j and me differ in bit k; slot j
//   ends as the message from j.
//   Otherwise Bruck's exchange: slot j starts as the message to me + j; it moves
//   to me + bit when j has bit k; slot j ends as the message from me - j.
class Butterfly final : public AllToAllBase {
 public:
  Butterfly(Communicator comm, std::uint64_t bytes)
      : AllToAllBase(comm, bytes),
        xor_(std::has_single_bit(p_)),
        slots_(std::uint64_t{p_} * bytes),
        out_(p_ * bytes),
        in_(p_ * bytes) {}
  Task<void> run(Buffers b, TransferLog* log) override {
    std::span<std::byte> slots(slots_);
    const Rank shift = xor_ ? 0 : me_;
    std::memcpy(slots.data(), b.send.data() + shift * L_, (p_ - shift) * L_);
    std::memcpy(slots.data() + (p_ - shift) * L_, b.send.data(), shift * L_);
    for (std::uint32_t k = 0; (Rank{1} << k) < p_; ++k) {
      const Rank bit = Rank{1} << k;
      const Rank dst = xor_ ? me_ ^ bit : (me_ + bit) % p_, src = xor_ ? dst : (me_ + p_ - bit) % p_;
      std::uint64_t n = 0;
      for (Rank j = 0; j < p_; ++j) {
        if (moves(j, bit)) copy_block(out_, n++, slots, j, L_);
      }
      RecvTicket in = comm_.post_recv_into(src, block(std::span<std::byte>(in_), 0, L_, n), k);
      if (log) log->add({k, me_, dst, n * L_});
      co_await comm_.send(dst, block(std::span<const std::byte>(out_), 0, L_, n), k);
      co_await comm_.process().wait(in);
      n = 0;
      for (Rank j = 0; j < p_; ++j) {
        if (moves(j, bit)) copy_block(slots, j, in_, n++, L_);
      }
    }
    for (Rank j = 0; j < p_; ++j) copy_block(b.recv, xor_ ? j : (me_ + p_ - j) % p_, slots, j, L_);
  }

 private:
  bool moves(Rank j, Rank bit) const { return ((xor_ ? j ^ me_ : j) & bit) != 0; }
  bool xor_;
  std::vector<std::byte> slots_, out_, in_;
};

}  // namespace

Grid grid_of(Rank p) {
  auto r = static_cast<Rank>(std::sqrt(static_cast<double>(p)));
  while (r > 1 && static_cast<std::uint64_t>(r) * r > p) --r;
  while (static_cast<std::uint64_t>(r + 1) * (r + 1) <= p) ++r;
  while (p % r != 0) --r;
  return {r, p / r};
}

Task<std::unique_ptr<AlgorithmState>> make_all_to_all(Communicator comm, std::string_view algorithm,
                                                      std::uint64_t bytes) {
  if (algorithm == "1-lev-dir") co_return std::make_unique<Direct>(comm, bytes);
  if (algorithm == "1-lev-perm-linear") co_return std::make_unique<Permutation>(comm, bytes, false);
  if (algorithm == "1-lev-perm-xor") co_return std::make_unique<Permutation>(comm, bytes, true);
  if (algorithm == "logp-lev-bfly") co_return std::make_unique<Butterfly>(comm, bytes);
  if (algorithm != "2-lev-sq" && algorithm != "2-lev-r,c") {
    throw InvalidArgument("switchyard: '" + std::string(algorithm) + "' is not an all-to-all algorithm");
  }
  const Grid grid = grid_of(comm.size());
  const Rank g = comm.rank() / grid.cols, a = comm.rank() % grid.cols;
  Communicator row = co_await comm.split(g, a);
  Communicator col = co_await comm.split(a, g);
  if (algorithm == "2-lev-sq") co_return std::make_unique<Square>(comm, bytes, row, col);
  co_return std::make_unique<RowColumn>(comm, bytes, row, col);
}

}  // namespace switchyard::model::collectives::detail
