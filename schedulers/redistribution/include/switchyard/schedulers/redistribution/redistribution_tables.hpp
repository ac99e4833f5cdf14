#pragma once
/// @file
/// The communication table COM and the communication scheduling tables CS and
/// CS' of Guo-Nakata-Yamashita §4, plus the two unscheduled baselines of their
/// Figs. 1 and 4.
///
/// COM (P x P', Eq. (1)): entry (i, j) is non-zero exactly when source i must
/// send to target j; here it holds the number of elements, |D_i ∩ D'_j|, so the
/// message sizes come with it. K is the most targets any source sends to, K'
/// the most sources any target receives from.
///
/// CS (P x steps): row i is source i's sending vector, CS[i, k] the target it
/// sends to in step k or kIdle. A table is contention-free when every column is
/// a partial permutation: no target receives twice in one step (Theorem 3).
/// CS' (P' x steps), the receiving table, follows from CS: CS[i, k] = j ⇒
/// CS'[j, k] = i (§4.4).
///
/// Which table builds what:
/// @verbatim
///   naive_table   Fig. 1: in step k every source sends to target k.
///   offset_table  Fig. 4: source i starts at target i and goes round: in step k
///                 it sends to (i + k) mod P'. With P = P' a column holds each
///                 target at most once, so this one is contention-free; with
///                 P != P' sources i and i + P' collide.
///   algorithm1    §4.1, Algorithm 1: relative group, sub-groups, start
///                 elements, sending vectors, on a table with Theorem 2's symmetry.
///   contention_free_table
///                 Algorithm 1 for one dimension (b = β b', or b' = β b through
///                 §4.4's transposition), Algorithm 2 (§4.3) for several: a
///                 contention-free table, or the reason why the paper's method
///                 does not apply (b and b' not multiples of each other, or
///                 K' > K with b = β b'; e.g. P = 12, P' = 8, b = 4, b' = 3).
/// @endverbatim

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/redistribution/layout.hpp"
#include "switchyard/schedulers/schedule.hpp"

namespace switchyard::schedulers::redistribution {

/// COM (P x P', see the file's description), dense, row-major: the elements
/// source i sends to target j.
class CommTable {
 public:
  CommTable() = default;  ///< 0 x 0
  /// `sources` x `targets`, every entry 0.
  CommTable(Rank sources, Rank targets);

  Rank sources() const noexcept { return sources_; }  ///< P, the rows
  Rank targets() const noexcept { return targets_; }  ///< P', the columns
  /// Elements source i sends to target j (0: no message).
  Index elements(Rank i, Rank j) const { return cells_.at(std::size_t{i} * targets_ + j); }
  bool communicates(Rank i, Rank j) const { return elements(i, j) != 0; }  ///< COM's 0/1 entry
  /// Sets the elements source i sends to target j.
  void set(Rank i, Rank j, Index elements) { cells_.at(std::size_t{i} * targets_ + j) = elements; }

  std::uint32_t sends(Rank i) const;  ///< L_i: targets source i sends to
  std::uint32_t receives(Rank j) const;  ///< L'_j: sources target j receives from
  std::uint32_t max_sends() const;  ///< K
  std::uint32_t max_receives() const;  ///< K'
  std::uint64_t messages() const;  ///< non-zero entries
  bool operator==(const CommTable&) const = default;  ///< same shape and entries

 private:
  Rank sources_ = 0, targets_ = 0;
  std::vector<Index> cells_;
};

/// COM of the redistribution src -> dst from LDD intersections: each entry is
/// the product of the dimensions' intersection sizes (Lemma 2). Throws
/// InvalidArgument if the arrays differ in shape, or if the table would need
/// more memory than the machine allows (machine_memory.hpp; before any of it is made).
CommTable communication_table(const Layout& src, const Layout& dst);
/// Throws InvalidArgument, saying how much, if `plans` schedules of `com`
/// would not fit: whatever its kind, a schedule's sending table has a row per
/// source and at least max(K, K') steps (cyclic@80000 -> block@4: 20000 steps, 6.4 GB).
void check_tables_fit(const CommTable& com, std::size_t plans = 1);
/// COM_d of dimension d alone: grid(d) x grid'(d), element counts along d.
/// COM[(i_1, ..., i_δ), (j_1, ..., j_δ)] = Π_d COM_d[i_d, j_d].
CommTable dimension_table(const Layout& src, const Layout& dst, std::size_t d);

/// A scheduling table, CS (rows are sources, cells targets) or CS' (rows are
/// targets, cells sources): rows x steps, dense, row-major.
class SchedulingTable {
 public:
  static constexpr std::int32_t kIdle = -1;  ///< a cell in which the row's process does nothing

