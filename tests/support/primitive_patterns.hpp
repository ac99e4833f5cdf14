#pragma once
// Communication patterns for the tests of the task hierarchy (test_classify,
// test_primitive_calls): task instances and random patterns.

#include <algorithm>
#include <random>
#include <vector>

#include <switchyard/primitives/task_hierarchy.hpp>

namespace sytest {

using switchyard::primitives::Packets;
using switchyard::primitives::Pattern;
using switchyard::primitives::Receivers;
using switchyard::primitives::Senders;
using switchyard::primitives::TaskShape;
using PatternRank = switchyard::primitives::Rank;

inline Pattern empty_pattern(PatternRank n) {
  Pattern p;
  p.processes = n;
  p.sends.resize(n);
  p.bytes = 8;
  return p;
}
inline void add(Pattern& p, PatternRank s, PatternRank d) {
  if (s == d) return;
  auto& to = p.sends[s].to;
  to.insert(std::upper_bound(to.begin(), to.end(), d), d);
}

// The instance of a task with senders S and receivers R (kOneEach: the pairs
// S[i] -> R[i]), as a pattern with the task's kind of packets.
inline Pattern instance(const TaskShape& shape, PatternRank n, const std::vector<PatternRank>& senders,
                        const std::vector<PatternRank>& receivers) {
  Pattern p = empty_pattern(n);
  if (shape.receivers == Receivers::kOneEach) {
    for (std::size_t i = 0; i < senders.size(); ++i) add(p, senders[i], receivers[i]);
  } else {
    for (PatternRank s : senders)
      for (PatternRank d : receivers) add(p, s, d);
  }
  for (auto& s : p.sends) s.same_packet = shape.packets == Packets::kCopied;
  p.combinable = shape.packets == Packets::kCombined;
  return p;
}

inline std::vector<PatternRank> range(PatternRank from, PatternRank to) {
  std::vector<PatternRank> r;
  for (PatternRank i = from; i < to; ++i) r.push_back(i);
  return r;
}

// A random instance of a random task: exact shapes, which the combining tasks need.
inline Pattern random_instance(std::mt19937_64& rng, PatternRank n) {
  const TaskShape& shape = switchyard::primitives::kTasks[rng() % switchyard::primitives::kStaticTasks];
  const auto some = [&] {
    std::vector<PatternRank> s;
    for (PatternRank r = 0; r < n; ++r)
      if (rng() % 2) s.push_back(r);
    if (s.empty()) s.push_back(static_cast<PatternRank>(rng() % n));
    return s;
  };
  std::vector<PatternRank> senders, receivers;
  switch (shape.senders) {
    case Senders::kOne:
      senders = {static_cast<PatternRank>(rng() % n)};
      break;
    case Senders::kSome:
      senders = some();
      break;
    case Senders::kEveryone:
      senders = range(0, n);
      break;
  }
  switch (shape.receivers) {
    case Receivers::kOne:
      receivers = {static_cast<PatternRank>(rng() % n)};
      break;
    case Receivers::kSomeCommon:
      receivers = some();
      break;
    case Receivers::kEveryone:
      receivers = range(0, n);
      break;
    case Receivers::kOneEach: {  // a rotation of the senders' ranks by a random shift
      const PatternRank shift = 1 + static_cast<PatternRank>(rng() % std::max<PatternRank>(1, n - 1));
      for (PatternRank s : senders) receivers.push_back((s + shift) % n);
      break;
    }
  }
  return instance(shape, n, senders, receivers);
}

// A random pattern: any pairs, one sender's, one destination's, or a task's instance.
inline Pattern random_pattern(std::mt19937_64& rng, PatternRank n) {
  Pattern p = empty_pattern(n);
  const int style = static_cast<int>(rng() % 4);
  const double density = std::uniform_real_distribution<>(0.05, 1.0)(rng);
  const PatternRank one = static_cast<PatternRank>(rng() % n);
  for (PatternRank s = 0; s < n; ++s)
    for (PatternRank d = 0; d < n; ++d) {
      if (style == 1 && s != one) continue;
      if (style == 2 && d != one) continue;
      if (std::uniform_real_distribution<>(0, 1)(rng) < density) add(p, s, d);
    }
  const bool all_same = rng() % 2;
  for (auto& s : p.sends) s.same_packet = all_same || rng() % 4 == 0;
  p.combinable = rng() % 2;
  if (style == 3) p = random_instance(rng, n);
  bool any = false;
  for (const auto& s : p.sends) any |= !s.to.empty();
  if (!any) add(p, 0, n - 1);
  return p;
}

}  // namespace sytest
