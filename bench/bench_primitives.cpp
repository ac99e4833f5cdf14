// The static tasks of switchyard/primitives (Varvarigos section 2.1) at 32 and
// 512 processes on the 2 cores, with blocks of 16 B, 1 KiB and 64 KiB, each
// algorithm beside the naive direct implementation measured IN THE SAME JOB:
//
//   BM_Primitive/<task>/<algorithm>/n:N/bytes:B
//     Time       median chunk's time per call (bench_common.hpp: manual time)
//     naive_ns   the naive direct implementation (every source sends straight
//                to every destination; for accumulations the destination
//                combines what it receives), timed in chunks alternating
//                with the figure's in the same job
//     x_naive    Time / naive_ns: below 1 the algorithm beats the naive one
//
// Algorithms: "binomial", "direct", "bruck", "ring", "pairwise", "trees"
// (PMNA with an operator taken as non-commutative: one ordered tree per
// destination), "naive" (the baseline's own line), and the runtime's and
// schedulers' versions of the same job: "runtime" (Communicator::broadcast
// for SNB, allgather for MNB, allreduce for SNA, which gives everyone the sum)
// and "plan" (an ExchangePlan made once with the optimal scheduler, for TE).
// Subsets: SSNB/SSNS/SSNG/SSNA every other rank; PMNB/PMNS/PMNG/PMNA one rank
// in 8. Roots: rank n/3.
//
// Every byte of the first and the last call of each job is checked (receive
// buffers cleared first), for the figure and the baseline; a wrong byte fails
// the line and the program. Cases whose buffers would need more than 1.5 GiB
// over the job (the multinode tasks at 512 x 64 KiB) are not registered, nor
// (unless BENCH_PRIMITIVES_LARGE is set) the multinode ones at 512 x 1 KiB.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <switchyard/primitives/accumulate.hpp>
#include <switchyard/primitives/multinode.hpp>
#include <switchyard/primitives/single_node.hpp>
#include <switchyard/primitives/sparse_transpose.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>

#include "bench_common.hpp"

using namespace switchyard;
namespace prim = switchyard::primitives;

namespace {

constexpr int kChunksPerJob = 4;  // figure and baseline chunks alternate
constexpr double kMaxJobBytes = 1.5 * (1ull << 30);
// Multinode cases moving more than this per call (n^2 x block: TE, PMNS, PMNG,
// MNB, PMNB, PMNA at 512 x 1 KiB, 256 MiB a call, seconds each) would take
// the full run past its minutes; docs/benchmarks.md gives a separate run of them.
constexpr double kMaxMultinodeBytesPerCall = 64.0 * (1 << 20);

// Byte i of the block `source` sends to `destination` (kAll: to everyone).
constexpr Rank kAll = kAnySource;
inline std::byte data(Rank source, Rank destination, std::size_t i) {
  return static_cast<std::byte>(source * 0x9Du + destination * 0x3Bu + i * 7u + (i >> 8) * 13u);
}
void fill(std::span<std::byte> out, Rank source, Rank destination) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = data(source, destination, i);
}
void check(std::span<const std::byte> got, Rank source, Rank destination, const char* what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != data(source, destination, i)) {
      throw std::runtime_error(std::string(what) + ": byte " + std::to_string(i) + " of the block from " +
                               std::to_string(source) + " is wrong");
    }
  }
}
std::int64_t element(Rank r, std::size_t i) {
  return static_cast<std::int64_t>((r * 1'000'003ull + i * 7919) % 1'000'000);
}

std::vector<Rank> every(Rank n, Rank step, Rank offset) {
  std::vector<Rank> s;
  for (Rank r = offset % n; r < n; r += step) s.push_back(r);
  return s;
}
bool in(const std::vector<Rank>& s, Rank r) { return std::binary_search(s.begin(), s.end(), r); }

// One process's buffers for one case.
struct Buffers {
  std::vector<std::byte> send, recv;
  std::vector<std::int64_t> mine, sum;
  prim::Workspace ws;
};

// A task's calls: set up a process's buffers, run one call of an algorithm
// (or of the naive baseline), check what arrived.
struct Job {
  Rank n = 0;
  std::size_t block = 0;
  Rank root = 0;
  std::vector<Rank> half, eighth;
  const schedulers::ExchangePlan* plan = nullptr;
};
using Setup = std::function<void(const Job&, Rank me, Buffers&)>;
using Call = std::function<Task<void>(const Job&, Communicator, Buffers&, const std::string& algorithm)>;
using Check = std::function<void(const Job&, Rank me, Buffers&)>;

