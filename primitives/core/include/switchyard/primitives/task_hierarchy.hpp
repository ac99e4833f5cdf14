#pragma once
// The hierarchy of the static tasks (Varvarigos, section 2.1 and Fig. 1) as
// data, and classify(): the least expensive task of the hierarchy that
// executes a communication pattern. Pure: no runtime (run_pattern.hpp runs a
// pattern through its task).
//
// A pattern says, per process, to whom it sends a packet (of `bytes` bytes),
// whether that packet is the same for all its destinations, and whether packets
// to one destination may be combined (by an associative operator).
//
// Each task is a shape (kTasks): who sends (one process, some, everyone), to
// whom (one common destination, a common set, everyone else, one distinct
// destination each) and what its packets are (one packet copied to every
// destination, packets combined on the way, or personalized packets). A task
// covers a pattern when one of its instances delivers every packet the
// pattern needs:
//   - personalized tasks send a separate packet per (source, destination), so
//     they also carry copied or combinable packets (Fig. 1's "can solve" arcs,
//     e.g. SNS -> SNB); a pair the pattern does not need carries a dummy packet;
//   - copy tasks need every source to send one packet to all its
//     destinations; extra destinations receive a copy they ignore;
//   - combining tasks need combinable packets and exactly the instance's pairs
//     (no operator identity to stand in for a missing contribution).
// Cost: the packets the covering instance transmits (the paper's "number of
// packet transmissions"); ties go to the task lower in Fig. 1's order (the
// special case before its generalization, single node before multinode).

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/types.hpp"

