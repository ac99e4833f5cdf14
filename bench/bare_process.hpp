#pragma once
// The processes of bench_exchange's process floor and blocking floor: each a
// bare C++20 coroutine, with none of the runtime around it. The process
// floor's thread resumes each of its processes once per exchange; it copies
// its own incoming messages, straight from their senders' buffers, and
// suspends. The blocking floor's thread resumes each twice, as a blocking
// exchange must: once to arrive (it counts itself on its thread and parks),
// once to return. Between two exchanges a process keeps state live in its
// frame, as a process of a real program would.

#include <switchyard/schedulers/payload.hpp>

#include <coroutine>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace sybench {

// One message a process receives: its sender's bytes and where they go.
struct IncomingCopy {
  std::span<const std::byte> from;
  std::span<std::byte> into;
};

// Per rank, the messages it receives, each from its sender's send buffer
// (`buffers`, one per rank, indexed by rank): what a floor's process copies.
inline std::vector<std::vector<IncomingCopy>> incoming_copies(
    std::span<const std::unique_ptr<switchyard::schedulers::ExchangeBuffers>> buffers) {
  std::vector<std::vector<IncomingCopy>> incoming(buffers.size());
  for (std::size_t r = 0; r < buffers.size(); ++r) {
    switchyard::schedulers::ExchangeBuffers& to = *buffers[r];
    for (std::size_t i = 0; i < to.column().size(); ++i) {
      const switchyard::schedulers::ExchangeBuffers& from = *buffers[to.column()[i].peer];
      incoming[r].push_back({from.send_buffer(*from.send_index(static_cast<switchyard::Rank>(r))), to.recv_buffer(i)});
    }
  }
  return incoming;
}

// Copies each message of `copies` straight from its sender's bytes.
inline void copy_all(std::span<const IncomingCopy> copies) noexcept {
  for (const IncomingCopy& c : copies) std::memcpy(c.into.data(), c.from.data(), c.into.size());
}

class BareProcess {
 public:
  struct promise_type {
    BareProcess get_return_object() noexcept {
      return BareProcess(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };

  BareProcess(BareProcess&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  BareProcess& operator=(BareProcess&&) = delete;
  ~BareProcess() {
    if (handle_) handle_.destroy();
  }
  // One exchange of this process: it runs until it suspends again.
  void resume() const { handle_.resume(); }

 private:
  explicit BareProcess(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}
  std::coroutine_handle<promise_type> handle_;
};

// A process that, on each resume, copies `incoming` (which outlives it) and suspends.
inline BareProcess copying_process(std::span<const IncomingCopy> incoming) {
  volatile unsigned char state[256];  // live state in the frame, touched once per exchange
  for (unsigned round = 0;; ++round) {
    state[round % sizeof state] = static_cast<unsigned char>(round);
    copy_all(incoming);
    co_await std::suspend_always{};
  }
}

// A process that, on each exchange, counts itself in `arrived` (its thread's
// count, which outlives it) and suspends, parked; resumed again, it returns
// from the exchange and suspends until the next one.
inline BareProcess arriving_process(std::uint32_t& arrived) {
  volatile unsigned char state[256];  // as copying_process's
  for (unsigned round = 0;; ++round) {
    state[round % sizeof state] = static_cast<unsigned char>(round);
    ++arrived;
    co_await std::suspend_always{};  // parked until its thread has copied
    co_await std::suspend_always{};  // returned; resumed at the next exchange
  }
}

}  // namespace sybench
