#include "switchyard/primitives/isotropic.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::primitives {

IsotropicLattice::IsotropicLattice(const VirtualNetwork& network) : size_(network.size()) {
  if (network.kind() == NetworkKind::hypercube) {
    sides_.assign(static_cast<std::size_t>(network.dimension()), 2);
  } else if (network.kind() == NetworkKind::torus) {
    sides_.assign(network.sides().begin(), network.sides().end());
  } else {
    throw InvalidArgument("isotropic tasks need a hypercube or a torus, not " + network.name());
  }
  Node weight = 1;
  for (std::size_t i = 0; i < sides_.size(); ++i) {
    radix_.push_back(weight);
    weight *= sides_[i];
    if (sides_[i] >= 2) {
      direction_side_.push_back(static_cast<int>(i));
      direction_sign_.push_back(+1);
    }
    if (sides_[i] >= 3) {
      direction_side_.push_back(static_cast<int>(i));
      direction_sign_.push_back(-1);
    }
  }
  steps_.resize(static_cast<std::size_t>(directions()) * static_cast<std::size_t>(size_));
  for (int c = 0; c < directions(); ++c) {
    const auto i = static_cast<std::size_t>(direction_side_[c]);
    for (Node v = 0; v < size_; ++v) {
      const Node x = v / radix_[i] % sides_[i];
      const Node moved = (x + sides_[i] + direction_sign_[c]) % sides_[i];
      steps_[static_cast<std::size_t>(c) * size_ + v] = v + (moved - x) * radix_[i];
    }
  }
}

Node IsotropicLattice::add(Node a, Node b) const noexcept {
  Node out = 0;
  for (std::size_t i = 0; i < sides_.size(); ++i) {
    out += (a / radix_[i] % sides_[i] + b / radix_[i] % sides_[i]) % sides_[i] * radix_[i];
  }
  return out;
}

Node IsotropicLattice::subtract(Node a, Node b) const noexcept {
  Node out = 0;
  for (std::size_t i = 0; i < sides_.size(); ++i) {
    out += (a / radix_[i] % sides_[i] - b / radix_[i] % sides_[i] + sides_[i]) % sides_[i] * radix_[i];
  }
  return out;
}

TaskMatrix task_matrix(const IsotropicLattice& lattice, std::span<const Node> offsets) {
  TaskMatrix m;
  m.columns = lattice.directions();
  m.offsets.assign(offsets.begin(), offsets.end());
  m.entries.assign(offsets.size() * static_cast<std::size_t>(m.columns), 0);
  std::vector<char> seen(static_cast<std::size_t>(lattice.size()), 0);
  // Per side, how many rows have met the half-side tie so far: alternating
  // them between + and - balances the two columns.
  std::vector<std::int64_t> ties(lattice.sides().size(), 0);
  for (std::size_t r = 0; r < offsets.size(); ++r) {
    const Node o = offsets[r];
    if (o <= 0 || o >= lattice.size() || seen[static_cast<std::size_t>(o)]) {
      throw InvalidArgument("task_matrix: offset " + std::to_string(o) + " is zero, out of range or repeated");
    }
    seen[static_cast<std::size_t>(o)] = 1;
    Node rest = o;
    for (int c = 0; c < m.columns; ++c) {
      const int i = lattice.direction_side(c);
      const Node n = lattice.sides()[static_cast<std::size_t>(i)];
      Node weight = 1;
      for (int j = 0; j < i; ++j) weight *= lattice.sides()[static_cast<std::size_t>(j)];
      const Node x = rest / weight % n;
      const bool up = lattice.direction_sign(c) > 0;
      Node hops = 0;
      if (n == 2) {
        hops = x;  // one link, one direction
      } else if (2 * x < n) {
        hops = up ? x : 0;
      } else if (2 * x > n) {
        hops = up ? 0 : n - x;
      } else if (up) {  // the tie, seen first by the + column of the side
        hops = ties[static_cast<std::size_t>(i)] % 2 == 0 ? x : 0;
      } else {
        hops = ties[static_cast<std::size_t>(i)]++ % 2 == 0 ? 0 : x;
      }
      m.entries[r * static_cast<std::size_t>(m.columns) + static_cast<std::size_t>(c)] = hops;
    }
  }
  return m;
}

