#include "open_shop.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <utility>

namespace switchyard::schedulers::detail {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
// Work units (messages looked at) one search may spend while raising a
// phase's bottleneck: it gives up past them, which costs at most a shorter
// phase, never the bound (a search that must succeed is not bounded). About
// 32 vertices' messages, at most kSearchBudget: fewer and the phases grow
// (dense 150 x 150 of sizes 1..10^6: 1319 phases at 16 vertices and 2048,
// 800 at 32 and 8192, 796 unbounded), more and the searches that fail, one
// a phase at least, cost more than they save.
constexpr std::uint64_t kSearchBudget = 8192;
constexpr std::uint64_t kSearchVertices = 32;

class OpenShop {
 public:
  explicit OpenShop(const CommMatrix& m);
  std::vector<Phase> run();

 private:
  // Side 0 holds the rows (senders), side 1 the columns (receivers).
  struct Side {
    // The messages of vertex v are list[begin[v] .. stop[v]), largest first
    // at the start, live[v] of them unfinished. A finished one stays in place
    // (0 bytes left), so that the order survives: one at the front is skipped
    // at once, the others once they outnumber the unfinished.
    // Beside each: its other end and bytes left, so that a scan reads
    // memory in order instead of chasing message numbers.
    std::vector<std::uint32_t> first, begin, stop, live, list, list_peer;
    std::vector<std::uint64_t> list_left;
    // All messages of v and their other ends, by the other end: [first[v], first[v + 1]).
    std::vector<std::uint32_t> by_peer, peer;
    std::vector<std::uint32_t> mate;  // the matched message, or kNone
    std::vector<std::uint64_t> load;  // bytes still to move
    std::vector<std::uint32_t> seen, cursor;  // path searches
    // The idle vertices (unmatched, with messages left), in O(1) each way.
    std::vector<std::uint32_t> idle, idle_pos;
    std::vector<std::uint8_t> touched;  // in touched_
    std::vector<std::uint8_t> queued;  // in new_idle_
  };
  struct Line {
    int side;
    std::uint32_t vertex;
  };
  struct Change {
    std::uint32_t message;
    bool matched;
  };

  void match(std::uint32_t e);
  void unmatch(std::uint32_t e);
  void set_idle(int s, std::uint32_t v);
  void finish(std::uint32_t e);
  void touch(int s, std::uint32_t v);
  std::uint64_t slack(int s, std::uint32_t v) const { return time_left_ - side_[s].load[v]; }
  std::uint32_t message_between(int s, std::uint32_t v, std::uint32_t w) const;
  std::uint32_t idle_partner(int s, std::uint32_t v, std::uint64_t floor, std::uint64_t& budget) const;
  std::uint64_t shortest_matched();
  std::uint64_t least_idle_slack(Line& line);
  std::uint64_t value();
  std::uint32_t next_stamp();
  bool search(int s, std::uint32_t root, std::uint64_t v, std::uint64_t budget);
  void commit(int s);
  bool raise_once(std::uint64_t v);
  void undo();
  void raise();
  void fill(std::uint64_t floor);
  void compact_heaps();
  void flush();

