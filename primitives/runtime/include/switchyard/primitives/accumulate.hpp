#pragma once
// The accumulation tasks (Varvarigos section 2.1): single node accumulation
// (SNA), its selective form (SSNA) and the partial multinode accumulation
// (PMNA), combining with any associative operator.
//
//   co_await primitives::sna(comm, 0, std::span<const double>(mine), std::span<double>(sum), std::plus<>{});
//   // or an operator on whole spans: acc[i] = acc[i] (+) in[i]
//   co_await primitives::sna(comm, 0, mine, sum, [](std::span<double> acc, std::span<const double> in) { ... });
//
// An operator is either a binary element operator T(T, T) (std::plus<>,
// std::multiplies<>, a lambda; applied element-wise) or a callable on spans
// void(std::span<T> acc, std::span<const T> in) that sets acc to acc (+) in,
// acc holding the lower ranks' part. It is only assumed associative: partial
// results are combined in rank order unless options.commutative says the
// order does not matter (then SNA and SSNA save a message and PMNA runs
// Bruck's log-round schedule instead of one tree per destination).
//
// Algorithms: the binomial tree of binomial_tree.hpp reversed (ceil(log2 n)
// rounds, the one-port optimum with combining); PMNA with a commutative
// operator: the dual of Bruck's allgather (log2 n rounds, each process sends
// about destinations.size() blocks in all).

#include <concepts>
#include <cstring>
#include <span>
#include <type_traits>

#include "switchyard/communicator.hpp"
#include "switchyard/primitives/call_options.hpp"
#include "switchyard/task.hpp"

namespace switchyard::primitives {

/// An associative operator on byte spans holding elements: acc = acc (+) in.
/// Made from a typed operator by combiner_for.
struct Combiner {
  const void* state = nullptr;  ///< what combine reads the operator from (the typed operator, for combiner_for)
  /// Combines in into acc, element by element (both whole numbers of element_size bytes).
  void (*combine)(const void* state, std::span<std::byte> acc, std::span<const std::byte> in) = nullptr;
  std::size_t element_size = 1;  ///< bytes per element
  /// Acc = acc (+) in.
  void operator()(std::span<std::byte> acc, std::span<const std::byte> in) const { combine(state, acc, in); }
};

template <class T, class Op>
concept SpanOperator = std::invocable<const Op&, std::span<T>, std::span<const T>>;
template <class T, class Op>
concept ElementOperator = std::is_invocable_r_v<T, const Op&, T, T>;

/// A Combiner calling `op` (which must outlive it) on T elements.
template <class T, class Op>
requires(SpanOperator<T, Op> || ElementOperator<T, Op>) Combiner combiner_for(const Op& op) {
  static_assert(std::is_trivially_copyable_v<T>, "accumulated elements travel as bytes");
  Combiner c;
  c.state = &op;
  c.element_size = sizeof(T);
  c.combine = [](const void* state, std::span<std::byte> acc, std::span<const std::byte> in) {
    const Op& f = *static_cast<const Op*>(state);
    std::span<T> a(reinterpret_cast<T*>(acc.data()), acc.size() / sizeof(T));
    std::span<const T> b(reinterpret_cast<const T*>(in.data()), in.size() / sizeof(T));
    if constexpr (SpanOperator<T, Op>) {
      f(a, b);
    } else {
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = f(a[i], b[i]);
    }
  };
  return c;
}

/// The byte-level calls the typed ones below forward to: `mine` and `result`
/// are whole numbers of op.element_size; `op` must outlive the call.
Task<void> sna_bytes(Communicator comm, Rank root, std::span<const std::byte> mine, std::span<std::byte> result,
                     Combiner op, CallOptions options = {});
/// ssna() on bytes.
Task<void> ssna_bytes(Communicator comm, Rank root, std::span<const Rank> members, std::span<const std::byte> mine,
                      std::span<std::byte> result, Combiner op, CallOptions options = {});
/// pmna() on bytes.
Task<void> pmna_bytes(Communicator comm, std::span<const Rank> destinations, std::span<const std::byte> mine,
                      std::span<std::byte> result, Combiner op, CallOptions options = {});

/// SNA: the root's `result` (mine.size() elements) = every member's `mine`
/// combined in rank order. Non-roots' `result` is ignored.
template <class T, class Op>
Task<void> sna(Communicator comm, Rank root, std::span<const T> mine, std::span<T> result, Op op,
               CallOptions options = {}) {
  co_await sna_bytes(comm, root, std::as_bytes(mine), std::as_writable_bytes(result), combiner_for<T>(op), options);
}
/// SSNA: as SNA over `members` only (the root need not be one).
template <class T, class Op>
Task<void> ssna(Communicator comm, Rank root, std::span<const Rank> members, std::span<const T> mine,
                std::span<T> result, Op op, CallOptions options = {}) {
  co_await ssna_bytes(comm, root, members, std::as_bytes(mine), std::as_writable_bytes(result), combiner_for<T>(op),
                      options);
}
/// PMNA: every member's `mine` holds destinations.size() blocks of
/// result.size() elements (block j for destinations[j]); destination j's
/// `result` = block j of every member combined. Non-destinations' `result` is
/// ignored (pass an empty span).
template <class T, class Op>
Task<void> pmna(Communicator comm, std::span<const Rank> destinations, std::span<const T> mine, std::span<T> result,
                Op op, CallOptions options = {}) {
  co_await pmna_bytes(comm, destinations, std::as_bytes(mine), std::as_writable_bytes(result), combiner_for<T>(op),
                      options);
}

}  // namespace switchyard::primitives
