#pragma once
/// @file
/// Task<T>: the coroutine type of software processes and of every runtime call
/// that may block. A Task starts when awaited (lazily) and hands control straight
/// back to its awaiter when it finishes (symmetric transfer), so a chain of nested
/// calls costs no stack and no kernel: switching processes is a function return.

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "switchyard/detail/frame_cache.hpp"

namespace switchyard {

template <class T = void>
class Task;

namespace detail {

struct PromiseBase {
  static void* operator new(std::size_t size) { return FrameCache::allocate(size); }
  static void operator delete(void* frame) noexcept { FrameCache::deallocate(frame); }

  std::coroutine_handle<> continuation;  // who awaits this task; empty for a process's main task
  std::exception_ptr error;

  std::suspend_always initial_suspend() noexcept { return {}; }
  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      auto next = h.promise().continuation;
      return next ? next : std::noop_coroutine();
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <class T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object() noexcept;
  template <class U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
  T take() {
    if (error) std::rethrow_exception(error);
    return std::move(*value);
  }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take() {
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace detail

/// A lazily started coroutine that yields a T (see the file's description):
/// co_await runs it and returns its value, or rethrows what it threw. It owns
/// its frame; moved, never copied.
template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::Promise<T>;  ///< what makes a function returning Task a coroutine
  using Handle = std::coroutine_handle<promise_type>;  ///< the handle of its frame

  Task() = default;
  /// Takes over the frame `h` (the promise's get_return_object).
  explicit Task(Handle h) noexcept : handle_(h) {}
  /// Takes over other's frame; other is left empty.
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  /// Destroys this task's frame, if any, and takes over other's.
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  ~Task() {
    if (handle_) handle_.destroy();
  }

  /// Whether there is nothing to run: an empty task, or one that has finished.
  bool await_ready() const noexcept { return !handle_ || handle_.done(); }
  /// Starts (or resumes) the task, which resumes `awaiter` when it finishes.
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
    handle_.promise().continuation = awaiter;
    return handle_;
  }
  /// The task's value, or what it threw, rethrown.
  T await_resume() { return handle_.promise().take(); }

  /// For the runtime: the handle of a process's main task.
  Handle handle() const noexcept { return handle_; }

 private:
  Handle handle_;
};

namespace detail {
template <class T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}
}  // namespace detail

}  // namespace switchyard
