// One-to-all and all-to-one on the partition trees of partition_tree.hpp, and
// 1-lev-our-br: the root's p - 1 other messages as one long message broadcast
// down the halving tree, from which every process takes its own.
// The tree is over ranks relative to the root, v = (rank - root) mod p; a root
// other than 0 rotates its p blocks into (out of) relative order in staging.
#include <cstring>
#include <vector>

#include "algorithm_state.hpp"
#include "partition_tree.hpp"

namespace switchyard::model::collectives::detail {
namespace {

// Leaders hold their whole range in `staging` (the root: the caller's buffer);
// a process leading only itself receives into the caller's buffer directly.
// A broadcast holds the whole long message everywhere.
class TreeAlgorithm final : public AlgorithmState {
 public:
  TreeAlgorithm(Operation op, bool broadcast, Communicator comm, TreeRole role, std::vector<Communicator> comms,
                std::uint32_t parent, std::uint64_t bytes, Rank root_rank)
      : op_(op),
        broadcast_(broadcast),
        comm_(comm),
        role_(std::move(role)),
        comms_(std::move(comms)),
        first_((comm.rank() + comm.size() - root_rank) % comm.size()),
        root_rank_(root_rank),
        parent_(parent),
        bytes_(bytes) {
    const bool root = role_.recv_depth < 0;
    if (root && root_rank_ != 0) {
      staging_.resize(std::uint64_t{comm.size()} * bytes_);
    } else if (!root && broadcast_) {
      staging_.resize((comm.size() - 1) * bytes_);
    } else if (!root && role_.range > 1) {
      staging_.resize(role_.range * bytes_);
    }
    sends_.resize(op_ == Operation::one_to_all ? role_.children.size() : 1);
    recvs_.resize(op_ == Operation::one_to_all ? 1 : role_.children.size());
  }

  Task<void> run(Buffers b, TransferLog* log) override {
    if (op_ == Operation::one_to_all) {
      co_await scatter(b, log);
    } else {
      co_await gather(b, log);
    }
  }

 private:
  // The leader's copy of its range: the caller's buffer at the root, staging
  // elsewhere, or the caller's one-block buffer for a range of one.
  Task<void> scatter(Buffers b, TransferLog* log) {
    const bool root = role_.recv_depth < 0;
    std::span<const std::byte> all = b.send;
    if (root && root_rank_ != 0) all = rotate_to_relative(b.send);
    std::span<const std::byte> range = broadcast_ && root ? all.subspan(bytes_) : all;
    if (!root) {
      const Communicator& up = comms_[role_.recv_depth];
      std::span<std::byte> into = staging_.empty() ? b.recv : std::span<std::byte>(staging_);
      co_await up.recv_into(0, into);
      range = into;
    }
    for (std::size_t i = 0; i < role_.children.size(); ++i) {
      const TreeChild& c = role_.children[i];
      const auto piece =
          broadcast_ ? range : range.subspan((c.start - first_) * bytes_, std::uint64_t{c.size} * bytes_);
      sends_[i] = comms_[c.depth].post_send(c.sub_rank, piece);
      if (log) log->add({c.depth, real(first_), real(c.start), piece.size()});
    }
    if (broadcast_) {  // the long message holds the messages of relative ranks 1 .. p - 1
      std::memcpy(b.recv.data(), root ? all.data() : range.data() + (first_ - 1) * bytes_, bytes_);
    } else if (root || !staging_.empty()) {
      std::memcpy(b.recv.data(), range.data(), bytes_);
    }
    co_await comm_.process().wait_all(std::span(sends_.data(), role_.children.size()));
  }

  Task<void> gather(Buffers b, TransferLog* log) {
    const bool root = role_.recv_depth < 0;
    std::span<std::byte> range = root && root_rank_ == 0 ? b.recv : std::span<std::byte>(staging_);
    if (!role_.children.empty()) {
      std::memcpy(range.data(), b.send.data(), bytes_);
      for (std::size_t i = 0; i < role_.children.size(); ++i) {
        const TreeChild& c = role_.children[i];
        recvs_[i] = comms_[c.depth].post_recv_into(
            c.sub_rank, range.subspan((c.start - first_) * bytes_, std::uint64_t{c.size} * bytes_));
      }
      co_await comm_.process().wait_all(std::span(recvs_.data(), role_.children.size()));
    } else if (root) {
      std::memcpy(range.data(), b.send.data(), bytes_);  // a job of one process
    }
    if (root) {
      if (root_rank_ != 0) rotate_to_real(range, b.recv);
      co_return;
    }
    const auto depth = static_cast<std::uint32_t>(role_.recv_depth);
    const std::span<const std::byte> mine = role_.children.empty() ? b.send : std::span<const std::byte>(range);
    if (log) log->add({role_.depths - 1 - depth, real(first_), parent_, mine.size()});
    co_await comms_[depth].send(0, mine);
  }

  // The communicator rank of relative rank v.
  Rank real(std::uint32_t v) const { return (v + root_rank_) % comm_.size(); }
  // The root's blocks by relative rank: block v of staging is block real(v) of `blocks`.
  std::span<const std::byte> rotate_to_relative(std::span<const std::byte> blocks) {
    const std::uint64_t head = std::uint64_t{root_rank_} * bytes_;
    std::memcpy(staging_.data(), blocks.data() + head, blocks.size() - head);
    std::memcpy(staging_.data() + (blocks.size() - head), blocks.data(), head);
    return staging_;
  }
  void rotate_to_real(std::span<const std::byte> relative, std::span<std::byte> blocks) const {
    const std::uint64_t head = std::uint64_t{root_rank_} * bytes_;
    std::memcpy(blocks.data() + head, relative.data(), blocks.size() - head);
    std::memcpy(blocks.data(), relative.data() + (blocks.size() - head), head);
  }

 private:
  Operation op_;
  bool broadcast_;
  Communicator comm_;
  TreeRole role_;
  std::vector<Communicator> comms_;  // per level; null where this process is in no sub-machine
  std::uint32_t first_;  // this process's relative rank: its range starts here
  Rank root_rank_;
  std::uint32_t parent_;  // the leader it hears from / reports to
  std::uint64_t bytes_;
  std::vector<std::byte> staging_;
  std::vector<SendTicket> sends_;
  std::vector<RecvTicket> recvs_;
};

}  // namespace

Task<std::unique_ptr<AlgorithmState>> make_tree_algorithm(Communicator comm, Operation op, std::string_view algorithm,
                                                          std::uint64_t bytes, Rank root) {
  const bool broadcast = algorithm == "1-lev-our-br";
  const TreeShape shape = broadcast ? TreeShape{TreeShape::kGamma, 0.5} : tree_shape(algorithm);
  const Rank p = comm.size(), me = (comm.rank() + p - root) % p;
  TreeRole role = tree_role(shape, p, me);
  std::vector<Communicator> comms(role.depths);
  for (std::uint32_t d = 0; d < role.depths; ++d) {
    const std::int64_t color = role.color[d] < 0 ? Communicator::kUndefined : role.color[d];
    comms[d] = co_await comm.split(color, me);
  }
  std::uint32_t parent = 0;
  if (role.recv_depth >= 0) parent = comm.rank_of_job_rank(comms[role.recv_depth].job_rank(0));
  co_return std::make_unique<TreeAlgorithm>(op, broadcast, comm, std::move(role), std::move(comms), parent, bytes,
                                            root);
}

}  // namespace switchyard::model::collectives::detail
