// An application written against the names switchyard had before folder,
// target, include prefix and namespace were made to agree (docs/layout.md):
// the deprecated include paths, namespaces and targets must still build it,
// and what it calls must still answer. Built against the build tree (ctest's
// deprecated.earlier_names) and against an installed package (install.consumer).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <span>
#include <type_traits>
#include <vector>

#include <switchyard/collectives/operation.hpp>  // now switchyard/model/collectives/
#include <switchyard/copy_exchange.hpp>  // now switchyard/compiled_exchange.hpp, its names Compiled...
#include <switchyard/model/calibration.hpp>  // now switchyard/model/calibration/
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/redistribution/ldd.hpp>  // its namespace is now schedulers::redistribution

// The compiled exchange's earlier names are deprecated, as they should be: an
// application that still uses them sees the warnings, this test does not.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static_assert(std::is_same_v<switchyard::CopyExchangeOptions, switchyard::CompiledExchangeOptions> &&
              std::is_same_v<switchyard::CopyMember, switchyard::CompiledMember> &&
              std::is_same_v<switchyard::CopyRegions, switchyard::CompiledRegions> &&
              std::is_same_v<switchyard::CopyRegionCheck, switchyard::CompiledRegionCheck> &&
              std::is_same_v<switchyard::CopyBinding, switchyard::CompiledBinding> &&
              std::is_same_v<switchyard::CopyProgramCache, switchyard::CompiledProgramCache>);
static_assert(switchyard::CopyOrder::busy_locks == switchyard::CopyOrder::receiver_locks);

// A ring of 4 processes, each sending its rank to the next, through a plan
// asked to run compiled by the enumerator's earlier name, each run awaited as
// the earlier CopyRun for the earlier CopyRunStats. Returns the wrong words.
std::uint64_t ring_by_earlier_names() {
  namespace sy = switchyard;
  namespace sys = switchyard::schedulers;
  constexpr sy::Rank n = 4;
  sys::CommMatrix ring(n);
  for (sy::Rank i = 0; i < n; ++i) ring.set(i, (i + 1) % n, sizeof(std::uint64_t));
  const sys::ExchangePlan plan(ring, sys::ExchangePlanOptions{.execution = sys::ExchangeExecution::copy});
  std::atomic<std::uint64_t> wrong{plan.options().execution == sys::ExchangeExecution::compiled ? 0u : 1u};
  if (!sy::make_copy_program_cache()) ++wrong;
  sy::Runtime rt;
  rt.run(n, [&](sy::Process& p) -> sy::Task<void> {
    const std::uint64_t mine = p.rank();
    std::uint64_t got = ~std::uint64_t{0};
    const std::span<const std::byte> send[]{std::as_bytes(std::span(&mine, 1))};
    const std::span<std::byte> recv[]{std::as_writable_bytes(std::span(&got, 1))};
    sy::CopyRun run = plan.run(p, send, recv);
    const sy::CopyRunStats stats = co_await run;
    wrong += got != (p.rank() + n - 1) % n || stats.busy_lock_inquiries != 0;
  });
  return wrong.load();
}
#pragma GCC diagnostic pop

int main() {
  const std::vector<switchyard::redistribution::Index> extent = switchyard::redistribution::parse_extent("6x4");
  const bool extent_ok = extent.size() == 2 && extent[0] == 6 && extent[1] == 4;
  const bool algorithm_ok =
      switchyard::collectives::is_algorithm(switchyard::collectives::Operation::all_to_all, "1-lev-dir") &&
      !switchyard::collectives::is_algorithm(switchyard::collectives::Operation::all_to_all, "no-such-algorithm");
  const bool calibration_ok = switchyard::model::CalibrationOptions{}.rounds > 0;
  const bool compiled_ok = ring_by_earlier_names() == 0;
  if (!extent_ok || !algorithm_ok || !calibration_ok || !compiled_ok) {
    std::printf("earlier names: wrong answers (extent %d, algorithm %d, calibration %d, compiled exchange %d)\n",
                extent_ok, algorithm_ok, calibration_ok, compiled_ok);
    return 1;
  }
  std::printf("earlier names: ok\n");
  return 0;
}
