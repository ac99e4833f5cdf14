#include "open_shop.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <queue>
#include <stdexcept>
#include <utility>

namespace switchyard::schedulers::detail {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

class OpenShop {
 public:
  explicit OpenShop(const CommMatrix& m);
  std::vector<Phase> run();

 private:
  // Side 0 holds the rows (senders), side 1 the columns (receivers).
  struct Side {
    // The unfinished messages of vertex v are list[first[v] .. first[v] + live[v]),
    // largest first at the start; a finished one is swapped out in O(1).
    std::vector<std::uint32_t> first, live, list;
    std::vector<std::uint32_t> mate;  // the matched message, or kNone
    std::vector<std::uint64_t> load;  // bytes still to move
    std::vector<std::uint32_t> seen, cursor;  // path searches
  };
  struct Line {
    int side;
    std::uint32_t vertex;
  };

  void match(std::uint32_t e);
  void unmatch(std::uint32_t e);
  void finish(std::uint32_t e);
  void push_idle(int s, std::uint32_t v);
  // The idle (unmatched, unfinished) line with the most bytes left, if any.
  bool idle_top(Line& line, std::uint64_t& load);
  std::uint32_t next_stamp();
  bool search(int s, std::uint32_t root, bool may_drop, std::uint32_t stamp);
  void commit(int s, std::uint32_t dropped_edge);
  void repair();
  std::uint64_t phase_length() const;