TaskMatrix total_exchange_task_matrix(const IsotropicLattice& lattice) {
  std::vector<Node> offsets(static_cast<std::size_t>(lattice.size()) - 1);
  std::iota(offsets.begin(), offsets.end(), Node{1});
  return task_matrix(lattice, offsets);
}

std::int64_t critical_sum(const TaskMatrix& m) {
  std::int64_t h = 0;
  std::vector<std::int64_t> column(static_cast<std::size_t>(m.columns), 0);
  for (std::int64_t r = 0; r < m.rows(); ++r) {
    std::int64_t row = 0;
    for (int c = 0; c < m.columns; ++c) {
      row += m.at(r, c);
      column[static_cast<std::size_t>(c)] += m.at(r, c);
    }
    h = std::max(h, row);
  }
  for (auto s : column) h = std::max(h, s);
  return h;
}

namespace {

// König's edge colouring of the bipartite multigraph of T with h colours.
// Rows have few edges (a route's length): their colours are short lists.
// Columns have up to h: a colour -> row table and an ordered free set each.
// An alternating a/b path alternates columns and rows and meets each column
// at most once, so it is at most 2 * columns long.
class EdgeColouring {
 public:
  EdgeColouring(std::int64_t rows, int columns, std::int64_t colours)
      : colours_(colours),
        row_(static_cast<std::size_t>(rows)),
        column_row_(static_cast<std::size_t>(columns),
                    std::vector<std::int32_t>(static_cast<std::size_t>(colours), -1)),
        column_free_(static_cast<std::size_t>(columns)) {
    for (auto& free : column_free_) {
      for (std::int64_t a = 0; a < colours; ++a) free.insert(free.end(), static_cast<std::int32_t>(a));
    }
  }

  void colour(std::int32_t r, std::int32_t c) {
    for (std::int32_t a : column_free_[static_cast<std::size_t>(c)]) {
      if (!row_uses(r, a)) return assign(r, c, a);
    }
    // Every colour free at c is used at r: take b free at c and a free at r
    // (used at c), and swap a and b along the path from c that starts with a.
    if (column_free_[static_cast<std::size_t>(c)].empty()) throw std::logic_error("edge colouring: column over h");
    const std::int32_t b = *column_free_[static_cast<std::size_t>(c)].begin();
    std::int32_t a = 0;
    while (row_uses(r, a)) ++a;
    if (a >= colours_) throw std::logic_error("edge colouring: row over h");
    flip_path(c, a, b);
    assign(r, c, a);
  }

  // (colour, column) of every edge of row r.
  const std::vector<std::pair<std::int32_t, std::int32_t>>& row_edges(std::int32_t r) const {
    return row_[static_cast<std::size_t>(r)];
  }

 private:
  bool row_uses(std::int32_t r, std::int32_t a) const {
    for (const auto& [colour, column] : row_[static_cast<std::size_t>(r)]) {
      if (colour == a) return true;
    }
    return false;
  }
  void assign(std::int32_t r, std::int32_t c, std::int32_t a) {
    row_[static_cast<std::size_t>(r)].emplace_back(a, c);
    column_row_[static_cast<std::size_t>(c)][static_cast<std::size_t>(a)] = r;
    column_free_[static_cast<std::size_t>(c)].erase(a);
  }
  void flip_path(std::int32_t start, std::int32_t a, std::int32_t b) {
    struct Edge {
      std::int32_t row, column, colour;
    };
    std::vector<Edge> path;
    std::int32_t column = start;
    std::int32_t want = a;
    for (;;) {
      const std::int32_t r = column_row_[static_cast<std::size_t>(column)][static_cast<std::size_t>(want)];
      if (r < 0) break;
      path.push_back({r, column, want});
      const std::int32_t other = want == a ? b : a;
      std::int32_t next = -1;
      for (const auto& [colour, col] : row_[static_cast<std::size_t>(r)]) {
        if (colour == other) next = col;
      }
      if (next < 0) break;
      path.push_back({r, next, other});
      column = next;
    }
    for (const auto& e : path) column_row_[static_cast<std::size_t>(e.column)][static_cast<std::size_t>(e.colour)] = -1;
    for (const auto& e : path) {
      const std::int32_t swapped = e.colour == a ? b : a;
      column_row_[static_cast<std::size_t>(e.column)][static_cast<std::size_t>(swapped)] = e.row;
      for (auto& [colour, col] : row_[static_cast<std::size_t>(e.row)]) {
        if (col == e.column && colour == e.colour) {
          colour = -1 - swapped;  // marked: a row may hold both a and b on the path
          break;
        }
      }
    }
    for (const auto& e : path) {
      for (auto& entry : row_[static_cast<std::size_t>(e.row)]) {
        if (entry.first < 0) entry.first = -1 - entry.first;
      }
    }
    // The path's columns are its only vertices whose free sets change: the
    // start and, when the path ends at a column, that end.
    for (const auto& e : path) {
      auto& free = column_free_[static_cast<std::size_t>(e.column)];
      for (std::int32_t x : {a, b}) {
        if (column_row_[static_cast<std::size_t>(e.column)][static_cast<std::size_t>(x)] < 0) {
          free.insert(x);
        } else {
          free.erase(x);
        }
      }
    }
  }

