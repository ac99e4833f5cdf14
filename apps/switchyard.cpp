// switchyard: the command-line tool.
//
//   switchyard topology [--cores LIST]
//       What hwloc found, and how each worker thread is bound.
//   switchyard exchange [--processes N] [--density D] [--bytes LIST] [--repeat K] ...
//       An all-to-many personalized exchange: every process sends one message to
//       each of D distinct destinations and receives one from each of D distinct
//       sources. Every payload byte is checked. The only scheduler so far is "ac"
//       (all-to-many: post every receive and every send at once, then wait).
//
// Exit codes: 0 success, 1 runtime failure (stall, wrong payload, ...), 2 bad input.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <switchyard/runtime.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sy = switchyard;

namespace {

// ---------------------------------------------------------------------------
// Errors and exit codes
// ---------------------------------------------------------------------------

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// Bad input: the message names the option and the offending value.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------
// Parsing of option values
// ---------------------------------------------------------------------------

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A whole number in [lo, hi]; `what` is the option, for the message.
std::uint64_t parse_uint(std::string_view text, const std::string& what, std::uint64_t lo, std::uint64_t hi) {
  const std::string_view s = trim(text);
  if (s.empty()) throw UsageError(what + ": a number is required, got an empty value");
  if (s.front() == '-') {
    throw UsageError(what + ": '" + std::string(text) + "' is negative; it must be between " + std::to_string(lo) +
                     " and " + std::to_string(hi));
  }
  std::uint64_t v = 0;
  const char* begin = s.data() + (s.front() == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    throw UsageError(what + ": '" + std::string(text) + "' is too large; it must be between " + std::to_string(lo) +
                     " and " + std::to_string(hi));
  }
  if (ec != std::errc() || end != s.data() + s.size() || begin == end) {
    throw UsageError(what + ": '" + std::string(text) + "' is not a whole number");
  }
  if (v < lo || v > hi) {
    throw UsageError(what + ": " + std::to_string(v) + " is out of range; it must be between " + std::to_string(lo) +
                     " and " + std::to_string(hi));
  }
  return v;
}

// A byte count with an optional binary suffix: 16, 1024, 64K, 64KiB, 1M, 1G.
std::uint64_t parse_byte_count(std::string_view text, const std::string& what, std::uint64_t max) {
  std::string_view s = trim(text);
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::uint64_t unit = 1;
  for (const auto& [suffix, u] : {std::pair<std::string_view, std::uint64_t>{"kib", 1ull << 10}, {"mib", 1ull << 20},
                                  {"gib", 1ull << 30}, {"k", 1ull << 10}, {"m", 1ull << 20}, {"g", 1ull << 30}}) {
    if (lower.size() > suffix.size() && std::string_view(lower).substr(lower.size() - suffix.size()) == suffix) {
      s.remove_suffix(suffix.size());
      unit = u;
      break;
    }
  }
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw UsageError(what + ": '" + std::string(text) +
                     "' is not a byte count (write e.g. 16, 1024, 64K or 1M; K, M, G are powers of 1024)");
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > max / unit) {
    throw UsageError(what + ": '" + std::string(text) + "' is too large; a message may be at most " +
                     std::to_string(max) + " bytes (1 GiB)");
  }
  return v * unit;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    const auto pos = s.find(sep);
    parts.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos) return parts;
    s.remove_prefix(pos + 1);
  }
}

std::vector<std::uint64_t> parse_byte_list(const std::string& text, std::uint64_t max) {
  if (trim(text).empty()) throw UsageError("--bytes: the list is empty (write e.g. --bytes 16,1024,65536)");
  std::vector<std::uint64_t> sizes;
  for (std::string_view item : split(text, ',')) {
    if (trim(item).empty()) {
      throw UsageError("--bytes: '" + text + "' has an empty entry (write e.g. --bytes 16,1024,65536)");
    }
    sizes.push_back(parse_byte_count(item, "--bytes", max));
  }
  return sizes;
}

