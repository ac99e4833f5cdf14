// The hierarchy as data (task_hierarchy.hpp): every task's own pattern
// classifies as that task; every arc of Fig. 1 holds (its source covers its
// target's patterns); and random patterns classify to an instance that covers
// them, at the cost a brute force finds by enumerating every instance of
// every task (all roots, all subsets, all partial permutations) on up to 6
// processes, and no costlier.

#include <switchyard/primitives/task_hierarchy.hpp>

#include <gtest/gtest.h>
#include <switchyard/errors.hpp>

#include <algorithm>
#include <functional>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "primitive_patterns.hpp"

namespace {

using namespace switchyard::primitives;
using namespace sytest;
using Pairs = std::set<std::pair<Rank, Rank>>;

// Each task's own pattern on n >= 6 processes: root 2 (one-to-one: 2 -> 4), subsets of 2..n-2 members.
Pattern own_pattern(StaticTask t, Rank n) {
  const TaskShape& shape = shape_of(t);
  const std::vector<Rank> some{1, 3, n - 1};
  std::vector<Rank> senders, receivers;
  switch (shape.senders) {
    case Senders::kOne:
      senders = {2};
      break;
    case Senders::kSome:
      senders = some;
      break;
    case Senders::kEveryone:
      senders = range(0, n);
      break;
  }
  switch (shape.receivers) {
    case Receivers::kOne:
      receivers = {shape.senders == Senders::kOne ? 4u : 2u};
      break;
    case Receivers::kSomeCommon:
      receivers = t == StaticTask::kSsnb || t == StaticTask::kSsns ? some : std::vector<Rank>{0, 4};
      break;
    case Receivers::kEveryone:
      receivers = range(0, n);
      break;
    case Receivers::kOneEach:
      receivers = {4, 0, 2};
      break;
  }
  return instance(shape, n, senders, receivers);
}

Pairs pairs_of(const Pattern& p) {
  Pairs out;
  for (Rank s = 0; s < p.processes; ++s)
    for (Rank d : p.sends[s].to) out.insert({s, d});
  return out;
}

TEST(Classify, EveryTasksOwnPatternClassifiesAsItself) {
  for (Rank n : {6u, 9u, 16u}) {
    for (const TaskShape& shape : kTasks) {
      const Classification c = classify(own_pattern(shape.task, n));
      EXPECT_EQ(task_name(c.task), shape.name) << "n " << n;
      EXPECT_EQ(c.transmissions, pairs_of(own_pattern(shape.task, n)).size()) << shape.name;
    }
  }
}

TEST(Classify, EveryArcOfTheHierarchyHolds) {
  for (const HierarchyArc& arc : kArcs) {
    const Pattern p = own_pattern(arc.to, 7);
    EXPECT_TRUE(covering_instance(arc.from, p).has_value())
        << task_name(arc.from) << " should cover " << task_name(arc.to) << "'s pattern";
    EXPECT_GE(shape_of(arc.from).level, shape_of(arc.to).level) << task_name(arc.from) << " -> " << task_name(arc.to);
  }
}

TEST(Classify, MalformedPatternsAreInvalidArgument) {
  Pattern p = empty_pattern(4);
  EXPECT_THROW(classify(p), switchyard::InvalidArgument);  // sends nothing
  p.sends[1].to = {1};
  EXPECT_THROW(classify(p), switchyard::InvalidArgument);  // to itself
  p.sends[1].to = {3, 2};
  EXPECT_THROW(classify(p), switchyard::InvalidArgument);  // out of order
  p.sends[1].to = {5};
  EXPECT_THROW(classify(p), switchyard::InvalidArgument);  // not a process
  p.sends.pop_back();
  EXPECT_THROW(classify(p), switchyard::InvalidArgument);  // wrong count
}

// --- brute force: every instance of every task ---

std::vector<std::vector<Rank>> subsets(Rank n) {
  std::vector<std::vector<Rank>> out;
  for (std::uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<Rank> s;
    for (Rank i = 0; i < n; ++i)
      if (mask & (1u << i)) s.push_back(i);
    out.push_back(s);
  }
  return out;
}

// Does an instance (a pattern with the task's kind) execute p?
bool executes(const TaskShape& shape, const Pattern& inst, const Pattern& p) {
  const Pairs need = pairs_of(p), have = pairs_of(inst);
  if (!std::includes(have.begin(), have.end(), need.begin(), need.end())) return false;
  switch (shape.packets) {
    case Packets::kPersonal:
      return true;
    case Packets::kCopied:
      for (const auto& s : p.sends)
        if (s.to.size() > 1 && !s.same_packet) return false;
      return true;
    case Packets::kCombined:
      return p.combinable && have == need;
  }
  return false;
}

// Every instance of `shape` on n processes.
void for_each_instance(const TaskShape& shape, Rank n, const std::function<void(const Pattern&)>& f) {
  std::vector<std::vector<Rank>> sender_sets, receiver_sets;
  switch (shape.senders) {
    case Senders::kOne:
      for (Rank s = 0; s < n; ++s) sender_sets.push_back({s});
      break;
    case Senders::kSome:
      sender_sets = subsets(n);
      break;
    case Senders::kEveryone:
      sender_sets = {range(0, n)};
      break;
  }
  if (shape.receivers == Receivers::kOneEach) {
    // Every partial injection: each rank sends to nobody (n) or to a distinct other rank.
    std::vector<Rank> to(n, n);
    std::function<void(Rank)> assign = [&](Rank s) {
      if (s == n) {
        std::vector<Rank> from, dest;
        for (Rank i = 0; i < n; ++i)
          if (to[i] != n) from.push_back(i), dest.push_back(to[i]);
        if (!from.empty()) f(instance(shape, n, from, dest));
        return;
      }
      for (Rank d = 0; d <= n; ++d) {
        if (d == s || (d < n && std::find(to.begin(), to.end(), d) != to.end())) continue;
        to[s] = d;
        assign(s + 1);
        to[s] = n;
      }
    };
    assign(0);
    return;
  }
  switch (shape.receivers) {
    case Receivers::kOne:
      for (Rank d = 0; d < n; ++d) receiver_sets.push_back({d});
      break;
    case Receivers::kSomeCommon:
      receiver_sets = subsets(n);
      break;
    default:
      receiver_sets = {range(0, n)};
      break;
  }
  for (const auto& s : sender_sets)
    for (const auto& r : receiver_sets) {
      const Pattern inst = instance(shape, n, s, r);
      if (!pairs_of(inst).empty()) f(inst);
    }
}

TEST(Classify, RandomPatternsGetTheCheapestCoveringTaskByBruteForce) {
  std::mt19937_64 rng(12);
  std::vector<int> chosen(kStaticTasks, 0);
  for (int trial = 0; trial < 400; ++trial) {
    const Rank n = 2 + static_cast<Rank>(rng() % 5);  // 2..6
    const Pattern p = random_pattern(rng, n);
    const Classification c = classify(p);
    // The classification's own instance executes p and costs what it says.
    const TaskShape& shape = shape_of(c.task);
    Pattern inst = shape.receivers == Receivers::kOneEach ? p : instance(shape, n, c.senders, c.receivers);
    if (shape.receivers == Receivers::kOneEach) {
      for (auto& s : inst.sends) s.same_packet = false;
    }
    ASSERT_TRUE(executes(shape, inst, p)) << "trial " << trial << ": " << shape.name << " does not cover the pattern";
    ASSERT_EQ(pairs_of(inst).size(), c.transmissions) << "trial " << trial;
    // Brute force: the cheapest (transmissions, level) over every instance of every task.
    std::uint64_t best = ~0ull;
    int best_level = 1 << 30;
    for (const TaskShape& t : kTasks) {
      for_each_instance(t, n, [&](const Pattern& i) {
        if (!executes(t, i, p)) return;
        const std::uint64_t cost = pairs_of(i).size();
        if (cost < best || (cost == best && t.level < best_level)) best = cost, best_level = t.level;
      });
    }
    ASSERT_EQ(c.transmissions, best) << "trial " << trial << " classified as " << shape.name;
    ASSERT_EQ(shape.level, best_level) << "trial " << trial << " classified as " << shape.name;
    ++chosen[static_cast<std::size_t>(c.task)];
  }
  // The random patterns reached every task.
  for (std::size_t t = 0; t < kStaticTasks; ++t) EXPECT_GT(chosen[t], 0) << kTasks[t].name << " never chosen";
}

}  // namespace
