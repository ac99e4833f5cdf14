#pragma once
// How the exchange-plan tests run a plan: through each of run()'s buffer
// forms in turn, and in each of the executions (compiled, pulled or pushed,
// loosely or strictly synchronous; on messages), so that every test of a
// plan covers them all.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <vector>

#include "test_support.hpp"

namespace sytest {

using namespace switchyard;
using namespace switchyard::schedulers;

// A process's ExchangeBuffers in both of run()'s forms: one span per message,
// and the Alltoallv form (its send and receive blocks whole, each message at
// its displacement, by rank).
struct BufferForms {
  BufferForms(ExchangeBuffers& b, Rank size)
      : sends(b.send_buffers()), recvs(b.recv_buffers()), send_at(size, 0), recv_at(size, 0) {
    sent.resize(sends.size());
    received.resize(recvs.size());
    if (!sends.empty()) {
      const std::byte* base = sends.front().data();
      send_block = {base, static_cast<std::size_t>(sends.back().data() + sends.back().size() - base)};
      for (std::size_t i = 0; i < sends.size(); ++i) {
        send_at[b.row()[i].peer] = static_cast<std::uint64_t>(sends[i].data() - base);
      }
    }
    if (!recvs.empty()) {
      std::byte* base = recvs.front().data();
      recv_block = {base, static_cast<std::size_t>(recvs.back().data() + recvs.back().size() - base)};
      for (std::size_t i = 0; i < recvs.size(); ++i) {
        recv_at[b.column()[i].peer] = static_cast<std::uint64_t>(recvs[i].data() - base);
      }
    }
  }
  // Run k of a plan: through the spans, the blocks, and hooks in turn.
  Task<ExchangeRunStats> run(const ExchangePlan& plan, const Communicator& comm, int k) {
    if (k % 3 == 0) return plan.run(comm, sends, recvs);
    if (k % 3 == 1) return plan.run(comm, send_block, send_at, recv_block, recv_at);
    return run_hooks(plan, comm);
  }

  // The hook form: every message made ready once before it goes and handed
  // over once after it is in, each checked (the counts are the forms', made
  // once: a run must allocate nothing).
  class CountingHooks final : public ExchangeHooks {
   public:
    explicit CountingHooks(BufferForms& f) : f_(f) {
      std::fill(f.sent.begin(), f.sent.end(), 0);
      std::fill(f.received.begin(), f.received.end(), 0);
    }
    std::span<const std::byte> send_buffer(std::size_t i) override { return f_.sends[i]; }
    std::span<std::byte> recv_buffer(std::size_t i) override { return f_.recvs[i]; }
    void before_send(std::size_t i) override { ++f_.sent[i]; }
    void after_receive(std::size_t i) override { ++f_.received[i]; }
    bool each_once() const {
      return std::all_of(f_.sent.begin(), f_.sent.end(), [](int c) { return c == 1; }) &&
             std::all_of(f_.received.begin(), f_.received.end(), [](int c) { return c == 1; });
    }

   private:
    BufferForms& f_;
  };
  Task<ExchangeRunStats> run_hooks(const ExchangePlan& plan, Communicator comm) {
    CountingHooks hooks(*this);
    const ExchangeRunStats stats = co_await plan.run(comm, hooks);
    SY_CHECK(hooks.each_once(), "a hook ran more or less than once per message");
    co_return stats;
  }

  std::vector<std::span<const std::byte>> sends;
  std::vector<std::span<std::byte>> recvs;
  std::span<const std::byte> send_block;
  std::span<std::byte> recv_block;
  std::vector<std::uint64_t> send_at, recv_at;
  std::vector<int> sent, received;  // per message, by the hook form's run
};

// How a plan runs: compiled, the receiver's core copying (pull) or the
// sender's (push), loosely synchronously or with strict phases; or on the
// runtime's messages, with rings of the default capacity and of one line.
struct Execution {
  std::string name;
  ExchangeExecution execution = ExchangeExecution::compiled;
  CopySide side = CopySide::receiver;
  bool strict = false;
  std::size_t ring_capacity = 1024;
};
inline const std::vector<Execution> kExecutions{
    {"pull"},
    {"push", ExchangeExecution::compiled, CopySide::sender},
    {"strict", ExchangeExecution::compiled, CopySide::receiver, true},
    {"push_ring1", ExchangeExecution::compiled, CopySide::sender, false, 1},
    {"messages", ExchangeExecution::messages},
    {"messages_ring1", ExchangeExecution::messages, CopySide::receiver, false, 1}};

// `options` with the execution `how`.
inline ExchangePlanOptions with_execution(ExchangePlanOptions options, const Execution& how) {
  options.execution = how.execution;
  options.copy_side = how.side;
  options.strict = how.strict;
  return options;
}

}  // namespace sytest
