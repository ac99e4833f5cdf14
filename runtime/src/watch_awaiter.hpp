#pragma once
// A process's wait for a word that another core stores (a compiled run's
// progress, a core's arrival at a barrier): it parks, and its worker checks
// the word every turn (Worker::watch); the core that stores it rings this
// worker's doorbell, so a sleeping worker sees it at once.

#include <atomic>
#include <coroutine>
#include <cstdint>

#include "switchyard/process.hpp"
#include "worker.hpp"

namespace switchyard::detail {

// Waits, parked, until `word` reaches `target`. The acquire load pairs with
// the storing core's release: what it did before is visible to the woken process.
//
// The word is often a cache line's transfer away (the other core of a
// compiled run publishes at about the moment this one does): where nothing
// else of this core could run, the process checks it itself for a short,
// bounded while before it parks (Worker::wait_alone), as its worker would
// spin for it anyway, but without the park, the watch, the worker's turn and
// the resume. Where another process is ready, it parks at once.
class WatchAwaiter {
 public:
  WatchAwaiter(Process& p, const std::atomic<std::uint64_t>& word, std::uint64_t target, const char* what) noexcept
      : p_(p), word_(word), target_(target), what_(what) {}
  bool await_ready() const noexcept {
    return reached() || p_.worker_.wait_alone([this]() noexcept { return reached(); });
  }
  void await_suspend(std::coroutine_handle<> h) noexcept {
    p_.worker_.watch(word_, target_, done_, p_);
    p_.suspend_until(h, &done_, what_, kAnySource);
  }
  void await_resume() const { p_.resumed(); }

 private:
  bool reached() const noexcept { return word_.load(std::memory_order_acquire) >= target_; }
  Process& p_;
  const std::atomic<std::uint64_t>& word_;
  std::uint64_t target_;
  const char* what_;
  bool done_ = false;
};

}  // namespace switchyard::detail