  std::int64_t colours_;
  std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> row_;
  std::vector<std::vector<std::int32_t>> column_row_;
  std::vector<std::set<std::int32_t>> column_free_;
};

std::vector<std::int64_t> row_lengths(const TaskMatrix& m) {
  std::vector<std::int64_t> len(static_cast<std::size_t>(m.rows()), 0);
  for (std::int64_t r = 0; r < m.rows(); ++r) {
    for (int c = 0; c < m.columns; ++c) len[static_cast<std::size_t>(r)] += m.at(r, c);
  }
  return len;
}

// The rows in the order a greedy direction looks at them.
std::vector<std::int32_t> priority_order(const TaskMatrix& m, GreedyPriority priority, std::uint64_t seed) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(m.rows()));
  std::iota(order.begin(), order.end(), 0);
  const auto len = row_lengths(m);
  switch (priority) {
    case GreedyPriority::row_order:
      break;
    case GreedyPriority::farthest_first:
      std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return len[x] > len[y]; });
      break;
    case GreedyPriority::nearest_first:
      std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return len[x] < len[y]; });
      break;
    case GreedyPriority::random: {
      std::mt19937_64 rng(seed);
      std::shuffle(order.begin(), order.end(), rng);
      break;
    }
  }
  return order;
}

}  // namespace

IsotropicSchedule optimal_isotropic_schedule(const TaskMatrix& m) {
  const std::int64_t h = critical_sum(m);
  EdgeColouring colouring(m.rows(), m.columns, h);
  for (std::int64_t r = 0; r < m.rows(); ++r) {
    for (int c = 0; c < m.columns; ++c) {
      for (std::int32_t k = 0; k < m.at(r, c); ++k) colouring.colour(static_cast<std::int32_t>(r), c);
    }
  }
  IsotropicSchedule schedule;
  schedule.slots.resize(static_cast<std::size_t>(h));
  for (std::int64_t r = 0; r < m.rows(); ++r) {
    for (const auto& [colour, column] : colouring.row_edges(static_cast<std::int32_t>(r))) {
      schedule.slots[static_cast<std::size_t>(colour)].push_back({static_cast<std::int32_t>(r), column});
    }
  }
  return schedule;
}

