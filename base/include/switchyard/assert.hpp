#pragma once
/// @file
/// SWITCHYARD_ASSERT, the check of the runtime's internal invariants.

/// @def SWITCHYARD_ASSERT(condition)
/// SWITCHYARD_ASSERT(condition): checks one of the runtime's invariants (the
/// ready queue's bounds, a pool's ownership, a route's range, a job's epoch)
/// in the builds that look for bugs: Debug and the sanitizer builds, where
/// CMake defines SWITCHYARD_ASSERTIONS. Elsewhere it compiles to nothing and
/// the condition is not evaluated, so it costs the hot paths nothing. A failed
/// assertion prints what failed and where, then aborts: it is a bug of
/// switchyard, never the caller's bad input (that gets InvalidArgument).

#if defined(SWITCHYARD_ASSERTIONS)
#include <cstdio>
#include <cstdlib>

namespace switchyard::detail {
[[noreturn, gnu::cold, gnu::noinline]] inline void assertion_failed(const char* condition, const char* file,
                                                                    int line) noexcept {
  std::fprintf(stderr, "switchyard: internal invariant broken at %s:%d: %s\n", file, line, condition);
  std::abort();
}
}  // namespace switchyard::detail

#define SWITCHYARD_ASSERT(condition) \
  ((condition) ? static_cast<void>(0) : ::switchyard::detail::assertion_failed(#condition, __FILE__, __LINE__))
#else
#define SWITCHYARD_ASSERT(condition) static_cast<void>(0)
#endif
