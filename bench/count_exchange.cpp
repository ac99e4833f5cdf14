// What one process's share of a small exchange costs in instructions and
// cache lines, counted rather than timed: wall-clock figures on a shared VM
// swing by up to 3x for minutes at a time, counts do not. Run under
// valgrind's callgrind by scripts/count-instructions.sh, which runs it for two
// numbers of exchanges and takes the difference, so that what a run does once
// (the job, the plan, the buffers) drops out.
//
//   count_exchange [--processes N] [--density D] [--bytes B] [--exchanges K] [--floor | --back-to-back]
//
// Every process on one core, a Ranka-Wang-Fox Fig. 7 matrix (as bench_exchange):
//  - by default bench_exchange's BM_Exchange shape: each process binds the AC
//    plan to its buffers once, then each exchange is a barrier and the bound
//    run;
//  - --back-to-back: the bound runs one after the other with no barrier
//    between, as a loop of runs is written (a bound run synchronises its
//    members itself): what the barrier adds to the default shape is the
//    difference;
//  - --floor: bench_exchange's process floor (bare_process.hpp): the core's
//    thread resumes each process once per exchange, and it copies its own
//    incoming messages from its senders' buffers and suspends.
// Both use ExchangeBuffers' layout. After every exchange each receiver checks
// every byte and poisons its buffers again, with callgrind's collection
// switched off around it (a no-op outside callgrind): the counts are the
// exchange's alone. Exit 1 on a wrong byte, 2 on bad arguments.

#include <switchyard/errors.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/payload.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bare_process.hpp"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

namespace {

namespace sy = switchyard;
namespace sys = switchyard::schedulers;

struct Options {
  sy::Rank processes = 32;
  sy::Rank density = 8;
  std::uint64_t bytes = 16;
  std::uint32_t exchanges = 200;
  bool floor = false;
  bool back_to_back = false;  // no barrier before each run
};

constexpr std::uint64_t kMatrixSeed = 7, kPayloadSeed = 1;

constexpr std::uint64_t kMostValue = 1'000'000;
// Both sides' buffers, each message on lines of its own (ExchangeBuffers): refused above this.
constexpr std::uint64_t kMostBufferBytes = std::uint64_t{1} << 30;

std::uint64_t positive(const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(value, &used);
  } catch (const std::exception&) {
    used = 0;  // not a number, or beyond unsigned long long
  }
  if (used == 0 || used != value.size() || v == 0 || v > kMostValue) {
    throw std::invalid_argument(flag + " takes a whole number from 1 to " + std::to_string(kMostValue) + ", not '" +
                                value + "'");
  }
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--floor" || flag == "--back-to-back") {
      (flag == "--floor" ? o.floor : o.back_to_back) = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--processes") {
      o.processes = static_cast<sy::Rank>(positive(flag, value));
    } else if (flag == "--density") {
      o.density = static_cast<sy::Rank>(positive(flag, value));
    } else if (flag == "--bytes") {
      o.bytes = positive(flag, value);
    } else if (flag == "--exchanges") {
      o.exchanges = static_cast<std::uint32_t>(positive(flag, value));
    } else {
      throw std::invalid_argument("unknown option '" + flag + "'");
    }
  }
  if (o.density > o.processes) throw std::invalid_argument("--density must be at most --processes");
  if (o.floor && o.back_to_back) throw std::invalid_argument("--floor and --back-to-back exclude each other");
  const std::uint64_t lines = (o.bytes + 63) / 64;  // each message's, in each of its two buffers
  if (2 * std::uint64_t{o.processes} * o.density * lines * 64 > kMostBufferBytes) {
    throw std::invalid_argument("the buffers of --processes x --density messages of --bytes would take over 1 GiB");
  }
  return o;
}

// Checks rank b's receive buffers and poisons them for the next exchange,
// uncounted; the first wrong byte, if any.
std::optional<std::string> check_and_poison(sys::ExchangeBuffers& b) {
  CALLGRIND_TOGGLE_COLLECT;
  std::optional<std::string> wrong;
  if (const auto mismatch = b.verify()) wrong = mismatch->describe();
  b.poison();
  CALLGRIND_TOGGLE_COLLECT;
  return wrong;
}

// bench_exchange's shape (see the file's description), on one core.
std::optional<std::string> run_switchyard(const sys::CommMatrix& m, const Options& o) {
  sys::ExchangePlanOptions po;
  po.scheduler = "ac";
  const sys::ExchangePlan plan(m, po);
  sy::RuntimeOptions one_core;
  one_core.cores = {0};
  sy::Runtime rt(one_core);
  std::optional<std::string> wrong;
  rt.run(o.processes, [&](sy::Process& p) -> sy::Task<void> {
    sys::ExchangeBuffers b(m, p.rank(), kPayloadSeed);
    const std::vector<std::span<const std::byte>> send = b.send_buffers();
    const std::vector<std::span<std::byte>> recv = b.recv_buffers();
    b.poison();
    sys::BoundExchange bound = plan.bind(p, send, recv);
    for (std::uint32_t k = 0; k < o.exchanges; ++k) {
      if (!o.back_to_back) co_await p.barrier();
      co_await bound.run();
      if (auto w = check_and_poison(b); w && !wrong) wrong = "exchange " + std::to_string(k + 1) + ": " + *w;
    }
    co_await p.barrier();  // no buffer goes while another process may still read it
  });
  return wrong;
}

// The process floor (see the file's description), on this thread.
std::optional<std::string> run_floor(const sys::CommMatrix& m, const Options& o) {
  std::vector<std::unique_ptr<sys::ExchangeBuffers>> buffers;
  for (sy::Rank r = 0; r < o.processes; ++r)
    buffers.push_back(std::make_unique<sys::ExchangeBuffers>(m, r, kPayloadSeed));
  const std::vector<std::vector<sybench::IncomingCopy>> incoming = sybench::incoming_copies(buffers);
  for (auto& b : buffers) b->poison();
  std::vector<sybench::BareProcess> processes;
  for (sy::Rank r = 0; r < o.processes; ++r) processes.push_back(sybench::copying_process(incoming[r]));
  for (std::uint32_t k = 0; k < o.exchanges; ++k) {
    for (const sybench::BareProcess& process : processes) process.resume();
    for (auto& b : buffers) {
      if (auto w = check_and_poison(*b)) return "exchange " + std::to_string(k + 1) + ": " + *w;
    }
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {  // std::stoull's own errors as well
    std::fprintf(stderr,
                 "count_exchange: %s\nusage: count_exchange [--processes N] [--density D] [--bytes B] "
                 "[--exchanges K] [--floor | --back-to-back]\n",
                 e.what());
    return 2;
  }
  try {
    const sys::CommMatrix m = sys::fig7_matrix(o.processes, o.density, o.bytes, kMatrixSeed);
    const std::optional<std::string> wrong = o.floor ? run_floor(m, o) : run_switchyard(m, o);
    if (wrong) {
      std::fprintf(stderr, "count_exchange: %s\n", wrong->c_str());
      return 1;
    }
    std::printf("count_exchange: %s, n=%u d=%u %llu B, %u exchanges on one core, every byte checked\n",
                o.floor          ? "process floor"
                : o.back_to_back ? "switchyard (bound AC runs back to back)"
                                 : "switchyard (barrier, bound AC run)",
                o.processes, o.density, static_cast<unsigned long long>(o.bytes), o.exchanges);
    return 0;
  } catch (const sy::InvalidArgument& e) {
    std::fprintf(stderr, "count_exchange: %s\n", e.what());
    return 2;
  }
}