// A CPU list as taskset writes it: "0,1", "0-3", "0-3,8".
std::vector<int> parse_core_list(const std::string& text) {
  const std::string example = " (write OS CPU numbers, e.g. --cores 0,1 or --cores 0-3; see 'switchyard topology')";
  if (trim(text).empty()) throw UsageError("--cores: the list is empty" + example);
  std::vector<int> cores;
  for (std::string_view item : split(text, ',')) {
    const std::string_view t = trim(item);
    const std::string where = "'" + std::string(item) + "'" + (item.size() == text.size() ? "" : " in '" + text + "'");
    const auto dash = t.find('-', 1);
    std::uint64_t lo = 0, hi = 0;
    try {
      lo = parse_uint(t.substr(0, dash), "--cores", 0, 1 << 20);
      hi = dash == std::string_view::npos ? lo : parse_uint(t.substr(dash + 1), "--cores", 0, 1 << 20);
    } catch (const UsageError&) {
      throw UsageError("--cores: " + where + " is not a CPU number or range" + example);
    }
    if (lo > hi) throw UsageError("--cores: the range " + where + " runs backwards" + example);
    for (auto c = lo; c <= hi; ++c) cores.push_back(static_cast<int>(c));
  }
  return cores;
}

// Builds the runtime; a core the process may not use is bad input, not a failure.
std::unique_ptr<sy::Runtime> make_runtime(const std::vector<int>& cores) {
  try {
    return std::make_unique<sy::Runtime>(sy::RuntimeOptions{.cores = cores});
  } catch (const sy::InvalidArgument& e) {
    std::string_view what = e.what();
    if (what.starts_with("switchyard: ")) what.remove_prefix(12);
    throw UsageError("--cores: " + std::string(what));
  }
}

// ---------------------------------------------------------------------------
// Output files: checked before the exchange runs, written after it
// ---------------------------------------------------------------------------

class OutputFile {
 public:
  OutputFile(std::string option, std::string path) : option_(std::move(option)), path_(std::move(path)) {
    std::error_code ec;
    existed_ = std::filesystem::exists(path_, ec);
    if (std::filesystem::is_directory(path_, ec)) throw UsageError(option_ + ": '" + path_ + "' is a directory");
    errno = 0;
    std::ofstream probe(path_, std::ios::app);  // creates it if need be, never truncates
    if (!probe) {
      throw UsageError(option_ + ": cannot write to '" + path_ + "'" +
                       (errno ? std::string(": ") + std::strerror(errno) : std::string()));
    }
  }
  // The run failed: do not leave behind an empty file that was not there before.
  void abandon() {
    std::error_code ec;
    if (!existed_ && std::filesystem::is_empty(path_, ec)) std::filesystem::remove(path_, ec);
  }
  void write(const std::string& text) {
    std::ofstream out(path_, std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error(option_ + ": writing '" + path_ + "' failed");
  }
  const std::string& path() const { return path_; }

 private:
  std::string option_;
  std::string path_;
  bool existed_ = false;
};

// ---------------------------------------------------------------------------
// The exchange
// ---------------------------------------------------------------------------

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The payload of the message src -> dst of `size` bytes: a splitmix64 stream
// seeded from all four, so a byte in the wrong message or at the wrong offset shows.
class PayloadStream {
 public:
  PayloadStream(sy::Rank src, sy::Rank dst, std::uint64_t size, std::uint64_t seed) {
    state_ = seed;
    splitmix64(state_);
    state_ ^= (std::uint64_t{src} << 32) | dst;
    splitmix64(state_);
    state_ ^= size;
  }
  std::uint64_t next() { return splitmix64(state_); }

 private:
  std::uint64_t state_;
};

void fill_payload(std::span<std::byte> out, sy::Rank src, sy::Rank dst, std::uint64_t seed) {
  PayloadStream s(src, dst, out.size(), seed);
  std::size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    const std::uint64_t w = s.next();
    std::memcpy(out.data() + i, &w, 8);
  }
  if (i < out.size()) {
    const std::uint64_t w = s.next();
    std::memcpy(out.data() + i, &w, out.size() - i);
  }
}

// Offset of the first wrong byte, or nullopt if every byte is right.
std::optional<std::size_t> check_payload(std::span<const std::byte> in, sy::Rank src, sy::Rank dst, std::uint64_t seed) {
  PayloadStream s(src, dst, in.size(), seed);
  std::size_t i = 0;
  for (; i < in.size(); i += 8) {
    const std::uint64_t w = s.next();
    const std::size_t n = std::min<std::size_t>(8, in.size() - i);
    if (std::memcmp(in.data() + i, &w, n) != 0) {
      for (std::size_t j = 0; j < n; ++j) {
        if (in[i + j] != reinterpret_cast<const std::byte*>(&w)[j]) return i + j;
      }
    }
  }
  return std::nullopt;
}

