// The front page's example: 64 processes on the machine's cores, each sending
// a block of doubles to both of its neighbours in a ring through one
// persistent ExchangePlan, 100 times, every value received checked. Exits 0
// only if every check passed.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <span>
#include <vector>

// [readme-begin]
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
namespace sy = switchyard;

int main() {
  const sy::Rank n = 64;
  const std::size_t words = 16;  // 128 bytes to each neighbour
  sy::schedulers::CommMatrix pattern(n);  // who sends how many bytes to whom
  for (sy::Rank i = 0; i < n; ++i) {
    for (sy::Rank peer : {(i + 1) % n, (i + n - 1) % n}) pattern.set(i, peer, words * sizeof(double));
  }
  const sy::schedulers::ExchangePlan plan(pattern);  // scheduled once, run many times
  sy::Runtime rt;  // one pinned worker per core
  std::atomic<int> wrong{0};
  rt.run(n, [&](sy::Process& p) -> sy::Task<void> {
    const sy::Rank a = (p.rank() + n - 1) % n, b = (p.rank() + 1) % n;
    std::vector<double> mine(words, p.rank()), from_lower(words), from_higher(words);
    const std::span<const std::byte> send[] = {std::as_bytes(std::span(mine)), std::as_bytes(std::span(mine))};
    const std::span<std::byte> recv[] = {std::as_writable_bytes(std::span(from_lower)),
                                         std::as_writable_bytes(std::span(from_higher))};  // by peer rank
    for (int run = 0; run < 100; ++run) co_await plan.run(p, send, recv);
    for (std::size_t w = 0; w < words; ++w) {
      wrong += from_lower[w] != std::min(a, b) || from_higher[w] != std::max(a, b);
    }
  });
  std::printf("%s\n", wrong ? "WRONG" : "every value arrived");
  return wrong ? 1 : 0;
}
// [readme-end]