IsotropicSchedule greedy_isotropic_schedule(const TaskMatrix& m, GreedyPriority priority, std::uint64_t seed) {
  const auto order = priority_order(m, priority, seed);
  std::vector<std::int32_t> remaining(m.entries.begin(), m.entries.end());
  // Per direction, the rows that still need it, in priority order.
  std::vector<std::vector<std::int32_t>> waiting(static_cast<std::size_t>(m.columns));
  for (int c = 0; c < m.columns; ++c) {
    for (auto r : order) {
      if (m.at(r, c) > 0) waiting[static_cast<std::size_t>(c)].push_back(r);
    }
  }
  std::vector<std::int32_t> moved_in(static_cast<std::size_t>(m.rows()), -1);  // the slot a row last moved in
  IsotropicSchedule schedule;
  for (std::int32_t t = 0;; ++t) {
    std::vector<IsotropicMove> slot;
    bool any_waiting = false;
    for (int c = 0; c < m.columns; ++c) {
      auto& rows = waiting[static_cast<std::size_t>(c)];
      any_waiting = any_waiting || !rows.empty();
      // The first waiting row not already moving this slot (at most columns - 1 are).
      const auto it =
          std::find_if(rows.begin(), rows.end(), [&](auto r) { return moved_in[static_cast<std::size_t>(r)] != t; });
      if (it == rows.end()) continue;
      const std::int32_t r = *it;
      moved_in[static_cast<std::size_t>(r)] = t;
      slot.push_back({r, c});
      if (--remaining[static_cast<std::size_t>(r) * static_cast<std::size_t>(m.columns) +
                      static_cast<std::size_t>(c)] == 0) {
        rows.erase(it);
      }
    }
    if (!any_waiting) break;
    schedule.slots.push_back(std::move(slot));
  }
  return schedule;
}

PacketSet isotropic_packets(const IsotropicLattice& lattice, const TaskMatrix& m) {
  // 8 bytes a packet in the set, 4 more in the simulator: 2^27 is 1.5 GiB.
  constexpr std::int64_t kMostPackets = std::int64_t{1} << 27;
  if (m.rows() * lattice.size() > kMostPackets) {
    throw InvalidArgument("isotropic_packets: " + std::to_string(m.rows()) + " packets from each of " +
                          std::to_string(lattice.size()) + " nodes is more than the " + std::to_string(kMostPackets) +
                          " that fit in memory");
  }
  PacketSet packets(lattice.size(), false);
  for (Node s = 0; s < lattice.size(); ++s) {
    for (Node o : m.offsets) packets.add(s, lattice.add(s, o));
  }
  return packets;
}

std::optional<IsotropicTask> as_isotropic(const IsotropicLattice& lattice, const PacketSet& packets) {
  if (packets.combining() || packets.nodes() != lattice.size() || lattice.size() == 0) return std::nullopt;
  const auto n = static_cast<std::size_t>(lattice.size());
  // Node 0's offsets define the rows; every other node must send the same.
  std::vector<std::int32_t> row_of(n, -1);
  std::vector<Node> offsets;
  for (PacketId p = 0; p < packets.size(); ++p) {
    if (packets.destinations(p).size() != 1) return std::nullopt;
    if (packets.origins(p)[0] != 0) continue;
    const Node o = packets.destinations(p)[0];
    if (row_of[static_cast<std::size_t>(o)] >= 0) return std::nullopt;
    row_of[static_cast<std::size_t>(o)] = static_cast<std::int32_t>(offsets.size());
    offsets.push_back(o);
  }
  if (offsets.empty() || static_cast<std::int64_t>(offsets.size()) * lattice.size() != packets.size())
    return std::nullopt;
  IsotropicTask task{task_matrix(lattice, offsets), std::vector<PacketId>(offsets.size() * n, -1)};
  for (PacketId p = 0; p < packets.size(); ++p) {
    const Node s = packets.origins(p)[0];
    const std::int32_t r = row_of[static_cast<std::size_t>(lattice.subtract(packets.destinations(p)[0], s))];
    if (r < 0) return std::nullopt;
    auto& id = task.packet_ids[static_cast<std::size_t>(s) * offsets.size() + static_cast<std::size_t>(r)];
    if (id >= 0) return std::nullopt;
    id = p;
  }
  return task;
}

IsotropicExpander::IsotropicExpander(const IsotropicLattice& lattice, const TaskMatrix& matrix,
                                     const IsotropicSchedule& schedule, std::span<const PacketId> packet_ids)
    : lattice_(&lattice),
      matrix_(&matrix),
      schedule_(&schedule),
      packet_ids_(packet_ids),
      displacement_(static_cast<std::size_t>(matrix.rows()), 0) {}

