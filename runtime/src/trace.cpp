// Recording a trace (the span and worker hooks; a process's own are in
// process.cpp) and writing it as Chrome trace-event JSON.

#include "switchyard/trace.hpp"

#include "switchyard/machine_memory.hpp"

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "group.hpp"
#include "job_trace.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/process.hpp"
#include "trace_buffer.hpp"
#include "worker.hpp"

namespace switchyard {

using detail::TraceBuffer;
using detail::TraceEvent;

// --- recording ---

void TraceSpan::begin(Process& p, TraceCategory category, const char* name, const TraceArgs& args) noexcept {
  event_ = p.trace_->reserve();
  if (!event_) return;
  *event_ = TraceEvent{.begin = TraceBuffer::now(),
                       .name = name,
                       .label = args.label,
                       .value = args.value,
                       .bytes = args.bytes,
                       .rank = p.rank(),
                       .src = args.src,
                       .dst = args.dst,
                       .job = event_->job,
                       .category = category,
                       .has_bytes = args.has_bytes};
}

void TraceSpan::finish() noexcept { event_->end = TraceBuffer::now(); }

void TraceSpan::set_value(const char* label, std::uint64_t value) noexcept {
  event_->label = label;
  event_->value = value;
}

namespace detail {

void Worker::delivered(const RecvState& r, std::uint64_t started) {
  TraceEvent* e = trace_->reserve();
  if (!e) return;
  const std::uint64_t at = TraceBuffer::now();
  *e = TraceEvent{.begin = started ? started : at,
                  .end = at,
                  .name = "receive",
                  .label = "tag",
                  .value = r.tag,
                  .bytes = r.size,
                  .rank = r.owner,
                  .src = r.sender,
                  .dst = r.owner,
                  .context = r.context,
                  .job = e->job,
                  .category = TraceCategory::message,
                  .has_bytes = true};
}

void Worker::trace_run(const Process& p) {
  if (TraceEvent* e = trace_->reserve()) {
    *e = TraceEvent{.begin = p.run_began_,
                    .end = TraceBuffer::now(),
                    .name = "run",
                    .rank = p.rank(),
                    .job = e->job,
                    .category = TraceCategory::run};
  }
}

// --- the runtime's side ---

JobTrace::JobTrace(RunOptions& options, TraceLog* runtime_default) {
  if (!options.trace_file.empty()) {
    if (options.trace) throw InvalidArgument("switchyard: run: set RunOptions::trace or trace_file, not both");
    path_ = options.trace_file;
    file_ = std::make_unique<std::ofstream>(path_, std::ios::trunc);
    if (!*file_) {
      throw InvalidArgument("switchyard: run: cannot write the trace file '" + path_ + "': " + std::strerror(errno));
    }
    own_ = std::make_unique<TraceLog>();
    options.trace = own_.get();
  } else if (!options.trace) {
    options.trace = runtime_default;
  }
  log_ = options.trace;
  if (log_) {
    lock_ = log_->lock_for_job();
    log_->start_job();
  }
}

void JobTrace::job_over() {
  if (log_) log_->end_job();
}

void JobTrace::write_file() {
  if (!own_) return;
  own_->write(*file_);
  file_->close();
  if (!*file_) throw std::runtime_error("switchyard: writing the trace file '" + path_ + "' failed");
}

}  // namespace detail

// --- the log ---

TraceLog::TraceLog(std::size_t events_per_core)
    : events_per_core_(events_per_core), origin_ticks_(TraceBuffer::now()), origin_ns_(TraceBuffer::steady_ns()) {
  if (events_per_core == 0 || events_per_core > kMaxEventsPerCore) {
    throw InvalidArgument("switchyard: TraceLog: events_per_core must be between 1 and " +
                          std::to_string(kMaxEventsPerCore) + ", not " + std::to_string(events_per_core));
  }
}

TraceLog::~TraceLog() = default;

detail::TraceBuffer& TraceLog::buffer(int os_core, std::size_t cores_in_job) {
  auto& b = buffers_[os_core];
  if (!b) {
    const double needed =
        static_cast<double>(events_per_core_) * sizeof(TraceEvent) * static_cast<double>(cores_in_job);
    if (const std::string why = memory_shortfall(needed); !why.empty()) {
      throw InvalidArgument("switchyard: trace: " + std::to_string(events_per_core_) + " events per core on " +
                            std::to_string(cores_in_job) + " cores: " + why);
    }
    b = std::make_unique<TraceBuffer>(os_core, events_per_core_);
  }
  return *b;
}

void TraceLog::add_track(int os_core, Rank rank) { tracks_.emplace(os_core, rank); }

void TraceLog::start_job() {
  ++jobs_;
  for (auto& [core, b] : buffers_) b->start_job(jobs_);
}

void TraceLog::end_job() {
  const std::uint64_t at = TraceBuffer::now();
  for (auto& [core, b] : buffers_) b->close_open(0, at);
}

std::uint64_t TraceLog::events() const {
  std::uint64_t n = 0;
  for (const auto& [core, b] : buffers_) n += b->used();
  return n;
}

std::uint64_t TraceLog::dropped() const {
  std::uint64_t n = 0;
  for (const auto& [core, b] : buffers_) n += b->dropped();
  return n;
}

namespace {

const char* category_name(TraceCategory c) {
  static constexpr const char* names[] = {"run", "message", "wait", "collective", "phase", "lock", "user"};
  return names[static_cast<int>(c)];
}

// JSON text of a string: the names are ours or a library's, but a quote in
// one must not break the file.
void append_string(std::string& out, const char* s) {
  out += '"';
  for (; *s; ++s) {
    const auto c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

#if defined(__x86_64__)
constexpr const char* kClockName = "rdtsc at steady_clock's rate";
#else
constexpr const char* kClockName = "steady_clock";
#endif

// Ticks of the trace's clock to nanoseconds from the log's creation.
struct Timeline {
  std::uint64_t origin;
  double ns_per_tick;
  std::uint64_t ns(std::uint64_t ticks) const {
    return ticks > origin ? static_cast<std::uint64_t>(std::llround(static_cast<double>(ticks - origin) * ns_per_tick))
                          : 0;
  }
};

// Microseconds with the nanoseconds kept: "12.345".
void append_us(std::string& out, std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  out += buf;
}

void append_uint(std::string& out, const char* key, std::uint64_t v) {
  out += ",\"";
  out += key;
  out += "\":";
  out += std::to_string(v);
}

// Perfetto takes pid 0 and tid 0 for the kernel's idle task: cores and ranks count from 1.
std::uint64_t pid_of(int os_core) { return static_cast<std::uint64_t>(os_core) + 1; }
std::uint64_t tid_of(Rank rank) { return std::uint64_t{rank} + 1; }

void append_event(std::string& out, const TraceEvent& e, int os_core, const Timeline& time) {
  out += "{\"name\":";
  append_string(out, e.name);
  out += ",\"cat\":\"";
  out += category_name(e.category);
  out += "\",\"ph\":\"X\",\"ts\":";
  const std::uint64_t begin = time.ns(e.begin);
  append_us(out, begin);
  out += ",\"dur\":";
  append_us(out, std::max(time.ns(e.end), begin) - begin);
  append_uint(out, "pid", pid_of(os_core));
  append_uint(out, "tid", tid_of(e.rank));
  out += ",\"args\":{\"rank\":" + std::to_string(e.rank);
  if (e.src != kAnySource) append_uint(out, e.category == TraceCategory::wait ? "peer" : "src", e.src);
  if (e.dst != kAnySource) append_uint(out, "dst", e.dst);
  if (e.has_bytes) append_uint(out, "bytes", e.bytes);
  if (e.label) append_uint(out, e.label, e.value);
  if (e.category == TraceCategory::message) append_uint(out, "communicator", e.context);
  if (e.note) {
    out += ",\"what\":";
    append_string(out, e.note);
  }
  out += "}}";
}

// Arrows from each send to its receive: per job, communicator, pair and tag
// messages are taken in in the order they were sent.
struct FlowEnd {
  const TraceEvent* event;
  int os_core;
};
using FlowKey = std::tuple<std::uint32_t, ContextId, Rank, Rank, std::uint64_t>;

void append_flow(std::string& out, const char* phase, std::uint64_t id, const FlowEnd& end, const Timeline& time) {
  out += ",\n{\"name\":\"message\",\"cat\":\"message\",\"ph\":\"";
  out += phase;
  out += "\",\"id\":" + std::to_string(id);
  if (phase[0] == 'f') out += ",\"bp\":\"e\"";
  out += ",\"ts\":";
  append_us(out, time.ns(end.event->begin));
  append_uint(out, "pid", pid_of(end.os_core));
  append_uint(out, "tid", tid_of(end.event->rank));
  out += "}";
}

}  // namespace

void TraceLog::write(std::ostream& stream) const {
  const std::uint64_t ticks = TraceBuffer::now(), ns = TraceBuffer::steady_ns();
  const Timeline time{origin_ticks_,
                      ticks > origin_ticks_ && ns > origin_ns_
                          ? static_cast<double>(ns - origin_ns_) / static_cast<double>(ticks - origin_ticks_)
                          : 1.0};
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto next = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  std::set<int> cores;
  for (const auto& [core, b] : buffers_) cores.insert(core);
  for (const auto& [core, rank] : tracks_) cores.insert(core);
  for (int core : cores) {
    next();
    out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid_of(core)) +
           ",\"args\":{\"name\":\"core " + std::to_string(core) + "\"}},\n";
    out += "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(pid_of(core)) +
           ",\"args\":{\"sort_index\":" + std::to_string(core) + "}}";
  }
  for (const auto& [core, rank] : tracks_) {
    next();
    const std::string ids = "\"pid\":" + std::to_string(pid_of(core)) + ",\"tid\":" + std::to_string(tid_of(rank));
    out += "{\"name\":\"thread_name\",\"ph\":\"M\"," + ids + ",\"args\":{\"name\":\"rank " + std::to_string(rank) +
           "\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\"," + ids +
           ",\"args\":{\"sort_index\":" + std::to_string(rank) + "}}";
  }
  std::map<FlowKey, std::pair<std::vector<FlowEnd>, std::vector<FlowEnd>>> flows;
  for (const auto& [core, b] : buffers_) {
    for (const TraceEvent& e : b->events()) {
      next();
      append_event(out, e, core, time);
      if (e.category == TraceCategory::message) {
        auto& [sends, receives] = flows[FlowKey{e.job, e.context, e.src, e.dst, e.value}];
        (e.rank == e.src && e.name[0] == 's' ? sends : receives).push_back({&e, core});
      }
      if (out.size() > (1u << 20)) {
        stream << out;
        out.clear();
      }
    }
  }
  // A dropped event would pair every later message of its key with the wrong one.
  std::uint64_t flow_id = 0;
  if (dropped() > 0) flows.clear();
  for (auto& [key, ends] : flows) {
    auto& [sends, receives] = ends;
    const auto by_begin = [](const FlowEnd& a, const FlowEnd& b) { return a.event->begin < b.event->begin; };
    std::sort(sends.begin(), sends.end(), by_begin);
    std::sort(receives.begin(), receives.end(), by_begin);
    for (std::size_t k = 0; k < std::min(sends.size(), receives.size()); ++k, ++flow_id) {
      append_flow(out, "s", flow_id, sends[k], time);
      append_flow(out, "f", flow_id, receives[k], time);
    }
  }
  out += "\n],\"otherData\":{\"clock\":\"" + std::string(kClockName) + "\",\"events\":" + std::to_string(events()) +
         ",\"dropped_events\":" + std::to_string(dropped()) +
         ",\"events_per_core\":" + std::to_string(events_per_core_) + ",\"jobs\":" + std::to_string(jobs_) + "}}\n";
  stream << out;
}

void TraceLog::write_file(const std::string& path) const {
  std::ofstream file(path, std::ios::trunc);
  if (!file)
    throw std::runtime_error("switchyard: cannot write the trace file '" + path + "': " + std::strerror(errno));
  write(file);
  file.close();
  if (!file) throw std::runtime_error("switchyard: writing the trace file '" + path + "' failed");
}

}  // namespace switchyard
