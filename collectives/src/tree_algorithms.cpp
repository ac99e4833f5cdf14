// One-to-all and all-to-one on the partition trees of partition_tree.hpp, and
// 1-lev-our-br: the root's p - 1 other messages as one long message broadcast
// down the halving tree, from which every process takes its own.
#include <cstring>
#include <vector>

#include "algorithm_state.hpp"
#include "partition_tree.hpp"

namespace switchyard::collectives::detail {
namespace {

// Leaders hold their whole range in `staging` (the root: the caller's buffer);
// a process leading only itself receives into the caller's buffer directly.
// A broadcast holds the whole long message everywhere.
class TreeAlgorithm final : public AlgorithmState {
 public:
  TreeAlgorithm(Operation op, bool broadcast, Communicator comm, TreeRole role, std::vector<Communicator> comms,
                std::uint32_t parent, std::uint64_t bytes)
      : op_(op),
        broadcast_(broadcast),
        comm_(comm),
        role_(std::move(role)),
        comms_(std::move(comms)),
        first_(comm.rank()),
        parent_(parent),
        bytes_(bytes) {
    const bool root = role_.recv_depth < 0;
    if (!root && broadcast_) {
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
    std::span<const std::byte> range = broadcast_ && root ? b.send.subspan(bytes_) : b.send;
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
      if (log) log->add({c.depth, first_, c.start, piece.size()});
    }
    if (broadcast_) {  // the long message holds the messages of ranks 1 .. p - 1
      std::memcpy(b.recv.data(), root ? b.send.data() : range.data() + (first_ - 1) * bytes_, bytes_);
    } else if (root || !staging_.empty()) {
      std::memcpy(b.recv.data(), range.data(), bytes_);
    }
    co_await comm_.process().wait_all(std::span(sends_.data(), role_.children.size()));
  }

  Task<void> gather(Buffers b, TransferLog* log) {
    const bool root = role_.recv_depth < 0;
    std::span<std::byte> range = root ? b.recv : std::span<std::byte>(staging_);
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
    if (root) co_return;
    const auto depth = static_cast<std::uint32_t>(role_.recv_depth);
    const std::span<const std::byte> mine = role_.children.empty() ? b.send : std::span<const std::byte>(range);
    if (log) log->add({role_.depths - 1 - depth, first_, parent_, mine.size()});
    co_await comms_[depth].send(0, mine);
  }

 private:
  Operation op_;
  bool broadcast_;
  Communicator comm_;
  TreeRole role_;
  std::vector<Communicator> comms_;  // per level; null where this process is in no sub-machine
  std::uint32_t first_;              // this process's rank: its range starts here
  std::uint32_t parent_;             // the leader it hears from / reports to
  std::uint64_t bytes_;
  std::vector<std::byte> staging_;
  std::vector<SendTicket> sends_;
  std::vector<RecvTicket> recvs_;
};

}  // namespace

Task<std::unique_ptr<AlgorithmState>> make_tree_algorithm(Communicator comm, Operation op, std::string_view algorithm,
                                                          std::uint64_t bytes) {
  const bool broadcast = algorithm == "1-lev-our-br";
  const TreeShape shape = broadcast ? TreeShape{TreeShape::kGamma, 0.5} : tree_shape(algorithm);
  const Rank p = comm.size(), me = comm.rank();
  TreeRole role = tree_role(shape, p, me);
  std::vector<Communicator> comms(role.depths);
  for (std::uint32_t d = 0; d < role.depths; ++d) {
    const std::int64_t color = role.color[d] < 0 ? Communicator::kUndefined : role.color[d];
    comms[d] = co_await comm.split(color, me);
  }
  std::uint32_t parent = 0;
  if (role.recv_depth >= 0) parent = comm.rank_of_job_rank(comms[role.recv_depth].job_rank(0));
  co_return std::make_unique<TreeAlgorithm>(op, broadcast, comm, std::move(role), std::move(comms), parent, bytes);
}

}  // namespace switchyard::collectives::detail
