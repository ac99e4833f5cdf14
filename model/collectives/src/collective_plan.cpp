#include "switchyard/model/collectives/collective_plan.hpp"

#include <algorithm>
#include <string>

#include "algorithm_state.hpp"
#include "switchyard/errors.hpp"

namespace switchyard::model::collectives {
namespace {

std::string valid_names(Operation op) {
  std::string s;
  for (const std::string& a : algorithm_names(op)) s += a + ", ";
  return s + "auto";
}

void check_size(std::span<const std::byte> buffer, std::uint64_t want, const char* which, Operation op, Rank rank) {
  if (buffer.size() != want) {
    throw InvalidArgument("switchyard: collective " + std::string(operation_name(op)) + ": rank " +
                          std::to_string(rank) + "'s " + which + " buffer holds " + std::to_string(buffer.size()) +
                          " bytes, expected " + std::to_string(want));
  }
}

}  // namespace

Task<CollectivePlan> CollectivePlan::create(Communicator comm, Operation op, std::string algorithm, std::uint64_t bytes,
                                            const model::Machine* machine, Rank root) {
  if (bytes == 0)
    throw InvalidArgument("switchyard: collective " + std::string(operation_name(op)) + ": L must be positive");
  if (root >= comm.size() || (op == Operation::all_to_all && root != 0)) {
    throw InvalidArgument("switchyard: collective " + std::string(operation_name(op)) + ": root " +
                          std::to_string(root) +
                          (op == Operation::all_to_all
                               ? " (all-to-all has no root; pass 0)"
                               : " is not a rank of the " + std::to_string(comm.size()) + "-process communicator"));
  }
  if (algorithm == "auto") algorithm = choose_algorithm(op, comm.size(), bytes, machine, root);
  if (!is_algorithm(op, algorithm)) {
    throw InvalidArgument("switchyard: collective " + std::string(operation_name(op)) + ": unknown algorithm '" +
                          algorithm + "' (valid: " + valid_names(op) + ")");
  }
  CollectivePlan plan;
  plan.op_ = op;
  plan.algorithm_ = algorithm;
  plan.bytes_ = bytes;
  plan.root_ = root;
  if (op == Operation::all_to_all) {
    plan.state_ = co_await detail::make_all_to_all(comm, algorithm, bytes);
  } else {
    plan.state_ = co_await detail::make_tree_algorithm(comm, op, algorithm, bytes, root);
  }
  plan.comm_ = comm;
  co_return plan;
}

CollectivePlan::CollectivePlan(CollectivePlan&&) noexcept = default;
CollectivePlan& CollectivePlan::operator=(CollectivePlan&&) noexcept = default;
CollectivePlan::~CollectivePlan() = default;

Task<void> CollectivePlan::run(Buffers buffers) {
  const Rank p = comm_.size(), me = comm_.rank();
  const std::uint64_t all = std::uint64_t{p} * bytes_;
  const bool root = me == root_;
  switch (op_) {
    case Operation::one_to_all:
      check_size(buffers.send, root ? all : 0, "send", op_, me);
      check_size(buffers.recv, bytes_, "receive", op_, me);
      break;
    case Operation::all_to_one:
      check_size(buffers.send, bytes_, "send", op_, me);
      check_size(buffers.recv, root ? all : 0, "receive", op_, me);
      break;
    case Operation::all_to_all:
      check_size(buffers.send, all, "send", op_, me);
      check_size(buffers.recv, all, "receive", op_, me);
      break;
  }
  co_await state_->run(buffers, log_);
}

Task<void> collective(Communicator comm, Operation op, std::string algorithm, Buffers buffers,
                      const model::Machine* machine, Rank root) {
  const Rank p = comm.size();
  std::uint64_t bytes = 0;
  switch (op) {
    case Operation::one_to_all:
      bytes = buffers.recv.size();
      break;
    case Operation::all_to_one:
      bytes = buffers.send.size();
      break;
    case Operation::all_to_all:
      bytes = buffers.send.size() / std::max<Rank>(p, 1);
      break;
  }
  CollectivePlan plan = co_await CollectivePlan::create(comm, op, std::move(algorithm), bytes, machine, root);
  co_await plan.run(buffers);
}

}  // namespace switchyard::model::collectives