struct TaskBench {
  std::string name;
  std::vector<std::string> algorithms;  // the naive baseline is "naive" or "direct"
  std::string naive;
  bool multinode_memory;  // buffers of n blocks on every process
  Setup setup;
  Call call;
  Check check;
};

prim::CallOptions options_for(const std::string& a, Buffers& b) {
  prim::CallOptions o;
  o.workspace = &b.ws;
  o.commutative = a != "trees";
  if (a == "binomial") o.algorithm = prim::Algorithm::kBinomial;
  if (a == "direct") o.algorithm = prim::Algorithm::kDirect;
  if (a == "bruck") o.algorithm = prim::Algorithm::kBruck;
  if (a == "ring") o.algorithm = prim::Algorithm::kRing;
  if (a == "pairwise") o.algorithm = prim::Algorithm::kPairwise;
  return o;
}

// Naive accumulation: every member of `from` sends its block to `to`, which adds them up in rank order.
Task<void> naive_accumulate(Communicator c, const std::vector<Rank>& from, Rank to, std::span<const std::int64_t> mine,
                            std::span<std::int64_t> result, std::vector<std::int64_t>& scratch, Tag tag) {
  const Communicator lib = c.library(LibraryKey("bench.naive"));
  const auto bytes = std::as_bytes(mine);
  if (lib.rank() != to) {
    if (in(from, lib.rank())) co_await lib.send(to, bytes, tag);
    co_return;
  }
  std::fill(result.begin(), result.end(), 0);
  scratch.resize(mine.size());
  for (Rank s : from) {
    if (s == to) {
      for (std::size_t i = 0; i < mine.size(); ++i) result[i] += mine[i];
      continue;
    }
    co_await lib.recv_into(s, std::as_writable_bytes(std::span(scratch)), tag);
    for (std::size_t i = 0; i < mine.size(); ++i) result[i] += scratch[i];
  }
}

