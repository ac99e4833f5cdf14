#pragma once
// The static tasks of the hierarchy (Varvarigos section 2.1, Fig. 1) as slot
// tasks on a virtual network: which node sends which packet to which nodes.
// (TaskKind, not Task: switchyard::Task is the coroutine type.)
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/primitives/slot_schedule.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::primitives {

/// The tasks of Varvarigos section 2.1 the slot model routes.
enum class TaskKind : std::uint8_t {
  one_to_one,
  snb,
  sna,
  ssnb,
  ssna,
  sns,
  sng,
  ssns,
  ssng,
  permutation,
  mnb,
  pmnb,
  pmna,
  te,
  pmns,
  pmng,
};
/// Every task, in the order of TaskKind.
inline constexpr TaskKind kAllTasks[] = {TaskKind::one_to_one, TaskKind::snb,         TaskKind::sna,  TaskKind::ssnb,
                                         TaskKind::ssna,       TaskKind::sns,         TaskKind::sng,  TaskKind::ssns,
                                         TaskKind::ssng,       TaskKind::permutation, TaskKind::mnb,  TaskKind::pmnb,
                                         TaskKind::pmna,       TaskKind::te,          TaskKind::pmns, TaskKind::pmng};

std::string_view task_name(TaskKind task) noexcept;  ///< "one-to-one", "snb", ...
/// The task named `name` (as task_name() writes it), or nullopt.
std::optional<TaskKind> parse_task(std::string_view name) noexcept;
bool task_combines(TaskKind task) noexcept;  ///< SNA, SSNA, PMNA
bool task_uses_active_set(TaskKind task) noexcept;  ///< the selective and partial tasks

/// What make_task draws a task's instance from.
struct TaskOptions {
  Node root = 0;  ///< the single node of the single-node tasks and the origin of one-to-one
  double active_fraction = 0.5;  ///< share of the nodes in the active set (selective / partial tasks)
  std::uint64_t seed = 1;  ///< draws the active set and the permutation
};

/// A task instance: the packets, plus what the algorithms need to know about them.
struct TaskInstance {
  TaskKind task = TaskKind::snb;  ///< which task
  Node root = 0;  ///< the single node of the single-node tasks and the origin of one-to-one
  /// one-to-one: {destination}, a node farthest from the root. Selective tasks:
  /// the chosen nodes other than the root. Partial tasks: the broadcasting
  /// (PMNB, PMNS) or collecting (PMNA, PMNG) nodes, at least one. Sorted.
  std::vector<Node> active;
  /// permutation: target[v] is where v sends (target[v] == v: v sends nothing).
  std::vector<Node> target;
  PacketSet packets;  ///< the task's packets
};

/// Builds the instance. Throws InvalidArgument for a root outside the
/// network or a fraction outside [0, 1], and refuses a task whose packets
/// would not fit in memory (a TE or MNB on 10^5 nodes) with the reason.
TaskInstance make_task(TaskKind task, const VirtualNetwork& network, const TaskOptions& options);
/// The packets and deliveries make_task would build for `task` on n nodes,
/// without building them: for estimates made before any memory is touched.
/// Exact, but for a permutation: n, of which the nodes that are their own
/// target send nothing.
std::pair<std::int64_t, std::int64_t> task_size(TaskKind task, Node n, const TaskOptions& options);

}  // namespace switchyard::primitives