std::span<const Transmission> IsotropicExpander::next() {
  buffer_.clear();
  if (slot_ >= slots()) return buffer_;
  const auto& moves = schedule_->slots[static_cast<std::size_t>(slot_++)];
  const Node n = lattice_->size();
  const auto rows = static_cast<std::size_t>(matrix_->rows());
  for (const auto& move : moves) {
    const Node shift = displacement_[static_cast<std::size_t>(move.row)];
    for (Node s = 0; s < n; ++s) {
      const Node at = shift == 0 ? s : lattice_->add(s, shift);
      const std::size_t index = static_cast<std::size_t>(s) * rows + static_cast<std::size_t>(move.row);
      const PacketId id = packet_ids_.empty() ? static_cast<PacketId>(index) : packet_ids_[index];
      buffer_.push_back({at, lattice_->step(at, move.direction), id});
    }
  }
  for (const auto& move : moves) {
    auto& d = displacement_[static_cast<std::size_t>(move.row)];
    d = lattice_->step(d, move.direction);
  }
  return buffer_;
}

SlotSchedule expand_isotropic_schedule(const IsotropicLattice& lattice, const TaskMatrix& matrix,
                                       const IsotropicSchedule& schedule, std::span<const PacketId> packet_ids) {
  IsotropicExpander expander(lattice, matrix, schedule, packet_ids);
  SlotSchedule out;
  for (std::int32_t t = 0; t < expander.slots(); ++t) {
    for (const auto& x : expander.next()) out.add(t, x);
  }
  return out;
}

SlotAlgorithmResult isotropic_optimal(const VirtualNetwork& g, LinkModel model, const TaskInstance& task) {
  if (model != LinkModel{Ports::all_port, Duplex::full}) {
    throw InvalidArgument("isotropic_optimal: needs all-port full duplex, not " + to_string(model));
  }
  const IsotropicLattice lattice(g);
  const auto isotropic = as_isotropic(lattice, task.packets);
  if (!isotropic) throw InvalidArgument("isotropic_optimal: the task is not isotropic on " + g.name());
  const auto schedule = optimal_isotropic_schedule(isotropic->matrix);
  SlotAlgorithmResult out{"isotropic, edge colouring of the task matrix (Varvarigos-Bertsekas)",
                          expand_isotropic_schedule(lattice, isotropic->matrix, schedule, isotropic->packet_ids),
                          {{BoundKind::optimum, critical_sum(isotropic->matrix), "critical sum h"}},
                          std::nullopt};
  return out;
}

void check_isotropic_schedule(const TaskMatrix& m, const IsotropicSchedule& schedule) {
  std::vector<std::int32_t> moved(m.entries.size(), 0);
  std::vector<std::int32_t> row_slot(static_cast<std::size_t>(m.rows()), -1);
  for (std::size_t t = 0; t < schedule.slots.size(); ++t) {
    std::vector<char> column_used(static_cast<std::size_t>(m.columns), 0);
    for (const auto& move : schedule.slots[t]) {
      const std::string where = "slot " + std::to_string(t) + ", row " + std::to_string(move.row) + ", direction " +
                                std::to_string(move.direction);
      if (move.row < 0 || move.row >= m.rows() || move.direction < 0 || move.direction >= m.columns) {
        throw std::logic_error("isotropic schedule: " + where + " out of range");
      }
      if (row_slot[static_cast<std::size_t>(move.row)] == static_cast<std::int32_t>(t)) {
        throw std::logic_error("isotropic schedule: " + where + ": the row moves twice in one slot");
      }
      if (column_used[static_cast<std::size_t>(move.direction)]++) {
        throw std::logic_error("isotropic schedule: " + where + ": the direction carries two packets");
      }
      row_slot[static_cast<std::size_t>(move.row)] = static_cast<std::int32_t>(t);
      ++moved[static_cast<std::size_t>(move.row) * static_cast<std::size_t>(m.columns) +
              static_cast<std::size_t>(move.direction)];
    }
  }
  for (std::size_t i = 0; i < moved.size(); ++i) {
    if (moved[i] != m.entries[i]) {
      throw std::logic_error("isotropic schedule: row " + std::to_string(i / static_cast<std::size_t>(m.columns)) +
                             " moves " + std::to_string(moved[i]) + " times along direction " +
                             std::to_string(i % static_cast<std::size_t>(m.columns)) + ", its tag says " +
                             std::to_string(m.entries[i]));
    }
  }
}

}  // namespace switchyard::primitives