// The table of the benchmark's tasks: one entry per task, its setup, call and
// check side by side. Long because it is data, not logic.
std::vector<TaskBench> tasks() {
  std::vector<TaskBench> t;
  // --- broadcasts ---
  // The root's packet is in `send`; a call starts by copying it into the root's `recv`.
  const auto broadcast_setup = [](const Job& j, Rank me, Buffers& b) {
    b.recv.assign(j.block, std::byte{0});
    b.send.resize(me == j.root ? j.block : 0);
    fill(b.send, j.root, kAll);
  };
  t.push_back({"snb",
               {"binomial", "direct", "runtime"},
               "direct",
               false,
               broadcast_setup,
               [](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
                 if (a == "runtime") {
                   auto got = co_await c.broadcast(j.root, b.send);
                   std::memcpy(b.recv.data(), got.data(), got.size());
                   co_return;
                 }
                 if (c.rank() == j.root) std::memcpy(b.recv.data(), b.send.data(), j.block);
                 co_await prim::snb(c, j.root, b.recv, options_for(a, b));
               },
               [](const Job& j, Rank, Buffers& b) { check(b.recv, j.root, kAll, "snb"); }});
  t.push_back({"ssnb",
               {"binomial", "direct"},
               "direct",
               false,
               broadcast_setup,
               [](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
                 if (c.rank() == j.root) std::memcpy(b.recv.data(), b.send.data(), j.block);
                 co_await prim::ssnb(c, j.root, j.half, b.recv, options_for(a, b));
               },
               [](const Job& j, Rank me, Buffers& b) {
                 if (in(j.half, me) || me == j.root) check(b.recv, j.root, kAll, "ssnb");
               }});
  // --- accumulations (int64 sums) ---
  const auto sum_setup = [](const Job& j, Rank me, Buffers& b) {
    b.mine.resize(std::max<std::size_t>(1, j.block / 8));
    for (std::size_t i = 0; i < b.mine.size(); ++i) b.mine[i] = element(me, i);
    b.sum.assign(b.mine.size(), 0);
  };
  const auto sum_check = [](const std::vector<Rank>& from, std::span<std::int64_t> got, const char* what) {
    for (std::size_t i = 0; i < got.size(); ++i) {
      std::int64_t want = 0;
      for (Rank r : from) want += element(r, i);
      if (got[i] != want) throw std::runtime_error(std::string(what) + ": element " + std::to_string(i) + " wrong");
    }
  };
  t.push_back({"sna",
               {"binomial", "naive", "runtime"},
               "naive",
               false,
               sum_setup,
               [](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
                 if (a == "runtime") {
                   auto got = co_await c.allreduce(b.mine);
                   std::copy(got.begin(), got.end(), b.sum.begin());
                 } else if (a == "naive") {
                   std::vector<std::int64_t> scratch;
                   co_await naive_accumulate(c, every(j.n, 1, 0), j.root, b.mine, b.sum, scratch, 0);
                 } else {
                   co_await prim::sna(c, j.root, std::span<const std::int64_t>(b.mine), std::span<std::int64_t>(b.sum),
                                      std::plus<>{}, options_for(a, b));
                 }
               },
               [sum_check](const Job& j, Rank me, Buffers& b) {
                 if (me == j.root) sum_check(every(j.n, 1, 0), b.sum, "sna");
               }});
  t.push_back({"ssna",
               {"binomial", "naive"},
               "naive",
               false,
               sum_setup,
               [](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
                 if (a == "naive") {
                   std::vector<std::int64_t> scratch;
                   co_await naive_accumulate(c, j.half, j.root, b.mine, b.sum, scratch, 0);
                 } else {
                   co_await prim::ssna(c, j.root, j.half, std::span<const std::int64_t>(b.mine),
                                       std::span<std::int64_t>(b.sum), std::plus<>{}, options_for(a, b));
                 }
               },
               [sum_check](const Job& j, Rank me, Buffers& b) {
                 if (me == j.root) sum_check(j.half, b.sum, "ssna");
               }});
  t.push_back({"pmna",
               {"bruck", "trees", "naive"},
               "naive",
               true,
               [](const Job& j, Rank me, Buffers& b) {
                 const std::size_t count = std::max<std::size_t>(1, j.block / 8);
                 b.mine.resize(j.eighth.size() * count);
                 for (std::size_t d = 0; d < j.eighth.size(); ++d)
                   for (std::size_t i = 0; i < count; ++i) b.mine[d * count + i] = element(me, d * count + i);
                 b.sum.assign(count, 0);
               },
               [](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
                 if (a == "naive") {
                   const std::size_t count = b.sum.size();
                   std::vector<std::int64_t> scratch;
                   const std::vector<Rank> all = every(j.n, 1, 0);
                   for (std::size_t d = 0; d < j.eighth.size(); ++d) {
                     co_await naive_accumulate(c, all, j.eighth[d], std::span(b.mine).subspan(d * count, count), b.sum,
                                               scratch, static_cast<Tag>(d));
                   }
                 } else {
                   const bool dest = in(j.eighth, c.rank());
                   co_await prim::pmna(c, j.eighth, std::span<const std::int64_t>(b.mine),
                                       dest ? std::span<std::int64_t>(b.sum) : std::span<std::int64_t>{}, std::plus<>{},
                                       options_for(a, b));
                 }
               },
               [sum_check](const Job& j, Rank me, Buffers& b) {
                 if (!in(j.eighth, me)) return;
                 const std::size_t d = std::lower_bound(j.eighth.begin(), j.eighth.end(), me) - j.eighth.begin();
                 const std::size_t count = b.sum.size();
                 for (std::size_t i = 0; i < count; ++i) {
                   std::int64_t want = 0;
                   for (Rank r = 0; r < j.n; ++r) want += element(r, d * count + i);
                   if (b.sum[i] != want) throw std::runtime_error("pmna: element " + std::to_string(i) + " wrong");
                 }
               }});
  // --- scatters and gathers ---
  for (bool selective : {false, true}) {
    const std::string s = selective ? "ss" : "s";
    t.push_back({s + "ns",
                 {"binomial", "direct"},
                 "direct",
                 false,
                 [selective](const Job& j, Rank me, Buffers& b) {
                   const std::vector<Rank> m = selective ? j.half : every(j.n, 1, 0);
                   b.recv.assign(j.block, std::byte{0});
                   if (me != j.root) return;
                   b.send.resize(m.size() * j.block);
                   for (std::size_t k = 0; k < m.size(); ++k)
                     fill(std::span(b.send).subspan(k * j.block, j.block), j.root, m[k]);
                 },
                 [selective](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
                   if (selective) {
                     co_await prim::ssns(c, j.root, j.half, b.send, b.recv, options_for(a, b));
                   } else {
                     co_await prim::sns(c, j.root, b.send, b.recv, options_for(a, b));
                   }
                 },
                 [selective](const Job& j, Rank me, Buffers& b) {
                   if (selective && !in(j.half, me)) return;
                   check(b.recv, j.root, me, "scatter");
                 }});
    t.push_back({s + "ng",
                 {"binomial", "direct"},
                 "direct",
                 false,
                 [selective](const Job& j, Rank me, Buffers& b) {
                   const std::vector<Rank> m = selective ? j.half : every(j.n, 1, 0);
                   b.send.resize(j.block);
                   fill(b.send, me, j.root);
                   b.recv.assign(me == j.root ? m.size() * j.block : 0, std::byte{0});
                 },
                 [selective](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
                   const bool member = !selective || in(j.half, c.rank());
                   const auto send = member ? std::span<const std::byte>(b.send) : std::span<const std::byte>{};
                   if (selective) {
                     co_await prim::ssng(c, j.root, j.half, send, b.recv, options_for(a, b));
                   } else {
                     co_await prim::sng(c, j.root, send, b.recv, options_for(a, b));
                   }
                 },
                 [selective](const Job& j, Rank me, Buffers& b) {
                   if (me != j.root) return;
                   const std::vector<Rank> m = selective ? j.half : every(j.n, 1, 0);
                   for (std::size_t k = 0; k < m.size(); ++k)
                     check(std::span(b.recv).subspan(k * j.block, j.block), m[k], j.root, "gather");
                 }});
  }
  // --- permutation: a rotation by n/2 ---
  t.push_back(
      {"permutation",
       {"direct"},
       "",
       false,
       [](const Job& j, Rank me, Buffers& b) {
         b.send.resize(j.block);
         fill(b.send, me, (me + j.n / 2) % j.n);
         b.recv.assign(j.block, std::byte{0});
       },
       [](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
         std::vector<Rank> destination(j.n);
         for (Rank r = 0; r < j.n; ++r) destination[r] = (r + j.n / 2) % j.n;
         co_await prim::permutation(c, destination, b.send, b.recv, options_for(a, b));
       },
       [](const Job& j, Rank me, Buffers& b) { check(b.recv, (me + j.n - j.n / 2) % j.n, me, "permutation"); }});
  t.push_back({"one-to-one",
               {"direct"},
               "",
               false,
               [](const Job& j, Rank, Buffers& b) {
                 b.send.resize(j.block);
                 fill(b.send, 1 % j.n, j.n - 1);
                 b.recv.assign(j.block, std::byte{0});
               },
               [](const Job& j, Communicator c, Buffers& b, const std::string&) -> Task<void> {
                 co_await prim::one_to_one(c, 1 % j.n, j.n - 1, b.send, b.recv);
               },
               [](const Job& j, Rank me, Buffers& b) {
                 if (me != j.n - 1) return;
                 check(b.recv, 1 % j.n, j.n - 1, "one-to-one");
               }});
  // --- multinode broadcasts ---
  for (bool partial : {false, true}) {
    t.push_back({partial ? "pmnb" : "mnb",
                 partial ? std::vector<std::string>{"bruck", "ring", "direct"}
                         : std::vector<std::string>{"bruck", "ring", "direct", "runtime"},
                 "direct", true,
                 [partial](const Job& j, Rank me, Buffers& b) {
                   b.send.resize(j.block);
                   fill(b.send, me, kAll);
                   b.recv.assign((partial ? j.eighth.size() : j.n) * j.block, std::byte{0});
                 },
                 [partial](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
                   if (a == "runtime") {
                     auto got = co_await c.allgather(b.send);
                     std::memcpy(b.recv.data(), got.data(), got.size());
                   } else if (partial) {
                     co_await prim::pmnb(c, j.eighth, b.send, b.recv, options_for(a, b));
                   } else {
                     co_await prim::mnb(c, b.send, b.recv, options_for(a, b));
                   }
                 },
                 [partial](const Job& j, Rank, Buffers& b) {
                   const std::vector<Rank> s = partial ? j.eighth : every(j.n, 1, 0);
                   for (std::size_t k = 0; k < s.size(); ++k)
                     check(std::span(b.recv).subspan(k * j.block, j.block), s[k], kAll, "allgather");
                 }});
  }
  // --- personalized exchanges ---
  enum Kind { kTe, kPmns, kPmng };
  for (Kind kind : {kTe, kPmns, kPmng}) {
    const char* name = kind == kTe ? "te" : kind == kPmns ? "pmns" : "pmng";
    std::vector<std::string> algorithms{"bruck", "pairwise", "direct"};
    if (kind == kTe) algorithms.push_back("plan");
    t.push_back({name, algorithms, "direct", true,
                 [kind](const Job& j, Rank me, Buffers& b) {
                   const std::vector<Rank> to = kind == kPmng ? j.eighth : every(j.n, 1, 0);
                   const std::vector<Rank> from = kind == kPmns ? j.eighth : every(j.n, 1, 0);
                   b.send.resize(kind == kPmns && !in(j.eighth, me) ? 0 : to.size() * j.block);
                   for (std::size_t k = 0; k * j.block < b.send.size(); ++k)
                     fill(std::span(b.send).subspan(k * j.block, j.block), me, to[k]);
                   b.recv.assign(kind == kPmng && !in(j.eighth, me) ? 0 : from.size() * j.block, std::byte{0});
                 },
                 [kind](const Job& j, Communicator c, Buffers& b, const std::string& a) -> Task<void> {
                   if (a == "plan") {
                     std::vector<std::uint64_t> displacement(j.n);
                     for (Rank q = 0; q < j.n; ++q) displacement[q] = q * j.block;
                     std::memcpy(b.recv.data() + c.rank() * j.block, b.send.data() + c.rank() * j.block, j.block);
                     co_await j.plan->run(c, b.send, displacement, b.recv, displacement);
                   } else if (kind == kTe) {
                     co_await prim::te(c, b.send, b.recv, options_for(a, b));
                   } else if (kind == kPmns) {
                     co_await prim::pmns(c, j.eighth, b.send, b.recv, options_for(a, b));
                   } else {
                     co_await prim::pmng(c, j.eighth, b.send, b.recv, options_for(a, b));
                   }
                 },
                 [kind](const Job& j, Rank me, Buffers& b) {
                   const std::vector<Rank> from = kind == kPmns ? j.eighth : every(j.n, 1, 0);
                   for (std::size_t k = 0; k * j.block < b.recv.size(); ++k)
                     check(std::span(b.recv).subspan(k * j.block, j.block), from[k], me, "exchange");
                 }});
  }
  return t;
}

