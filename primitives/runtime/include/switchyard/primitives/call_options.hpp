#pragma once
// What every static task called on a communicator shares: the library key its
// messages travel under, the choice of algorithm, the caller's scratch memory,
// and the check of member subsets.
//
// Every task is a collective over the communicator it is given: every member
// calls it, in the same order as the other members, with the same root,
// subsets and block sizes (a member the task leaves out returns at once). Its
// messages travel on comm.library(kPrimitivesLibrary), so they never match the
// caller's own receives whatever the tags.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "switchyard/communicator.hpp"

namespace switchyard::primitives {

/// The library key every task's messages travel under.
inline constexpr LibraryKey kPrimitivesLibrary{"switchyard.primitives"};

/// The algorithm a task runs. kAuto picks by task, size and process count
/// (the crossovers measured in bench/bench_primitives.cpp, docs/benchmarks.md).
enum class Algorithm {
  kAuto,  ///< picks by task, size and process count
  kBinomial,  ///< binomial tree (binomial_tree.hpp): ceil(log2 n) rounds, one-port optimal in rounds
  kDirect,  ///< every source sends straight to every destination: the naive baseline
  kBruck,  ///< Bruck's log-round circulant schedule (MNB, PMNB, PMNA, TE, PMNS, PMNG)
  kRing,  ///< n - 1 rounds to the next neighbour (MNB, PMNB)
  kPairwise,  ///< n - 1 rounds of shifted pairwise exchange (TE, PMNS, PMNG)
};
/// The algorithm's name, e.g. "binomial".
const char* to_string(Algorithm a) noexcept;

/// Scratch memory a task needs (a tree's relayed blocks, Bruck's rotated and
/// packed blocks). Keep one per process and pass it to repeated calls: once it
/// has grown to the largest call, calls allocate nothing.
class Workspace {
 public:
  /// n bytes, 64-byte aligned; the contents are unspecified.
  std::span<std::byte> bytes(std::size_t n);

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte, AlignedDelete> storage_;
  std::size_t capacity_ = 0;
};

/// What a task call may choose besides its buffers: the algorithm, scratch memory, and whether the operator commutes.
struct CallOptions {
  Algorithm algorithm = Algorithm::kAuto;  ///< kAuto, or one the task supports
  Workspace* workspace = nullptr;  ///< none: the call uses (and frees) its own
  /// Accumulations only: the operator is commutative as well as associative, so
  /// partial results may be combined in any order. Otherwise they are combined
  /// in rank order (which costs SNA and SSNA one extra message when the root is
  /// not the lowest member, and makes PMNA run one tree per destination).
  bool commutative = false;
};

namespace detail {

/// Throws InvalidArgument unless `members` is strictly increasing, non-empty and
/// within [0, n). `task` and `what` name the call and the argument.
void check_members(std::span<const Rank> members, Rank n, const char* task, const char* what);
void check_rank(Rank r, Rank n, const char* task, const char* what);
/// Throws InvalidArgument unless a buffer (`what`) holds `want` bytes.
void check_size(std::size_t got, std::size_t want, const char* task, const char* what);
/// Throws InvalidArgument: "<task>: <message>".
[[noreturn]] void invalid(const char* task, const std::string& message);

}  // namespace detail
}  // namespace switchyard::primitives