// A portable seeded generator: mt19937_64's sequence is fixed by the standard,
// uniform_int_distribution's is not, so bounded draws are done here.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::uint64_t below(std::uint64_t bound) {  // uniform in [0, bound), bound > 0
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    for (;;) {
      const std::uint64_t x = engine_();
      if (x < limit) return x % bound;
    }
  }

 private:
  std::mt19937_64 engine_;
};

// Who sends to whom. A random relabelling pi of the ranks and d distinct random
// offsets o_1..o_d in [1, n): the process pi(i) sends to pi((i + o_k) mod n). So
// every process has d distinct destinations and d distinct sources, and none is itself.
struct Pattern {
  std::vector<std::vector<sy::Rank>> destinations;  // by rank
  std::vector<std::vector<sy::Rank>> sources;       // by rank, same order as the senders post
};

Pattern make_pattern(std::uint64_t n, std::uint64_t d, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<sy::Rank> pi(n);
  for (std::uint64_t i = 0; i < n; ++i) pi[i] = static_cast<sy::Rank>(i);
  for (std::uint64_t i = n; i > 1; --i) std::swap(pi[i - 1], pi[rng.below(i)]);
  std::vector<std::uint64_t> offsets(n > 0 ? n - 1 : 0);
  for (std::uint64_t i = 0; i < offsets.size(); ++i) offsets[i] = i + 1;
  for (std::uint64_t k = 0; k < d; ++k) std::swap(offsets[k], offsets[k + rng.below(offsets.size() - k)]);
  offsets.resize(d);

  Pattern p;
  p.destinations.assign(n, {});
  p.sources.assign(n, {});
  for (std::uint64_t i = 0; i < n; ++i) {
    for (std::uint64_t o : offsets) {
      p.destinations[pi[i]].push_back(pi[(i + o) % n]);
      p.sources[pi[i]].push_back(pi[(i + n - o) % n]);
    }
  }
  return p;
}

struct ExchangeConfig {
  std::uint64_t processes = 32;
  std::uint64_t density = 8;
  std::vector<std::uint64_t> sizes;
  std::uint64_t repeat = 5;
  std::uint64_t seed = 1;
  std::size_t mailbox_capacity = sy::RunOptions{}.mailbox_capacity;
};