// The plan of the total exchange, made once per (n, block), outside the timing.
const schedulers::ExchangePlan& te_plan(Rank n, std::size_t block) {
  static std::map<std::pair<Rank, std::size_t>, std::unique_ptr<schedulers::ExchangePlan>> plans;
  auto& plan = plans[{n, block}];
  if (!plan) {
    schedulers::CommMatrix m(n);
    for (Rank s = 0; s < n; ++s)
      for (Rank d = 0; d < n; ++d)
        if (s != d) m.set(s, d, block);
    schedulers::ExchangePlanOptions options;
    options.scheduler = "optimal";
    plan = std::make_unique<schedulers::ExchangePlan>(m, options);
  }
  return *plan;
}

// Calls per chunk: about 4 MB of blocks delivered per chunk, at least one call.
int calls_per_chunk(const TaskBench& t, Rank n, std::size_t block) {
  const double delivered = (t.multinode_memory ? double(n) * n : double(n)) * double(block) + 2000.0 * n;
  return static_cast<int>(std::clamp(4e6 / delivered, 1.0, 64.0));
}

// Chunks of `per_chunk` calls between barriers, timed by rank 0: the figure's
// (call(0)) alternating with the baseline's (call(1)) when there is one.
template <class CallOf>
Task<void> alternate_chunks(Communicator c, int chunks, int per_chunk, bool with_baseline, sybench::ChunkTimer& figure,
                            sybench::ChunkTimer& baseline, CallOf call) {
  for (int chunk = 0; chunk < chunks; ++chunk) {
    for (int side = 0; side < (with_baseline ? 2 : 1); ++side) {
      co_await c.barrier();
      if (c.rank() == 0) (side == 0 ? figure : baseline).start();
      for (int i = 0; i < per_chunk; ++i) co_await call(side);
      co_await c.barrier();
      if (c.rank() == 0) (side == 0 ? figure : baseline).lap();
    }
  }
}