namespace switchyard::primitives {

using switchyard::Rank;

/// The static tasks of Fig. 1, in its order.
enum class StaticTask {
  kOneToOne,
  kSnb,
  kSna,
  kSsnb,
  kSsna,
  kSns,
  kSng,
  kSsns,
  kSsng,
  kPermutation,
  kMnb,
  kPmnb,
  kPmna,
  kTe,
  kPmns,
  kPmng,
};
inline constexpr std::size_t kStaticTasks = 16;  ///< the number of static tasks

/// Who sends in a task: one process, some, or everyone.
enum class Senders { kOne, kSome, kEveryone };
/// To whom a task's senders send.
enum class Receivers {
  kOne,  ///< one destination, common to all senders
  kSomeCommon,  ///< a set of destinations common to all senders (each sender skips itself)
  kEveryone,  ///< every other process
  kOneEach,  ///< one destination per sender, no two the same
};
/// What a task's packets are: copied to every destination, combined on the way, or personalized.
enum class Packets { kCopied, kCombined, kPersonal };

/// A task's shape: a box of Fig. 1.
struct TaskShape {
  StaticTask task;  ///< the task
  std::string_view name;  ///< as on the command line
  Senders senders;  ///< who sends
  Receivers receivers;  ///< to whom
  Packets packets;  ///< copied, combined or personal packets
  int level;  ///< Fig. 1's order, least expensive first
};

/// Fig. 1, the boxes.
inline constexpr std::array<TaskShape, kStaticTasks> kTasks{{
    {StaticTask::kOneToOne, "one-to-one", Senders::kOne, Receivers::kOne, Packets::kPersonal, 0},
    {StaticTask::kSnb, "snb", Senders::kOne, Receivers::kEveryone, Packets::kCopied, 1},
    {StaticTask::kSna, "sna", Senders::kEveryone, Receivers::kOne, Packets::kCombined, 1},
    {StaticTask::kSsnb, "ssnb", Senders::kOne, Receivers::kSomeCommon, Packets::kCopied, 2},
    {StaticTask::kSsna, "ssna", Senders::kSome, Receivers::kOne, Packets::kCombined, 2},
    {StaticTask::kSns, "sns", Senders::kOne, Receivers::kEveryone, Packets::kPersonal, 3},
    {StaticTask::kSng, "sng", Senders::kEveryone, Receivers::kOne, Packets::kPersonal, 3},
    {StaticTask::kSsns, "ssns", Senders::kOne, Receivers::kSomeCommon, Packets::kPersonal, 4},
    {StaticTask::kSsng, "ssng", Senders::kSome, Receivers::kOne, Packets::kPersonal, 4},
    {StaticTask::kPermutation, "permutation", Senders::kSome, Receivers::kOneEach, Packets::kPersonal, 5},
    {StaticTask::kMnb, "mnb", Senders::kEveryone, Receivers::kEveryone, Packets::kCopied, 6},
    {StaticTask::kPmnb, "pmnb", Senders::kSome, Receivers::kEveryone, Packets::kCopied, 7},
    {StaticTask::kPmna, "pmna", Senders::kEveryone, Receivers::kSomeCommon, Packets::kCombined, 7},
    {StaticTask::kTe, "te", Senders::kEveryone, Receivers::kEveryone, Packets::kPersonal, 8},
    {StaticTask::kPmns, "pmns", Senders::kSome, Receivers::kEveryone, Packets::kPersonal, 9},
    {StaticTask::kPmng, "pmng", Senders::kEveryone, Receivers::kSomeCommon, Packets::kPersonal, 9},
}};

/// The shape of task t.
inline const TaskShape& shape_of(StaticTask t) { return kTasks[static_cast<std::size_t>(t)]; }
/// The task's name, as on the command line.
inline std::string_view task_name(StaticTask t) { return shape_of(t).name; }

/// Fig. 1, the arcs: `from` covers every pattern of `to`.
enum class Arc {
  kGeneralizes,  ///< box inclusion: `to` is a special case of `from`
  kCanSolve,  ///< solid arc: an algorithm for `from` solves `to`
  kMultinode,  ///< dashed arc: `from` is a multinode version of `to`
};
/// One arc of Fig. 1.
struct HierarchyArc {
  StaticTask from;  ///< the task that covers
  StaticTask to;  ///< the task it covers
  Arc kind;  ///< which kind of arc
};
/// Fig. 1, every arc.
inline constexpr std::array<HierarchyArc, 25> kArcs{{
    {StaticTask::kSsnb, StaticTask::kSnb, Arc::kGeneralizes},
    {StaticTask::kSsna, StaticTask::kSna, Arc::kGeneralizes},
    {StaticTask::kSsns, StaticTask::kSns, Arc::kGeneralizes},
    {StaticTask::kSsng, StaticTask::kSng, Arc::kGeneralizes},
    {StaticTask::kPmnb, StaticTask::kMnb, Arc::kGeneralizes},
    {StaticTask::kPmns, StaticTask::kTe, Arc::kGeneralizes},
    {StaticTask::kPmng, StaticTask::kTe, Arc::kGeneralizes},
    {StaticTask::kPermutation, StaticTask::kOneToOne, Arc::kGeneralizes},
    {StaticTask::kSns, StaticTask::kSnb, Arc::kCanSolve},
    {StaticTask::kSng, StaticTask::kSna, Arc::kCanSolve},
    {StaticTask::kSsns, StaticTask::kSsnb, Arc::kCanSolve},
    {StaticTask::kSsng, StaticTask::kSsna, Arc::kCanSolve},
    {StaticTask::kTe, StaticTask::kMnb, Arc::kCanSolve},
    {StaticTask::kPmns, StaticTask::kPmnb, Arc::kCanSolve},
    {StaticTask::kPmng, StaticTask::kPmna, Arc::kCanSolve},
    {StaticTask::kSsnb, StaticTask::kOneToOne, Arc::kCanSolve},
    {StaticTask::kSsns, StaticTask::kOneToOne, Arc::kCanSolve},
    {StaticTask::kMnb, StaticTask::kSnb, Arc::kMultinode},
    {StaticTask::kPmnb, StaticTask::kSsnb, Arc::kMultinode},
    {StaticTask::kPmna, StaticTask::kSna, Arc::kMultinode},
    {StaticTask::kTe, StaticTask::kSns, Arc::kMultinode},
    {StaticTask::kPmns, StaticTask::kSsns, Arc::kMultinode},
    {StaticTask::kPmng, StaticTask::kSsng, Arc::kMultinode},
    {StaticTask::kPermutation, StaticTask::kOneToOne, Arc::kMultinode},
    {StaticTask::kPmns, StaticTask::kSsng, Arc::kCanSolve},
}};

/// What one process sends.
struct PatternSends {
  std::vector<Rank> to;  ///< destinations, strictly increasing, never the process itself
  bool same_packet = false;  ///< one packet, copied to every destination
};

/// A communication pattern: who sends a packet to whom (see the file's description).
struct Pattern {
  Rank processes = 0;  ///< the processes, ranks 0 .. processes - 1
  std::vector<PatternSends> sends;  ///< one per process
  bool combinable = false;  ///< packets to one destination may be combined
  std::uint64_t bytes = 0;  ///< of every packet
};

/// A task instance that executes a pattern.
struct Classification {
  StaticTask task = StaticTask::kTe;  ///< the task of the instance
  std::vector<Rank> senders;  ///< the instance's senders (everyone: all ranks)
  std::vector<Rank> receivers;  ///< its common destinations (kOne, kSomeCommon); everyone: all ranks; kOneEach: empty
  std::uint64_t transmissions = 0;  ///< packets the instance sends
};

namespace detail {

/// Throws InvalidArgument naming the process and entry of a malformed pattern.
inline void check_pattern(const Pattern& p) {
  const auto bad = [](const std::string& m) { throw InvalidArgument("switchyard::primitives::classify: " + m); };
  if (p.sends.size() != p.processes) {
    bad("the pattern has " + std::to_string(p.sends.size()) + " senders' entries for " + std::to_string(p.processes) +
        " processes");
  }
  bool any = false;
  for (Rank s = 0; s < p.processes; ++s) {
    const auto& to = p.sends[s].to;
    for (std::size_t i = 0; i < to.size(); ++i) {
      const std::string where =
          "process " + std::to_string(s) + "'s destination " + std::to_string(i) + " (" + std::to_string(to[i]) + ")";
      if (to[i] >= p.processes) bad(where + " is not a process");
      if (to[i] == s) bad(where + " is the process itself");
      if (i > 0 && to[i] <= to[i - 1]) bad(where + " is out of order or repeated");
    }
    any |= !to.empty();
  }
  if (!any) bad("the pattern sends nothing");
}

inline std::vector<Rank> all_ranks(Rank n) {
  std::vector<Rank> r(n);
  for (Rank i = 0; i < n; ++i) r[i] = i;
  return r;
}

/// The cheapest instance of `shape` covering p, if any (p checked).
inline std::optional<Classification> cover(const TaskShape& shape, const Pattern& p) {
  const Rank n = p.processes;
  std::vector<Rank> sources, destinations;
  std::uint64_t pairs = 0;
  bool copies_ok = true, distinct = true, one_each = true;
  std::vector<char> seen(n, 0);
  for (Rank s = 0; s < n; ++s) {
    const auto& to = p.sends[s].to;
    if (to.empty()) continue;
    sources.push_back(s);
    pairs += to.size();
    copies_ok &= p.sends[s].same_packet || to.size() == 1;
    one_each &= to.size() == 1;
    for (Rank d : to) {
      distinct &= !seen[d];
      seen[d] = 1;
    }
  }
  for (Rank d = 0; d < n; ++d) {
    if (seen[d]) destinations.push_back(d);
  }
  if (shape.packets == Packets::kCopied && !copies_ok) return std::nullopt;
  if (shape.packets == Packets::kCombined && !p.combinable) return std::nullopt;

  Classification c;
  c.task = shape.task;
  switch (shape.senders) {
    case Senders::kOne:
      if (sources.size() != 1) return std::nullopt;
      c.senders = sources;
      break;
    case Senders::kSome:
      c.senders = sources;
      break;
    case Senders::kEveryone:
      c.senders = all_ranks(n);
      break;
  }
  const auto inside = [](const std::vector<Rank>& set, Rank r) {
    return std::binary_search(set.begin(), set.end(), r);
  };
  switch (shape.receivers) {
    case Receivers::kOne:
      if (destinations.size() != 1) return std::nullopt;
      c.receivers = destinations;
      break;
    case Receivers::kSomeCommon:
      c.receivers = destinations;
      break;
    case Receivers::kEveryone:
      c.receivers = all_ranks(n);
      break;
    case Receivers::kOneEach:
      if (!one_each || !distinct) return std::nullopt;
      c.transmissions = pairs;
      return c;
  }
  for (Rank s : c.senders) c.transmissions += c.receivers.size() - (inside(c.receivers, s) ? 1 : 0);
  if (shape.packets == Packets::kCombined && c.transmissions != pairs) return std::nullopt;
  return c;
}

}  // namespace detail

/// Whether `task` can execute p, and with which instance (the cheapest).
inline std::optional<Classification> covering_instance(StaticTask task, const Pattern& p) {
  detail::check_pattern(p);
  return detail::cover(shape_of(task), p);
}

/// The least expensive task of the hierarchy that executes p: fewest packet
/// transmissions, then lowest in Fig. 1. Throws InvalidArgument for a
/// malformed or empty pattern. TE covers every pattern, so there always is one.
inline Classification classify(const Pattern& p) {
  detail::check_pattern(p);
  std::optional<Classification> best;
  for (const TaskShape& shape : kTasks) {
    auto c = detail::cover(shape, p);
    if (!c) continue;
    if (!best || c->transmissions < best->transmissions ||
        (c->transmissions == best->transmissions && shape.level < shape_of(best->task).level)) {
      best = std::move(c);
    }
  }
  return *best;
}

}  // namespace switchyard::primitives