  std::uint32_t n_;
  std::uint64_t time_left_, elapsed_ = 0;
  std::array<Side, 2> side_;
  std::array<std::vector<std::uint32_t>, 2> end_, pos_;  // a message's ends and places in the lists
  // On a dense enough matrix (open_shop_grid_bytes), per side the bytes left
  // between v and w at v * n + w (0 for none or finished): a look-ahead tries
  // the idle vertices in v's own stripe of memory instead of scanning v's list.
  std::array<std::vector<std::uint64_t>, 2> grid_left_;
  std::vector<std::uint64_t> left_, sent_;  // per message: bytes left and sent
  std::vector<std::uint32_t> matched_, matched_pos_;  // the matching as a list of messages
  // Matched messages by left + elapsed, which stays put while a message is
  // matched (every matched message sends the whole phase): the smallest on top.
  // Stale entries (unmatched since) are skipped on the way out.
  std::priority_queue<std::pair<std::uint64_t, std::uint32_t>, std::vector<std::pair<std::uint64_t, std::uint32_t>>,
                      std::greater<>>
      short_;
  // Idle lines by load, stale entries skipped on the way out (a line's load
  // only changes while it is matched, so an entry stays right while it idles).
  std::priority_queue<std::pair<std::uint64_t, std::uint32_t>> idle_;
  std::vector<Line> touched_;
  // Matched messages and idle lines not yet in their heap: a path search
  // matches and releases vertices it passes through at once, so they enter
  // the heaps only once the heaps are asked, and only if still so.
  std::vector<std::uint32_t> new_matched_;
  std::vector<std::uint8_t> queued_;  // per message: in new_matched_
  std::vector<Line> new_idle_;
  std::vector<Change> journal_;
  bool journaling_ = false;
  std::vector<std::uint32_t> stack_, path_, finished_, items_;
  std::vector<Line> item_lines_;
  std::uint32_t stamp_ = 0;
  std::uint64_t budget_ = kSearchBudget;
};

OpenShop::OpenShop(const CommMatrix& m) : n_(m.size()), time_left_(m.max_load_bytes()) {
  const std::uint64_t messages = m.messages();
  if (messages >= kNone) throw std::length_error("switchyard: optimal-bytes: too many messages");
  for (Side& s : side_) {
    s.first.assign(n_ + std::size_t{1}, 0);
    s.live.assign(n_, 0);
    s.list.resize(messages);
    s.by_peer.resize(messages);
    s.peer.resize(messages);
    s.mate.assign(n_, kNone);
    s.load.assign(n_, 0);
    s.seen.assign(n_, 0);
    s.cursor.assign(n_, 0);
    s.idle_pos.assign(n_, kNone);
    s.touched.assign(n_, 0);
    s.queued.assign(n_, 0);
  }
  for (auto& v : end_) v.resize(messages);
  for (auto& v : pos_) v.resize(messages);
  left_.resize(messages);
  sent_.assign(messages, 0);
  matched_pos_.assign(messages, kNone);
  queued_.assign(messages, 0);
  if (n_ != 0) budget_ = std::min(kSearchBudget, kSearchVertices * (messages / n_) + 64);
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
  if (open_shop_grid_bytes(n_, e) != 0) {
    for (auto& g : grid_left_) g.assign(std::size_t{n_} * n_, 0);
    for (std::uint32_t k = 0; k < e; ++k)
      for (int s = 0; s < 2; ++s) grid_left_[s][std::size_t{end_[s][k]} * n_ + end_[1 - s][k]] = left_[k];
  }
  for (int s = 0; s < 2; ++s) {
    Side& side = side_[s];
    for (std::uint32_t v = 0; v < n_; ++v) side.first[v + 1] = side.first[v] + side.live[v];
    // Messages are numbered row by row, each row by column: filling in that
    // order sorts every vertex's messages by their other end.
    std::vector<std::uint32_t> fill(side.first.begin(), side.first.end() - 1);
    for (std::uint32_t k = 0; k < e; ++k) side.by_peer[fill[end_[s][k]]++] = k;
    side.list = side.by_peer;
    // Largest first: the searches then prefer messages that last.
    for (std::uint32_t v = 0; v < n_; ++v)
      std::stable_sort(side.list.begin() + side.first[v], side.list.begin() + side.first[v + 1],
                       [&](std::uint32_t a, std::uint32_t b) { return left_[a] > left_[b]; });
    side.begin.assign(side.first.begin(), side.first.end() - 1);
    side.stop.assign(side.first.begin() + 1, side.first.end());
    side.list_peer.resize(e);
    side.list_left.resize(e);
    for (std::uint32_t k = 0; k < e; ++k) {
      pos_[s][side.list[k]] = k;
      side.list_peer[k] = end_[1 - s][side.list[k]];
      side.list_left[k] = left_[side.list[k]];
      side.peer[k] = end_[1 - s][side.by_peer[k]];
    }
  }
}

// Keeps v's membership of the idle vertices and the idle heap right.
void OpenShop::set_idle(int s, std::uint32_t v) {
  Side& side = side_[s];
  const bool idle = side.mate[v] == kNone && side.live[v] != 0;
  if (idle == (side.idle_pos[v] != kNone)) return;
  if (idle) {
    side.idle_pos[v] = static_cast<std::uint32_t>(side.idle.size());
    side.idle.push_back(v);
    if (!side.queued[v]) {
      side.queued[v] = 1;
      new_idle_.push_back(Line{s, v});
    }
  } else {
    const std::uint32_t last = side.idle.back();
    side.idle[side.idle_pos[v]] = last;
    side.idle_pos[last] = side.idle_pos[v];
    side.idle.pop_back();
    side.idle_pos[v] = kNone;
  }
}

void OpenShop::match(std::uint32_t e) {
  if (journaling_) journal_.push_back(Change{e, true});
  for (int s = 0; s < 2; ++s) {
    side_[s].mate[end_[s][e]] = e;
    set_idle(s, end_[s][e]);
  }
  matched_pos_[e] = static_cast<std::uint32_t>(matched_.size());
  matched_.push_back(e);
  if (!queued_[e]) {
    queued_[e] = 1;
    new_matched_.push_back(e);
  }
}

void OpenShop::unmatch(std::uint32_t e) {
  if (journaling_) journal_.push_back(Change{e, false});
  for (int s = 0; s < 2; ++s) {
    side_[s].mate[end_[s][e]] = kNone;
    set_idle(s, end_[s][e]);
    touch(s, end_[s][e]);
  }
  const std::uint32_t last = matched_.back();
  matched_[matched_pos_[e]] = last;
  matched_pos_[last] = matched_pos_[e];
  matched_.pop_back();
  matched_pos_[e] = kNone;
}

void OpenShop::touch(int s, std::uint32_t v) {
  if (side_[s].touched[v]) return;
  side_[s].touched[v] = 1;
  touched_.push_back(Line{s, v});
}

// A finished message leaves the matching and both lists.
void OpenShop::finish(std::uint32_t e) {
  unmatch(e);
  for (int s = 0; s < 2; ++s) {
    Side& side = side_[s];
    const std::uint32_t v = end_[s][e];
    --side.live[v];
    while (side.begin[v] != side.stop[v] && side.list_left[side.begin[v]] == 0) ++side.begin[v];
    if (side.stop[v] - side.begin[v] > 2 * side.live[v] + 16) {
      std::uint32_t to = side.begin[v];
      for (std::uint32_t k = side.begin[v]; k != side.stop[v]; ++k)
        if (side.list_left[k] != 0) {
          side.list[to] = side.list[k];
          side.list_peer[to] = side.list_peer[k];
          side.list_left[to] = side.list_left[k];
          pos_[s][side.list[to]] = to;
          ++to;
        }
      side.stop[v] = to;
    }
    set_idle(s, v);
  }
}

// The message between v (side s) and w (the other side), or kNone.
std::uint32_t OpenShop::message_between(int s, std::uint32_t v, std::uint32_t w) const {
  const Side& side = side_[s];
  // A vertex with a message to everyone holds w's at place w.
  if (const std::uint32_t at = side.first[v] + w; at < side.first[v + 1] && side.peer[at] == w) return side.by_peer[at];
  const auto begin = side.peer.begin() + side.first[v], end = side.peer.begin() + side.first[v + 1];
  const auto it = std::lower_bound(begin, end, w);
  return it != end && *it == w ? side.by_peer[static_cast<std::size_t>(it - side.peer.begin())] : kNone;
}

// An unfinished message of at least floor bytes from v (side s) to an idle
// vertex, or kNone, the first found: through the idle vertices in v's stripe
// of the grid when there is one and they are fewer than v's messages, through
// the idle vertices by search when they are 16 times fewer, else along v's
// list (largest first as far as the sizes at the start go). Each message
// looked at costs a unit of budget.
std::uint32_t OpenShop::idle_partner(int s, std::uint32_t v, std::uint64_t floor, std::uint64_t& budget) const {
  const Side& side = side_[s];
  const Side& other = side_[1 - s];
  if (!grid_left_[s].empty() && other.idle.size() < side.live[v]) {
    const std::uint64_t* stripe = grid_left_[s].data() + std::size_t{v} * n_;
    for (std::uint32_t w : other.idle) {
      if (budget == 0) return kNone;
      --budget;
      if (stripe[w] >= floor) return message_between(s, v, w);
    }
    return kNone;
  }
  if (other.idle.size() * 16 < side.live[v]) {
    for (std::uint32_t w : other.idle) {
      if (budget == 0) return kNone;
      --budget;
      if (const std::uint32_t e = message_between(s, v, w); e != kNone && left_[e] >= floor) return e;
    }
    return kNone;
  }
  for (std::uint32_t k = side.begin[v]; k < side.stop[v] && budget != 0; ++k, --budget)
    if (side.list_left[k] >= floor && other.mate[side.list_peer[k]] == kNone) return side.list[k];
  return kNone;
}

void OpenShop::flush() {
  for (std::uint32_t e : new_matched_) {
    queued_[e] = 0;
    if (matched_pos_[e] != kNone) short_.emplace(left_[e] + elapsed_, e);
  }
  new_matched_.clear();
  for (const Line& l : new_idle_) {
    Side& side = side_[l.side];
    side.queued[l.vertex] = 0;
    if (side.idle_pos[l.vertex] != kNone)
      idle_.emplace(side.load[l.vertex], static_cast<std::uint32_t>(l.side) * n_ + l.vertex);
  }
  new_idle_.clear();
}

std::uint64_t OpenShop::shortest_matched() {
  flush();
  while (!short_.empty()) {
    const auto [key, e] = short_.top();
    if (matched_pos_[e] != kNone && left_[e] + elapsed_ == key) return left_[e];
    short_.pop();
  }
  return kNever;
}

std::uint64_t OpenShop::least_idle_slack(Line& line) {
  flush();
  while (!idle_.empty()) {
    const auto [l, id] = idle_.top();
    const int s = id < n_ ? 0 : 1;
    const std::uint32_t v = id - static_cast<std::uint32_t>(s) * n_;
    if (side_[s].idle_pos[v] != kNone && side_[s].load[v] == l) {
      line = Line{s, v};
      return time_left_ - l;
    }
    idle_.pop();
  }
  return kNever;
}

// The phase the current matching allows: every matched message sends it
// whole and every idle line can afford to wait through it.
std::uint64_t OpenShop::value() {
  Line line{};
  return std::min({shortest_matched(), least_idle_slack(line), time_left_});
}

std::uint32_t OpenShop::next_stamp() {
  if (++stamp_ == 0) {  // wrapped: old marks could alias the new stamp
    for (Side& s : side_) std::fill(s.seen.begin(), s.seen.end(), 0);
    stamp_ = 1;
  }
  return stamp_;
}

// An alternating path from the idle vertex root of side s through messages of
// more than v bytes, depth first with an explicit stack (paths can be as long
// as the graph). It ends at an idle vertex of the other side, or at a matched
// vertex of side s whose slack exceeds v, which gives up its message: every
// line that needs the phase's length v covered stays covered. Gives up past
// budget units of work.
bool OpenShop::search(int s, std::uint32_t root, std::uint64_t v, std::uint64_t budget) {
  Side& side = side_[s];
  const Side& other = side_[1 - s];
  const std::uint32_t stamp = next_stamp();
  stack_.assign(1, root);
  path_.assign(1, kNone);  // path_[k]: the message stack_[k] takes
  side.seen[root] = stamp;
  side.cursor[root] = side.begin[root];
  bool look_ahead = true;
  while (!stack_.empty()) {
    const std::uint32_t x = stack_.back();
    // Look ahead: an idle partner ends the path here, where the depth-first
    // walk would wander through matched vertices.
    if (look_ahead) {
      look_ahead = false;
      if (const std::uint32_t e = idle_partner(s, x, v + 1, budget); e != kNone) {
        path_.back() = e;
        commit(s);
        return true;
      }
    }
    if (budget == 0) return false;
    --budget;
    if (side.cursor[x] == side.stop[x]) {
      stack_.pop_back();
      path_.pop_back();
      if (!stack_.empty()) ++side.cursor[stack_.back()];
      continue;
    }
    const std::uint32_t k = side.cursor[x];
    const std::uint32_t f = other.mate[side.list_peer[k]];
    if (side.list_left[k] <= v || f == kNone) {  // too short, or an idle partner the look-ahead refused
      ++side.cursor[x];
      continue;
    }
    const std::uint32_t w = end_[s][f];
    if (side.seen[w] == stamp) {
      ++side.cursor[x];
      continue;
    }
    side.seen[w] = stamp;
    path_.back() = side.list[k];
    if (slack(s, w) > v) {
      commit(s);
      return true;
    }
    side.cursor[w] = side.begin[w];
    stack_.push_back(w);
    path_.push_back(kNone);
    look_ahead = true;
  }
  return false;
}

// Every vertex on the stack takes its message in path_; the partners those
// messages had are released first (the last one's partner, if any, is the
// vertex that gives up its message).
void OpenShop::commit(int s) {
  const Side& other = side_[1 - s];
  for (std::uint32_t e : path_)
    if (const std::uint32_t f = other.mate[end_[1 - s][e]]; f != kNone) unmatch(f);
  for (std::uint32_t e : path_) match(e);
}

void OpenShop::undo() {
  journaling_ = false;
  for (auto it = journal_.rbegin(); it != journal_.rend(); ++it)
    if (it->matched)
      unmatch(it->message);
    else
      match(it->message);
  journal_.clear();
}

// One step of raising the phase above v: every matched message of exactly v
// bytes is released and every line that cannot wait more than v (slack <= v)
// is covered by messages of more than v bytes. False, with the step undone,
// when a search gives up; v = 0 (a tight line idles) must succeed.
bool OpenShop::raise_once(std::uint64_t v) {
  items_.clear();
  item_lines_.clear();
  while (shortest_matched() == v) {
    items_.push_back(short_.top().second);
    short_.pop();
  }
  Line line{};
  while (least_idle_slack(line) == v) {
    item_lines_.push_back(line);
    idle_.pop();
  }
  const std::uint64_t budget = v == 0 ? kNever : budget_;
  journal_.clear();
  journaling_ = v != 0;
  bool ok = true;
  auto cover = [&](int s, std::uint32_t x) {
    if (side_[s].idle_pos[x] != kNone && slack(s, x) <= v) ok = search(s, x, v, budget);
  };
  for (std::uint32_t e : items_) {
    if (!ok) break;
    if (matched_pos_[e] == kNone) continue;
    unmatch(e);
    cover(0, end_[0][e]);
    if (ok) cover(1, end_[1][e]);
  }
  for (const Line& l : item_lines_) {
    if (!ok) break;
    cover(l.side, l.vertex);
  }
  if (!ok) {
    if (v == 0) throw std::logic_error("switchyard: optimal-bytes found no matching covering the tight lines");
    undo();
    // Put back the heap entries popped above.
    for (std::uint32_t e : items_)
      if (matched_pos_[e] != kNone) short_.emplace(left_[e] + elapsed_, e);
    for (const Line& l : item_lines_)
      if (side_[l.side].idle_pos[l.vertex] != kNone)
        idle_.emplace(side_[l.side].load[l.vertex], static_cast<std::uint32_t>(l.side) * n_ + l.vertex);
  }
  journaling_ = false;
  return ok;
}

// Raises the phase as far as the searches get, which is the largest
// bottleneck when none gives up (a failed search from an uncovered line finds
// no augmenting path, and by Berge no covering matching above v exists).
void OpenShop::raise() {
  for (;;) {
    const std::uint64_t v = value();
    if (v == time_left_ || !raise_once(v)) return;
  }
}

// Lines released since the last phase take an idle partner with at least
// floor bytes left where one is at hand: no shorter phase, more bytes moved.
void OpenShop::fill(std::uint64_t floor) {
  for (const Line& l : touched_) {
    side_[l.side].touched[l.vertex] = 0;
    if (side_[l.side].idle_pos[l.vertex] == kNone) continue;
    std::uint64_t budget = budget_;
    if (const std::uint32_t e = idle_partner(l.side, l.vertex, floor, budget); e != kNone) match(e);
  }
  touched_.clear();
}

// Rebuilds the heaps once stale entries outnumber the live ones.
void OpenShop::compact_heaps() {
  flush();
  if (short_.size() > 2 * matched_.size() + 64) {
    decltype(short_) fresh;
    for (std::uint32_t e : matched_) fresh.emplace(left_[e] + elapsed_, e);
    short_ = std::move(fresh);
  }
  if (idle_.size() > 2 * (side_[0].idle.size() + side_[1].idle.size()) + 64) {
    decltype(idle_) fresh;
    for (int s = 0; s < 2; ++s)
      for (std::uint32_t v : side_[s].idle) fresh.emplace(side_[s].load[v], static_cast<std::uint32_t>(s) * n_ + v);
    idle_ = std::move(fresh);
  }
}

std::vector<Phase> OpenShop::run() {
  std::vector<Phase> phases;
  for (int s = 0; s < 2; ++s)
    for (std::uint32_t v = 0; v < n_; ++v) {
      set_idle(s, v);
      touch(s, v);
    }
  while (time_left_ != 0) {
    raise();
    const std::uint64_t length = value();
    fill(length);
    if (length == 0) throw std::logic_error("switchyard: optimal-bytes: an empty phase");
    Phase phase;
    phase.reserve(matched_.size());
    finished_.clear();
    for (std::uint32_t e : matched_) {
      phase.push_back(Transfer{end_[0][e], end_[1][e], sent_[e], length});
      sent_[e] += length;
      left_[e] -= length;
      for (int s = 0; s < 2; ++s) {
        side_[s].load[end_[s][e]] -= length;
        side_[s].list_left[pos_[s][e]] = left_[e];
        if (!grid_left_[s].empty()) grid_left_[s][std::size_t{end_[s][e]} * n_ + end_[1 - s][e]] = left_[e];
      }
      if (left_[e] == 0) finished_.push_back(e);
    }
    time_left_ -= length;
    elapsed_ += length;
    for (std::uint32_t e : finished_) finish(e);
    compact_heaps();
    phases.push_back(std::move(phase));
  }
  return phases;
}

}  // namespace

std::vector<Phase> open_shop_phases(const CommMatrix& m) { return OpenShop(m).run(); }

std::uint64_t open_shop_grid_bytes(std::uint64_t n, std::uint64_t messages) {
  return n * n <= 8 * messages ? 2 * sizeof(std::uint64_t) * n * n : 0;
}

}  // namespace switchyard::schedulers::detail