// Runs one job: figure and baseline chunks alternating, the first and last
// call of each checked. Returns seconds per call of the figure and of the baseline.
std::pair<double, double> measure(const TaskBench& t, const Job& j, const std::string& algorithm) {
  const int per_chunk = calls_per_chunk(t, j.n, j.block);
  sybench::ChunkTimer figure(per_chunk), baseline(per_chunk);
  // The naive multinode tasks at 512 processes post n - 1 sends and receives
  // at once on every process and take seconds per call (docs/benchmarks.md):
  // there the naive line runs one timed chunk and no last call, and the other
  // lines compare with it across lines of the same run instead of in the job.
  const bool slow_naive = t.multinode_memory && j.n >= 512;
  const bool with_baseline = !t.naive.empty() && t.naive != algorithm && !slow_naive;
  const int chunks = slow_naive && algorithm == t.naive ? 1 : kChunksPerJob;
  sybench::runtime().run(
      j.n,
      [&](Process& p) -> Task<void> {
        const Communicator c = p.world();
        Buffers b;
        t.setup(j, c.rank(), b);
        const auto clear = [&b] {
          std::fill(b.recv.begin(), b.recv.end(), std::byte{0});
          std::fill(b.sum.begin(), b.sum.end(), 0);
        };
        for (const std::string* a : {&algorithm, &t.naive}) {  // first calls, checked
          if (a->empty() || (a == &t.naive && !with_baseline)) continue;
          clear();
          co_await c.barrier();
          co_await t.call(j, c, b, *a);
          t.check(j, c.rank(), b);
        }
        co_await alternate_chunks(c, chunks, per_chunk, with_baseline, figure, baseline,
                                  [&](int side) { return t.call(j, c, b, side == 0 ? algorithm : t.naive); });
        if (chunks == 1) co_return;
        clear();
        co_await c.barrier();  // nobody's call may write into a buffer before its owner cleared it
        co_await t.call(j, c, b, algorithm);  // the last call, checked
        t.check(j, c.rank(), b);
      },
      sybench::round_robin());
  return {figure.per_op(), with_baseline ? baseline.per_op() : 0.0};
}

