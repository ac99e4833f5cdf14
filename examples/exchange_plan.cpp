// An ExchangePlan in an application's own jobs: a neighbour exchange made once
// from its whole pattern and run many times on the application's buffers
// (MPI_Alltoallv's form), and the same exchange with the plan made inside the
// job by the collective create(). Every word received is checked; the exit
// code is 0 only if every check passed.

#include <switchyard/runtime.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <span>
#include <vector>

namespace sy = switchyard;

// [readme-begin]
#include <switchyard/schedulers/exchange_plan.hpp>
namespace sys = switchyard::schedulers;

// Every process sends `words` words to each of its d right-hand neighbours and
// receives as many from each of its d left-hand ones, `runs` times, through one
// plan made from the whole pattern. Returns the number of wrong words.
std::uint64_t neighbour_exchange(sy::Runtime& rt, sy::Rank n, sy::Rank d, std::size_t words, int runs) {
  const std::uint64_t bytes = words * sizeof(std::uint64_t);
  sys::CommMatrix pattern(n);
  for (sy::Rank i = 0; i < n; ++i) {
    for (sy::Rank k = 1; k <= d; ++k) pattern.set(i, (i + k) % n, bytes);
  }
  // Once: the schedule, and every process's part of it.
  const sys::ExchangePlan plan(pattern, sys::ExchangePlanOptions{.scheduler = "optimal"});
  std::atomic<std::uint64_t> errors{0};
  rt.run(n, [&](sy::Process& p) -> sy::Task<void> {
    // One buffer each way; the message to (from) rank q starts at out_at[q] (in_at[q]).
    const sy::Rank me = p.rank();
    std::vector<std::uint64_t> out(d * words), in(d * words), out_at(n), in_at(n);
    for (sy::Rank k = 1; k <= d; ++k) {
      out_at[(me + k) % n] = in_at[(me + n - k) % n] = (k - 1) * bytes;
      for (std::size_t w = 0; w < words; ++w) out[(k - 1) * words + w] = std::uint64_t{me} * words + w;
    }
    for (int r = 0; r < runs; ++r) {
      co_await plan.run(p, std::as_bytes(std::span(out)), out_at, std::as_writable_bytes(std::span(in)), in_at);
    }
    for (sy::Rank k = 1; k <= d; ++k) {
      const sy::Rank from = (me + n - k) % n;
      for (std::size_t w = 0; w < words; ++w) errors += in[in_at[from] / sizeof(std::uint64_t) + w] != from * words + w;
    }
  });
  return errors.load();
}

// Inside a job, from each process's own sends (destination and bytes), a plan
// is a collective: rank 0 makes the schedule and sends each process its part.
// send[i] goes to plan.sends(p.rank())[i].peer (my_sends sorted by
// destination); recv[j] comes from plan.receives(p.rank())[j].peer.
sy::Task<void> exchange_once(sy::Process& p, std::span<const sys::MatrixEntry> my_sends,
                             std::span<const std::span<const std::byte>> send,
                             std::span<const std::span<std::byte>> recv) {
  const sys::ExchangePlan plan = co_await sys::ExchangePlan::create(p, my_sends, {.scheduler = "optimal"});
  co_await plan.run(p, send, recv);
}
// [readme-end]

// exchange_once on the same neighbour pattern: one message of one word to each
// right-hand neighbour, holding the sender's rank.
std::uint64_t neighbour_exchange_in_job(sy::Runtime& rt, sy::Rank n, sy::Rank d) {
  std::atomic<std::uint64_t> errors{0};
  rt.run(n, [&](sy::Process& p) -> sy::Task<void> {
    const sy::Rank me = p.rank();
    std::vector<sys::MatrixEntry> my_sends;
    for (sy::Rank k = 1; k <= d; ++k) my_sends.push_back({(me + k) % n, sizeof(std::uint64_t)});
    std::sort(my_sends.begin(), my_sends.end(), [](const auto& a, const auto& b) { return a.peer < b.peer; });
    const std::uint64_t word = me;
    std::vector<std::uint64_t> got(d, ~std::uint64_t{0});
    std::vector<std::span<const std::byte>> send(d, std::as_bytes(std::span(&word, 1)));
    std::vector<std::span<std::byte>> recv;
    for (auto& g : got) recv.push_back(std::as_writable_bytes(std::span(&g, 1)));
    co_await exchange_once(p, my_sends, send, recv);
    // Receives come sorted by source: the left-hand neighbours in rank order.
    std::vector<sy::Rank> sources;
    for (sy::Rank k = 1; k <= d; ++k) sources.push_back((me + n - k) % n);
    std::sort(sources.begin(), sources.end());
    for (sy::Rank j = 0; j < d; ++j) errors += got[j] != sources[j];
  });
  return errors.load();
}

int main() {
  try {
    sy::Runtime rt;
    const std::uint64_t wrong = neighbour_exchange(rt, 64, 5, 300, 10) + neighbour_exchange_in_job(rt, 64, 5);
    std::printf("exchange plans: %llu wrong words (%u node(s))\n", static_cast<unsigned long long>(wrong), rt.nodes());
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exchange_plan: %s\n", e.what());
    return 1;
  }
}
