#pragma once
// Slot algorithms for every task of the hierarchy on any virtual network, and
// the registry that picks one per (task, network, link model). Each algorithm
// states a bound the CLI prints beside its slot count and the tests check.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/primitives/slot_schedule.hpp"
#include "switchyard/primitives/slot_task.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::primitives {

/// A bound on the slots of a task: a lower bound no algorithm beats, an upper
/// bound this algorithm guarantees, or the optimum (both: the algorithm meets
/// the lower bound).
enum class BoundKind : std::uint8_t { lower, upper, optimum };
/// One bound on a task's slots, with its kind and name.
struct SlotBound {
  BoundKind kind = BoundKind::lower;  ///< lower, upper or the optimum
  std::int64_t slots = 0;  ///< the bound, in slots
  std::string name;  ///< "diameter", "ceil(log2 N)", "N-1 receptions at the root", ...
};
std::string_view bound_kind_name(BoundKind kind) noexcept;  ///< "lower bound", "upper bound", "optimum"

/// What a slot algorithm returns: its name, its schedule and its bounds.
struct SlotAlgorithmResult {
  std::string algorithm;  ///< e.g. "binomial tree", "BFS tree, greedy"
  SlotSchedule schedule;  ///< the transmissions, slot by slot
  std::vector<SlotBound> bounds;  ///< the first one is what the CLI calls "the" bound
  /// Set when the schedule also moves packets of the algorithm's own (the PMNB
  /// prefix's counts and offsets): the task's packets with their ids, then
  /// those. Simulate and execute the schedule with this set when it is there.
  std::optional<PacketSet> packets;
};

/// A slot algorithm: network, link model and task instance in, schedule and bounds out.
using SlotAlgorithmFn = SlotAlgorithmResult (*)(const VirtualNetwork&, LinkModel, const TaskInstance&);
/// Whether an algorithm applies (e.g. only to hypercubes, only all-port).
using SlotAlgorithmApplies = bool (*)(const VirtualNetwork&, LinkModel);

/// One registry entry: a task, where the algorithm applies, and the algorithm.
struct SlotAlgorithmEntry {
  TaskKind task;  ///< the task it routes
  SlotAlgorithmApplies applies;  ///< nullptr: any network and link model
  SlotAlgorithmFn run;  ///< the algorithm
};

/// The registry, in src/slot_registry.cpp: for each task the first entry that
/// applies wins, so specialised algorithms are listed before the general ones.
std::span<const SlotAlgorithmEntry> slot_algorithms() noexcept;
/// Runs the first applicable algorithm; throws InvalidArgument if none applies.
SlotAlgorithmResult route(const VirtualNetwork& network, LinkModel model, const TaskInstance& task);

}  // namespace switchyard::primitives
