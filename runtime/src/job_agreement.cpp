#include "job_agreement.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace switchyard::detail {

namespace {

// A hash alike on every node of one binary (libstdc++'s std::hash of bytes
// is a fixed-seed function of them, never salted per process).
std::uint64_t hash_bytes(const void* data, std::size_t size) {
  return std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(data), size));
}

// `text` into `into`, NUL-terminated; its end with "..." before it where too long.
template <std::size_t N>
void copy_tail(std::string_view text, char (&into)[N]) {
  std::size_t at = 0;
  if (text.size() >= N) {
    std::memcpy(into, "...", 3);
    at = 3;
    text = text.substr(text.size() - (N - 1 - at));
  }
  std::memcpy(into + at, text.data(), text.size());
  into[at + text.size()] = '\0';
}

// A type's name as the compiler writes it (`mangled`), readable where it can be.
std::string demangled(const char* mangled) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> readable(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                        std::free);
  return status == 0 && readable ? std::string(readable.get()) : std::string(mangled);
}

}  // namespace

JobRecord job_record(std::uint64_t call, std::uint64_t processes, const ProcessBody& body, const RunOptions& options) {
  JobRecord r;
  r.call = call;
  r.processes = processes;
  r.ring_capacity = options.ring_capacity;
  const std::vector<int>& map = options.placement.explicit_map();
  const auto kind = static_cast<std::uint64_t>(options.placement.kind());
  r.placement = hash_bytes(map.data(), map.size() * sizeof(int)) ^ kind;
  const std::string placement = options.placement.name();
  copy_tail(placement, r.placement_name);
  // Mangled: demangled only to say so when the nodes disagree (run() allocates nothing for it).
  std::string_view name = body.target_type().name();
  if (name.starts_with('*')) name.remove_prefix(1);  // GCC's mark of a type of internal linkage
  r.body = hash_bytes(name.data(), name.size());
  copy_tail(name, r.body_name);
  return r;
}

namespace {

// One clause about a field of the records: every node's value, the first as
// "node 0 <lead><value>", the others "node k <rest><value>"; "" when alike.
std::string clause(std::span<const JobRecord> nodes, std::string_view lead, std::string_view rest,
                   const std::function<std::string(const JobRecord&)>& value,
                   const std::function<bool(const JobRecord&, const JobRecord&)>& same) {
  if (std::all_of(nodes.begin(), nodes.end(), [&](const JobRecord& r) { return same(r, nodes.front()); })) return {};
  std::string text;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    text += (k == 0 ? "node 0 " : ", node " + std::to_string(k) + " ");
    text += k == 0 ? lead : rest;
    text += value(nodes[k]);
  }
  return text;
}

// A placement's kind, and an explicit map's hash (maps of one size differ there).
std::string placement_text(const JobRecord& r) {
  std::string text = r.placement_name;
  if (text != "explicit") return text;
  char hash[32];
  std::snprintf(hash, sizeof hash, " map #%04llx", static_cast<unsigned long long>(r.placement & 0xffff));
  return text + hash;
}

}  // namespace

std::string job_disagreement(std::span<const JobRecord> nodes) {
  using R = const JobRecord&;
  const std::string clauses[]{
      clause(
          nodes, "runs a job of ", "one of ", [](R r) { return std::to_string(r.processes) + " processes"; },
          [](R a, R b) { return a.processes == b.processes; }),
      clause(
          nodes, "makes its call ", "its call ", [](R r) { return std::to_string(r.call) + " of run()"; },
          [](R a, R b) { return a.call == b.call; }),
      clause(
          nodes, "runs the body ", "the body ", [](R r) { return demangled(r.body_name); },
          [](R a, R b) { return a.body == b.body; }),
      clause(nodes, "places ranks ", "", placement_text, [](R a, R b) { return a.placement == b.placement; }),
      clause(
          nodes, "has rings of ", "of ", [](R r) { return std::to_string(r.ring_capacity) + " cells"; },
          [](R a, R b) { return a.ring_capacity == b.ring_capacity; }),
  };
  std::string text;
  for (const std::string& c : clauses) {
    if (c.empty()) continue;
    text += text.empty() ? "" : "; ";
    text += c;
  }
  if (text.empty()) return {};
  return "switchyard: run: the nodes disagree on the job (every node runs the same jobs, with the same arguments, in "
         "the same order): " +
         text;
}

}  // namespace switchyard::detail