  std::uint32_t n_;
  std::uint64_t time_left_;
  std::array<Side, 2> side_;
  std::array<std::vector<std::uint32_t>, 2> end_, pos_;  // a message's ends and places in the lists
  std::vector<std::uint64_t> left_, sent_;              // per message: bytes left and sent
  std::vector<std::uint32_t> matched_, matched_pos_;    // the matching as a list of messages
  // Idle lines by load, stale entries skipped on the way out (a line's load
  // only changes while it is matched, so an entry stays right while it idles).
  std::priority_queue<std::pair<std::uint64_t, std::uint32_t>> idle_;
  std::vector<Line> freed_;
  std::vector<std::uint32_t> stack_, path_, finished_;
  std::uint32_t stamp_ = 0;
};

OpenShop::OpenShop(const CommMatrix& m) : n_(m.size()), time_left_(m.max_load_bytes()) {
  const std::uint64_t messages = m.messages();
  if (messages >= kNone) throw std::length_error("switchyard: optimal-bytes: too many messages");
  for (Side& s : side_) {
    s.first.assign(n_ + std::size_t{1}, 0);
    s.live.assign(n_, 0);
    s.list.resize(messages);
    s.mate.assign(n_, kNone);
    s.load.assign(n_, 0);
    s.seen.assign(n_, 0);
    s.cursor.assign(n_, 0);
  }
  for (auto& v : end_) v.resize(messages);
  for (auto& v : pos_) v.resize(messages);
  left_.resize(messages);
  sent_.assign(messages, 0);
  matched_pos_.assign(messages, kNone);
  std::uint32_t e = 0;
  for (Rank i = 0; i < n_; ++i)
    for (const MatrixEntry& entry : m.row(i)) {
      if (entry.bytes == 0) continue;
      end_[0][e] = i;
      end_[1][e] = entry.peer;
      left_[e] = entry.bytes;
      for (int s = 0; s < 2; ++s) {
        ++side_[s].live[end_[s][e]];
        side_[s].load[end_[s][e]] += entry.bytes;
      }
      ++e;
    }
  for (int s = 0; s < 2; ++s) {
    Side& side = side_[s];
    for (std::uint32_t v = 0; v < n_; ++v) side.first[v + 1] = side.first[v] + side.live[v];
    std::vector<std::uint32_t> fill(side.first.begin(), side.first.end() - 1);
    for (std::uint32_t k = 0; k < e; ++k) side.list[fill[end_[s][k]]++] = k;
    // Largest first: the searches then prefer messages that last.
    for (std::uint32_t v = 0; v < n_; ++v)
      std::stable_sort(side.list.begin() + side.first[v], side.list.begin() + side.first[v + 1],
                       [&](std::uint32_t a, std::uint32_t b) { return left_[a] > left_[b]; });
    for (std::uint32_t k = 0; k < e; ++k) pos_[s][side.list[k]] = k;
  }
}

void OpenShop::match(std::uint32_t e) {
  for (int s = 0; s < 2; ++s) side_[s].mate[end_[s][e]] = e;
  matched_pos_[e] = static_cast<std::uint32_t>(matched_.size());
  matched_.push_back(e);
}

void OpenShop::unmatch(std::uint32_t e) {
  for (int s = 0; s < 2; ++s) side_[s].mate[end_[s][e]] = kNone;
  const std::uint32_t last = matched_.back();
  matched_[matched_pos_[e]] = last;
  matched_pos_[last] = matched_pos_[e];
  matched_.pop_back();
  matched_pos_[e] = kNone;
}

// A finished message leaves the matching and both lists; its ends look for new partners.
void OpenShop::finish(std::uint32_t e) {
  unmatch(e);
  for (int s = 0; s < 2; ++s) {
    Side& side = side_[s];
    const std::uint32_t v = end_[s][e];
    const std::uint32_t last = side.list[side.first[v] + --side.live[v]];
    side.list[pos_[s][e]] = last;
    pos_[s][last] = pos_[s][e];
    freed_.push_back(Line{s, v});
    push_idle(s, v);
  }
}

void OpenShop::push_idle(int s, std::uint32_t v) {
  if (side_[s].live[v] != 0) idle_.emplace(side_[s].load[v], static_cast<std::uint32_t>(s) * n_ + v);
}

bool OpenShop::idle_top(Line& line, std::uint64_t& load) {
  while (!idle_.empty()) {
    const auto [l, id] = idle_.top();
    const int s = id < n_ ? 0 : 1;
    const std::uint32_t v = id - static_cast<std::uint32_t>(s) * n_;
    const Side& side = side_[s];
    if (side.mate[v] == kNone && side.live[v] != 0 && side.load[v] == l) {
      line = Line{s, v};
      load = l;
      return true;
    }
    idle_.pop();
  }
  return false;
}

std::uint32_t OpenShop::next_stamp() {
  if (++stamp_ == 0) {  // wrapped: old marks could alias the new stamp
    for (Side& s : side_) std::fill(s.seen.begin(), s.seen.end(), 0);
    stamp_ = 1;
  }
  return stamp_;
}

// An alternating path from the unmatched vertex root of side s, depth first
// with an explicit stack (paths can be as long as the graph). It ends at an
// unmatched vertex of the other side (augmenting: every matched vertex stays
// matched) or, when may_drop, at a matched vertex of side s that is not tight,
// which gives up its message: that keeps every tight line covered. Vertices
// marked with stamp are not entered again.
bool OpenShop::search(int s, std::uint32_t root, bool may_drop, std::uint32_t stamp) {
  Side& side = side_[s];
  const Side& other = side_[1 - s];
  stack_.clear();
  stack_.push_back(root);
  side.seen[root] = stamp;
  side.cursor[root] = 0;
  // Look ahead: a free partner of the root makes a path of one message,
  // where the depth-first walk below would wander through matched vertices.
  for (std::uint32_t k = 0; k < side.live[root]; ++k)
    if (other.mate[end_[1 - s][side.list[side.first[root] + k]]] == kNone) {
      side.cursor[root] = k;
      commit(s, kNone);
      return true;
    }
  while (!stack_.empty()) {
    const std::uint32_t x = stack_.back();
    if (side.cursor[x] == side.live[x]) {
      stack_.pop_back();
      if (!stack_.empty()) ++side.cursor[stack_.back()];
      continue;
    }
    const std::uint32_t e = side.list[side.first[x] + side.cursor[x]];
    const std::uint32_t f = other.mate[end_[1 - s][e]];
    if (f == kNone) {
      commit(s, kNone);
      return true;
    }
    const std::uint32_t w = end_[s][f];
    if (side.seen[w] == stamp) {
      ++side.cursor[x];
      continue;
    }
    side.seen[w] = stamp;
    if (may_drop && side.load[w] < time_left_) {
      commit(s, f);
      return true;
    }
    side.cursor[w] = 0;
    stack_.push_back(w);
  }
  return false;
}

// Every vertex on the stack takes the message its cursor points at; the
// partners those messages had are released first. dropped_edge: the message
// of the non-tight vertex the path ends at, which becomes idle.
void OpenShop::commit(int s, std::uint32_t dropped_edge) {
  Side& side = side_[s];
  const Side& other = side_[1 - s];
  path_.clear();
  for (std::uint32_t x : stack_) path_.push_back(side.list[side.first[x] + side.cursor[x]]);
  // Each vertex of the path after the root was matched to the other end of
  // the message before it: releasing the other ends' partners releases them.
  for (std::uint32_t e : path_)
    if (const std::uint32_t f = other.mate[end_[1 - s][e]]; f != kNone) unmatch(f);
  for (std::uint32_t e : path_) match(e);
  if (dropped_edge != kNone) push_idle(s, end_[s][dropped_edge]);
}

// Lines freed by the last phase look for partners (one shared stamp: a vertex
// a failed search saw is not searched again this phase), then every tight idle
// line is covered, which must succeed.
void OpenShop::repair() {
  const std::uint32_t stamp = next_stamp();
  for (const Line& l : freed_)
    if (side_[l.side].mate[l.vertex] == kNone && side_[l.side].live[l.vertex] != 0 &&
        side_[l.side].seen[l.vertex] != stamp)
      search(l.side, l.vertex, false, stamp);
  freed_.clear();
  Line line{};
  std::uint64_t load = 0;
  while (idle_top(line, load) && load == time_left_)
    if (!search(line.side, line.vertex, true, next_stamp()))
      throw std::logic_error("switchyard: optimal-bytes found no matching covering the tight lines");
}

// The longest phase that keeps every load <= the time left after it and
// spends at most slack / (messages left) of a line's slack on a message that
// finishes early; never longer than the longest matched message.
std::uint64_t OpenShop::phase_length() const {
  std::uint64_t longest = 0, length = std::numeric_limits<std::uint64_t>::max();
  for (std::uint32_t e : matched_) {
    longest = std::max(longest, left_[e]);
    for (int s = 0; s < 2; ++s) {
      const Side& side = side_[s];
      const std::uint32_t v = end_[s][e];
      length = std::min(length, left_[e] + (time_left_ - side.load[v]) / side.live[v]);
    }
  }
  return std::min(length, longest);
}

std::vector<Phase> OpenShop::run() {
  std::vector<Phase> phases;
  for (int s = 0; s < 2; ++s)
    for (std::uint32_t v = 0; v < n_; ++v)
      if (side_[s].live[v] != 0) {
        freed_.push_back(Line{s, v});
        push_idle(s, v);
      }
  while (time_left_ != 0) {
    repair();
    std::uint64_t length = phase_length();
    Line line{};
    std::uint64_t idle_load = 0;
    if (idle_top(line, idle_load)) length = std::min(length, time_left_ - idle_load);
    if (length == 0) throw std::logic_error("switchyard: optimal-bytes: an empty phase");
    Phase phase;
    phase.reserve(matched_.size());
    finished_.clear();
    for (std::uint32_t e : matched_) {
      const std::uint64_t piece = std::min(length, left_[e]);
      phase.push_back(Transfer{end_[0][e], end_[1][e], sent_[e], piece});
      sent_[e] += piece;
      left_[e] -= piece;
      for (int s = 0; s < 2; ++s) side_[s].load[end_[s][e]] -= piece;
      if (left_[e] == 0) finished_.push_back(e);
    }
    time_left_ -= length;
    for (std::uint32_t e : finished_) finish(e);
    phases.push_back(std::move(phase));
  }
  return phases;
}

}  // namespace

std::vector<Phase> open_shop_phases(const CommMatrix& m) { return OpenShop(m).run(); }

}  // namespace switchyard::schedulers::detail