struct SizeResult {
  std::uint64_t bytes = 0;
  std::vector<double> comm_ms;  // one per repetition
  double median = 0, min = 0, max = 0;
  std::uint64_t messages = 0;   // per repetition
  double megabytes = 0;         // per repetition, 10^6 bytes
  sy::JobStats stats;
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One job per message size; inside it, `repeat` timed exchanges. The time of an
// exchange runs from the first process leaving the barrier before it to the last
// process having all its receives and sends complete; payloads are checked after
// the clock stops, and receive buffers are poisoned before it starts, so a stale
// buffer cannot pass for a delivered one.
SizeResult run_size(sy::Runtime& rt, const ExchangeConfig& cfg, const Pattern& pattern, std::uint64_t bytes) {
  const std::uint64_t n = cfg.processes, d = cfg.density, k_max = cfg.repeat;
  std::vector<std::int64_t> start(n * k_max), end(n * k_max);

  sy::RunOptions options;
  options.mailbox_capacity = cfg.mailbox_capacity;

  auto body = [&](sy::Process& p) -> sy::Task<void> {
    const sy::Rank me = p.rank();
    const auto& dst = pattern.destinations[me];
    const auto& src = pattern.sources[me];
    std::vector<std::vector<std::byte>> out(d), in(d);
    for (std::uint64_t k = 0; k < d; ++k) {
      out[k].resize(bytes);
      fill_payload(out[k], me, dst[k], cfg.seed);
      in[k].resize(bytes);
    }
    std::vector<sy::RecvTicket> recvs;
    std::vector<sy::SendTicket> sends;
    recvs.reserve(d);
    sends.reserve(d);
    for (std::uint64_t rep = 0; rep < k_max; ++rep) {
      for (auto& b : in) std::fill(b.begin(), b.end(), static_cast<std::byte>(0xA5 ^ (rep & 0xff)));
      co_await p.barrier();
      start[rep * n + me] = now_ns();
      // AC: every receive, then every send, at once. Receives are waited for
      // before sends: a large (single-copy) send completes only when its receiver
      // takes it in, which it does while waiting for its receives.
      for (std::uint64_t k = 0; k < d; ++k) recvs.push_back(p.post_recv_into(src[k], in[k]));
      for (std::uint64_t k = 0; k < d; ++k) sends.push_back(p.post_send(dst[k], out[k]));
      for (auto& r : recvs) co_await p.wait(r);
      for (auto& s : sends) co_await p.wait(s);
      end[rep * n + me] = now_ns();
      // Checking takes time on this core: only once every process has stopped its clock.
      co_await p.barrier();
      for (std::uint64_t k = 0; k < d; ++k) {
        if (recvs[k].size() != bytes || recvs[k].source() != src[k]) {
          throw std::runtime_error("exchange: rank " + std::to_string(me) + ", repetition " + std::to_string(rep + 1) +
                                   ": expected " + std::to_string(bytes) + " bytes from rank " +
                                   std::to_string(src[k]) + ", got " + std::to_string(recvs[k].size()) +
                                   " bytes from rank " + std::to_string(recvs[k].source()));
        }
        if (auto bad = check_payload(in[k], src[k], me, cfg.seed)) {
          throw std::runtime_error("exchange: rank " + std::to_string(me) + ", repetition " + std::to_string(rep + 1) +
                                   ": byte " + std::to_string(*bad) + " of the " + std::to_string(bytes) +
                                   "-byte message from rank " + std::to_string(src[k]) + " is wrong");
        }
      }
      recvs.clear();
      sends.clear();
    }
  };

  SizeResult r;
  r.bytes = bytes;
  r.stats = rt.run(n, body, options);
  for (std::uint64_t rep = 0; rep < k_max; ++rep) {
    const auto first = *std::min_element(start.begin() + rep * n, start.begin() + (rep + 1) * n);
    const auto last = *std::max_element(end.begin() + rep * n, end.begin() + (rep + 1) * n);
    r.comm_ms.push_back(static_cast<double>(last - first) / 1e6);
  }
  std::vector<double> sorted = r.comm_ms;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t m = sorted.size();
  r.median = m % 2 ? sorted[m / 2] : (sorted[m / 2 - 1] + sorted[m / 2]) / 2;
  r.min = sorted.front();
  r.max = sorted.back();
  r.messages = n * d;
  r.megabytes = static_cast<double>(n * d) * static_cast<double>(bytes) / 1e6;
  return r;
}

std::uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, ++u;
  std::ostringstream s;
  s.precision(u ? 1 : 0);
  s << std::fixed << b << " " << units[u];
  return s.str();
}

struct ExchangeArgs {
  std::string processes = "32", density = "8", bytes = "16,1024,65536", repeat = "5", seed = "1";
  std::string cores, mailbox_capacity, json, csv;
};