  SchedulingTable() = default;  ///< 0 x 0
  /// `rows` x `steps`, every cell kIdle.
  SchedulingTable(Rank rows, std::uint32_t steps);

  Rank rows() const noexcept { return rows_; }  ///< processes, one row each
  std::uint32_t steps() const noexcept { return steps_; }  ///< columns
  /// The cell of `row` in `step`: a process, or kIdle.
  std::int32_t at(Rank row, std::uint32_t step) const { return cells_.at(std::size_t{row} * steps_ + step); }
  /// Sets the cell of `row` in `step`.
  void set(Rank row, std::uint32_t step, std::int32_t value) { cells_.at(std::size_t{row} * steps_ + step) = value; }
  std::vector<std::int32_t> row(Rank r) const;  ///< row r's cells, step by step (a copy)
  std::vector<std::int32_t> column(std::uint32_t step) const;  ///< a step's cells, row by row (a copy)
  /// Every column holds each value at most once.
  bool contention_free() const;
  bool operator==(const SchedulingTable&) const = default;  ///< same shape and cells

 private:
  Rank rows_ = 0;
  std::uint32_t steps_ = 0;
  std::vector<std::int32_t> cells_;
};

/// Checks that `cs` is a sending table for `com`: P rows, every row holds
/// exactly the targets of its COM row, once each. Throws InvalidArgument naming
/// the first violation. Contention-freedom is contention_free()'s business.
void validate_table(const SchedulingTable& cs, const CommTable& com);

/// §4.4: CS[i, k] = j ⇒ CS'[j, k] = i. Throws InvalidArgument if a column of
/// `cs` names a target twice (the receiving table of a table with contention
/// has several sources in one cell: see receiving_lists).
SchedulingTable receiving_table(const SchedulingTable& cs, Rank targets);

/// Fig. 1 and Fig. 4, steps in which nobody sends left out.
SchedulingTable naive_table(const CommTable& com);
SchedulingTable offset_table(const CommTable& com);  ///< see naive_table

/// Algorithm 1's intermediate results, for a table in which source i's row is
/// source 0's moved by i β (Theorem 2: COM[i, j] = COM[0, (j - i β) mod P']).
struct Algorithm1Result {
  std::vector<std::int32_t> relative_group;  ///< step 1: J*_0 .. J*_{P-1}
  std::vector<std::vector<Rank>> sub_groups;  ///< step 2, ordered by first member
  std::vector<std::int32_t> start;  ///< steps 3-4: SV^0 of every source
  SchedulingTable cs;  ///< step 5: K columns
};

/// Algorithm 1 on `com` with b = β b'. J*_0 is the first '1' of row 0 that
/// starts a run of ones (0 if the row is all ones). Throws InvalidArgument if
/// the table lacks the symmetry: a row without a '1' at its relative-group
/// entry, or a sub-group with more members than its rows have ones.
Algorithm1Result algorithm1(const CommTable& com, std::uint32_t beta);

/// A contention-free sending table, and how it was made.
struct ContentionFreeTable {
  SchedulingTable cs;  ///< P x steps, contention-free, validated against COM
  std::string method;  ///< how it was built, for reports
};

/// What contention_free_table() found: a table, or why there is none.
struct TableAttempt {
  std::optional<ContentionFreeTable> table;  ///< the table, if the paper's method applies
  std::string reason;  ///< why not, when there is no table
};

/// The paper's contention-free table for src -> dst with COM `com`, or the
/// reason it does not apply. The tables are built on the periodic pattern of
/// each dimension (the array repeated without end, where Theorem 2 holds
/// exactly); a finite array's COM has a subset of its entries, and the entries
/// it lacks are left idle. Steps in which nobody sends are left out.
TableAttempt contention_free_table(const Layout& src, const Layout& dst, const CommTable& com);

// Tables and schedules.

/// A redistribution with P sources and P' targets runs max(P, P') processes;
/// source i and target i are process i.
Rank job_processes(const CommTable& com);
/// COM in bytes (elements x sizeof(double)), square over job_processes().
schedulers::CommMatrix comm_matrix(const CommTable& com);
/// The schedule of a sending table: step k of `cs` becomes phase k, each entry
/// a whole message.
schedulers::Schedule schedule_of(const SchedulingTable& cs, const CommTable& com, std::string name);
/// The sending table of a schedule: CS[i, k] = j for a transfer i -> j in phase
/// k. Throws InvalidArgument if a source sends twice in one phase.
SchedulingTable table_of(const schedulers::Schedule& s, Rank sources);
/// The receiving table as lists: cell (j, k) holds every source target j
/// receives from in step k (one at most in a contention-free schedule).
std::vector<std::vector<std::vector<Rank>>> receiving_lists(const schedulers::Schedule& s, Rank targets);

}  // namespace switchyard::schedulers::redistribution