double job_bytes(const TaskBench& t, Rank n, std::size_t block) {
  return (t.multinode_memory ? 4.0 * n * n : 4.0 * n) * double(block);
}

void register_all() {
  static const std::vector<TaskBench> all = tasks();
  for (const TaskBench& t : all) {
    for (Rank n : {32u, 512u}) {
      for (std::size_t block : {std::size_t{16}, std::size_t{1024}, std::size_t{65536}}) {
        if (job_bytes(t, n, block) > kMaxJobBytes) continue;
        if (t.multinode_memory && double(n) * n * block > kMaxMultinodeBytesPerCall &&
            !std::getenv("BENCH_PRIMITIVES_LARGE")) {
          continue;
        }
        for (const std::string& a : t.algorithms) {
          const std::string name =
              "BM_Primitive/" + t.name + "/" + a + "/n:" + std::to_string(n) + "/bytes:" + std::to_string(block);
          benchmark::RegisterBenchmark(name.c_str(),
                                       [&t, a, n, block](benchmark::State& state) {
                                         Job j;
                                         j.n = n;
                                         j.block = block;
                                         j.root = n / 3;
                                         j.half = every(n, 2, 1);
                                         j.eighth = every(n, 8, 3);
                                         try {
                                           if (a == "plan") j.plan = &te_plan(n, block);
                                           double figure = 0, naive = 0;
                                           for (auto _ : state) {
                                             const auto [f, b] = measure(t, j, a);
                                             state.SetIterationTime(f);
                                             figure += f;
                                             naive += b;
                                           }
                                           if (naive > 0) {
                                             state.counters["naive_ns"] = naive / state.iterations() * 1e9;
                                             state.counters["x_naive"] = figure / naive;
                                           }
                                         } catch (const std::exception& e) {
                                           sybench::fail(state, e);
                                         }
                                       })
              ->UseManualTime()
              ->Iterations(1)
              ->ReportAggregatesOnly(true)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
}

// Sparse transposition (section 3.2): n x n with M1 dense columns and M2 dense
// rows, transposed by PMNS + PMNG, by ExchangePlans of the nonzeros (optimal,
// cgm, ac) and by TE, the dense method, which runs in alternating chunks of
// the same job as the baseline (te_ns, x_te = Time / te_ns). Every process
// checks its transposed column against the sequential transpose after the
// first and the last call.
std::pair<double, double> measure_transpose(const prim::CommMatrix& a, const prim::SparseTransposer& figure,
                                            const prim::SparseTransposer& dense) {
  const int per_chunk = std::max(1, static_cast<int>(2000 / a.size()));
  sybench::ChunkTimer t_figure(per_chunk), t_dense(per_chunk);
  sybench::runtime().run(
      a.size(),
      [&](Process& p) -> Task<void> {
        const Communicator c = p.world();
        const std::vector<prim::MatrixEntry> column = a.column(c.rank());
        const std::vector<prim::MatrixEntry> want = prim::transposed_column(a, c.rank());
        prim::Workspace ws;
        std::vector<prim::MatrixEntry> got;
        const auto verify = [&](const char* when) {
          if (got != want)
            throw std::runtime_error(std::string("sparse transpose: column ") + std::to_string(c.rank()) + " wrong " +
                                     when);
        };
        co_await figure.run(c, column, got, ws);
        verify("on the first call");
        co_await alternate_chunks(c, kChunksPerJob, per_chunk, true, t_figure, t_dense,
                                  [&](int side) { return (side == 0 ? figure : dense).run(c, column, got, ws); });
        co_await figure.run(c, column, got, ws);
        verify("on the last call");
      },
      sybench::round_robin());
  return {t_figure.per_op(), t_dense.per_op()};
}

void register_transpose() {
  struct Lines {
    Rank m1, m2;
  };
  for (Rank n : {64u, 256u}) {
    std::vector<Lines> lines{{1, 1}, {4, 4}, {16, 0}, {0, 16}, {16, 16}};
    if (n / 4 != 16) lines.push_back({n / 4, n / 4});
    for (Lines l : lines) {
      for (const char* method : {"pmns+pmng", "optimal", "cgm", "ac"}) {
        const std::string name = "BM_SparseTranspose/" + std::string(method) + "/n:" + std::to_string(n) +
                                 "/M1:" + std::to_string(l.m1) + "/M2:" + std::to_string(l.m2);
        benchmark::RegisterBenchmark(name.c_str(),
                                     [n, l, method](benchmark::State& state) {
                                       try {
                                         const prim::CommMatrix a =
                                             prim::dense_lines_matrix(n, l.m1, l.m2, 0.0, 42 + n + l.m1 * 7 + l.m2);
                                         prim::SparseTransposeOptions options;
                                         if (std::string(method) != "pmns+pmng") {
                                           options.method = prim::TransposeMethod::kExchangePlan;
                                           options.scheduler = method;
                                         }
                                         const prim::SparseTransposer figure(a, options);
                                         prim::SparseTransposeOptions te;
                                         te.method = prim::TransposeMethod::kTotalExchange;
                                         const prim::SparseTransposer dense(a, te);
                                         double f = 0, d = 0;
                                         for (auto _ : state) {
                                           const auto [x, y] = measure_transpose(a, figure, dense);
                                           state.SetIterationTime(x);
                                           f += x;
                                           d += y;
                                         }
                                         state.counters["te_ns"] = d / state.iterations() * 1e9;
                                         state.counters["x_te"] = f / d;
                                         state.counters["nonzeros"] = static_cast<double>(a.messages());
                                       } catch (const std::exception& e) {
                                         sybench::fail(state, e);
                                       }
                                     })
            ->UseManualTime()
            ->Iterations(1)
            ->ReportAggregatesOnly(true)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  register_transpose();
  // Three repetitions unless the command line says otherwise: the full run stays within minutes.
  std::vector<char*> args(argv, argv + argc);
  std::string repetitions = "--benchmark_repetitions=3";
  bool given = false;
  for (int i = 1; i < argc; ++i) given |= std::strncmp(argv[i], "--benchmark_repetitions", 23) == 0;
  if (!given) args.insert(args.begin() + 1, repetitions.data());
  return sybench::main(static_cast<int>(args.size()), args.data(),
                       "primitives: Time = us per task call; naive_ns = the naive direct one, same job");
}
