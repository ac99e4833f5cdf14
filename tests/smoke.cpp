#include <switchyard/runtime.hpp>
#include <cstdio>
using namespace switchyard;
int main() {
  Runtime rt;
  std::printf("%s", rt.topology().describe().c_str());
  for (auto& b : rt.worker_bindings()) std::printf("%s\n", b.c_str());
  for (int n : {1, 2, 3, 32, 1024}) {
    std::atomic<long> sum{0};
    rt.run(n, [&](Process& p) -> Task<void> {
      std::uint64_t v = p.rank();
      Rank dst = (p.rank() + 1) % p.size();
      Rank src = (p.rank() + p.size() - 1) % p.size();
      auto t = p.post_send(dst, std::as_bytes(std::span(&v, 1)));
      auto m = co_await p.recv(src);
      std::uint64_t got; std::memcpy(&got, m.bytes().data(), 8);
      if (got != src) throw std::runtime_error("bad");
      co_await p.wait(t);
      co_await p.barrier();
      std::int64_t one = 1;
      auto r = co_await p.allreduce(std::span<const std::int64_t>(&one, 1));
      sum += r[0];
    });
    std::printf("n=%d sum=%ld\n", n, sum.load());
  }
}