int run_exchange(const ExchangeArgs& a) {
  constexpr std::uint64_t kMaxProcesses = 1'000'000;
  constexpr std::uint64_t kMaxBytes = 1ull << 30;
  ExchangeConfig cfg;
  cfg.processes = parse_uint(a.processes, "--processes", 1, kMaxProcesses);
  cfg.density = parse_uint(a.density, "--density", 0, kMaxProcesses - 1);
  if (cfg.density > cfg.processes - 1) {
    throw UsageError("--density: " + std::to_string(cfg.density) + " destinations per process is more than the " +
                     std::to_string(cfg.processes - 1) + " other processes of --processes " +
                     std::to_string(cfg.processes) + " (it must be between 0 and " +
                     std::to_string(cfg.processes - 1) + ")");
  }
  cfg.sizes = parse_byte_list(a.bytes, kMaxBytes);
  cfg.repeat = parse_uint(a.repeat, "--repeat", 1, 1'000'000);
  cfg.seed = parse_uint(a.seed, "--seed", 0, ~std::uint64_t{0});
  if (!a.mailbox_capacity.empty()) {
    cfg.mailbox_capacity = parse_uint(a.mailbox_capacity, "--mailbox-capacity", 1, std::size_t{1} << 24);
  }
  // Every process keeps its d outgoing and d incoming messages: 2 n d bytes.
  const std::uint64_t largest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
  const double needed = 2.0 * static_cast<double>(cfg.processes) * static_cast<double>(cfg.density) *
                        static_cast<double>(largest);
  const std::uint64_t memory = physical_memory();
  if (memory && needed > static_cast<double>(memory) / 2) {
    throw UsageError("--bytes: messages of " + std::to_string(largest) + " bytes with --processes " +
                     std::to_string(cfg.processes) + " and --density " + std::to_string(cfg.density) + " need " +
                     human_bytes(needed) + " of buffers, more than half of this machine's " + human_bytes(memory) +
                     " of memory");
  }
  std::optional<OutputFile> json, csv;
  if (!a.json.empty()) json.emplace("--json", a.json);
  if (!a.csv.empty()) csv.emplace("--csv", a.csv);
  const std::vector<int> cores = a.cores.empty() ? std::vector<int>{} : parse_core_list(a.cores);
  auto rt = make_runtime(cores);

  const Pattern pattern = make_pattern(cfg.processes, cfg.density, cfg.seed);
  std::printf("switchyard exchange: scheduler ac (all-to-many: post every receive and send at once)\n");
  std::printf("%llu processes on %zu core(s), density %llu, %llu repetition(s), seed %llu, mailbox capacity %zu packets\n\n",
              static_cast<unsigned long long>(cfg.processes), rt->cores().size(),
              static_cast<unsigned long long>(cfg.density), static_cast<unsigned long long>(cfg.repeat),
              static_cast<unsigned long long>(cfg.seed), cfg.mailbox_capacity);
  std::printf("%12s  %12s  %12s  %12s  %10s  %12s  %8s\n", "bytes", "median ms", "min ms", "max ms", "messages",
              "MB moved", "verified");
  std::fflush(stdout);

  std::vector<SizeResult> results;
  try {
    for (std::uint64_t bytes : cfg.sizes) {
      results.push_back(run_size(*rt, cfg, pattern, bytes));
      const SizeResult& r = results.back();
      std::printf("%12llu  %12.3f  %12.3f  %12.3f  %10llu  %12.3f  %8s\n", static_cast<unsigned long long>(r.bytes),
                  r.median, r.min, r.max, static_cast<unsigned long long>(r.messages), r.megabytes, "yes");
      std::fflush(stdout);
    }
  } catch (...) {
    if (json) json->abandon();
    if (csv) csv->abandon();
    throw;
  }
  std::printf("\ncomm time: from the first process leaving the barrier to the last one done; MB moved = 10^6 bytes "
              "per repetition\n");

  if (json) {
    nlohmann::ordered_json j;
    j["processes"] = cfg.processes;
    j["density"] = cfg.density;
    j["cores"] = rt->cores().size();
    j["core_list"] = rt->cores();
    j["repeat"] = cfg.repeat;
    j["seed"] = cfg.seed;
    j["mailbox_capacity"] = cfg.mailbox_capacity;
    j["results"] = nlohmann::ordered_json::array();
    for (const auto& r : results) {
      nlohmann::ordered_json row;
      row["scheduler"] = "ac";
      row["bytes"] = r.bytes;
      row["comm_ms"] = {{"median", r.median}, {"min", r.min}, {"max", r.max}};
      row["samples_ms"] = r.comm_ms;
      row["messages"] = r.messages;
      row["megabytes"] = r.megabytes;
      row["verified"] = true;
      row["packets"] = r.stats.packets;
      row["mailbox_full"] = r.stats.mailbox_full;
      j["results"].push_back(std::move(row));
    }
    json->write(j.dump(2) + "\n");
    std::printf("wrote %s\n", json->path().c_str());
  }
  if (csv) {
    std::ostringstream out;
    out.precision(6);
    out << std::fixed;
    out << "scheduler,processes,density,cores,bytes,repeat,comm_ms_median,comm_ms_min,comm_ms_max,messages,megabytes,"
           "verified\n";
    for (const auto& r : results) {
      out << "ac," << cfg.processes << "," << cfg.density << "," << rt->cores().size() << "," << r.bytes << ","
          << cfg.repeat << "," << r.median << "," << r.min << "," << r.max << "," << r.messages << "," << r.megabytes
          << ",yes\n";
    }
    csv->write(out.str());
    std::printf("wrote %s\n", csv->path().c_str());
  }
  return kExitOk;
}

int run_topology(const std::string& cores_text) {
  const std::vector<int> cores = cores_text.empty() ? std::vector<int>{} : parse_core_list(cores_text);
  auto rt = make_runtime(cores);
  // Workers bind themselves when their threads start, and the Runtime constructor
  // does not wait for that: a trivial job (every worker takes part in every job,
  // and only after binding) makes sure the bindings read back below are final.
  rt->run(1, [](sy::Process&) -> sy::Task<void> { co_return; });
  std::printf("%s", rt->topology().describe().c_str());
  const auto bindings = rt->worker_bindings();
  std::printf("workers (%zu, one per core):\n", bindings.size());
  for (const auto& b : bindings) std::printf("  %s\n", b.c_str());
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"switchyard: personalized communication between software processes pinned to cores", "switchyard"};
  app.set_version_flag("--version", std::string(SWITCHYARD_VERSION));
  app.require_subcommand(1);

  std::string topology_cores;
  auto* topology = app.add_subcommand("topology", "Show the machine as hwloc sees it and how workers are bound");
  topology->add_option("--cores", topology_cores, "OS CPUs to start workers on, e.g. 0,1 or 0-3 (default: all usable)")
      ->type_name("LIST");

  ExchangeArgs ex;
  auto* exchange = app.add_subcommand(
      "exchange", "Run an all-to-many personalized exchange (scheduler ac) and check every payload byte");
  exchange->add_option("--processes,-n", ex.processes, "Number of software processes")->type_name("N")->capture_default_str();
  exchange->add_option("--density,-d", ex.density, "Destinations (and sources) per process, at most N-1")
      ->type_name("D")
      ->capture_default_str();
  exchange->add_option("--bytes,-b", ex.bytes, "Message sizes, comma-separated; K, M, G suffixes are powers of 1024")
      ->type_name("LIST")
      ->capture_default_str();
  exchange->add_option("--repeat,-r", ex.repeat, "Timed repetitions per message size")->type_name("K")->capture_default_str();
  exchange->add_option("--seed", ex.seed, "Seed of the random communication pattern and payloads")
      ->type_name("S")
      ->capture_default_str();
  exchange->add_option("--cores", ex.cores, "OS CPUs to run on, e.g. 0,1 or 0-3 (default: all usable)")->type_name("LIST");
  exchange->add_option("--mailbox-capacity", ex.mailbox_capacity,
                       "Packets (cache lines) per core-to-core ring, 1..16777216 (default: " +
                           std::to_string(sy::RunOptions{}.mailbox_capacity) + ")")
      ->type_name("PACKETS");
  exchange->add_option("--json", ex.json, "Also write the results as JSON to FILE")->type_name("FILE");
  exchange->add_option("--csv", ex.csv, "Also write the results as CSV to FILE")->type_name("FILE");

  // CLI11 would only say that a subcommand is required.
  if (argc > 1 && argv[1][0] != '-' && std::string_view(argv[1]) != "topology" && std::string_view(argv[1]) != "exchange") {
    std::cerr << "switchyard: error: unknown command '" << argv[1]
              << "' (commands: topology, exchange)\nRun 'switchyard --help'.\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "switchyard: error: " << e.what() << "\nRun 'switchyard --help' or 'switchyard <command> --help'.\n";
    return kExitUsage;
  }

  try {
    if (*topology) return run_topology(topology_cores);
    if (*exchange) return run_exchange(ex);
    return kExitUsage;  // unreachable: a subcommand is required
  } catch (const UsageError& e) {
    std::cerr << "switchyard: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const sy::StallError& e) {
    std::cerr << e.what() << "\n";  // "switchyard: job stalled: ...", naming every blocked process
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "switchyard: failed: " << e.what() << "\n";
    return kExitFailure;
  }
}
