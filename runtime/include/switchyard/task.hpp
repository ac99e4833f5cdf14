#pragma once
// Task<T>: the coroutine type of software processes and of every runtime call
// that may block. A Task starts when awaited (lazily) and hands control straight
// back to its awaiter when it finishes (symmetric transfer), so a chain of nested
// calls costs no stack and no kernel: switching processes is a function return.

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <new>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace switchyard {

template <class T = void>
class Task;

namespace detail {

// Coroutine frames of runtime calls are born and die on the same worker thread
// thousands of times a second; a per-thread cache of freed frames, by size class,
// turns each allocation into a pointer pop instead of a trip through malloc.
// Blocks are whole cache lines: the frames of processes on different cores are
// made one after another (by Runtime::run), and a line shared by two of them
// would travel between the cores on every write.
class FrameCache {
 public:
  static void* allocate(std::size_t size) {
    const std::size_t cls = class_of(size);
    State& st = state();
    if (cls < kClasses && !st.dead && st.free[cls]) {
      Block* b = st.free[cls];
      st.free[cls] = b->next;
      --st.count[cls];
      return frame_of(b);
    }
    const std::size_t bytes = cls < kClasses ? (cls + 1) * kGranule : sizeof(Block) + size;
    auto* b = static_cast<Block*>(::operator new(bytes, std::align_val_t{kGranule}));
    b->size_class = cls;
    return frame_of(b);
  }
  static void deallocate(void* frame) noexcept {
    Block* b = block_of(frame);
    const std::size_t cls = b->size_class;
    State& st = state();
    if (cls < kClasses && !st.dead && st.count[cls] < kMaxCached) {
      b->next = st.free[cls];
      st.free[cls] = b;
      ++st.count[cls];
      return;
    }
    ::operator delete(b, std::align_val_t{kGranule});
  }

 private:
  static constexpr std::size_t kGranule = 64;
  static constexpr std::size_t kClasses = 32;  // frames up to 2 KiB are cached
  // Blocks kept per class: a cache only holds what was once live at the same
  // time, so this bounds nothing in ordinary use; but with thousands of
  // processes per core, each with a few frames and scratch arrays in flight,
  // a small cap would send the excess back to malloc on every exchange.
  static constexpr std::uint32_t kMaxCached = 1u << 20;
  struct alignas(16) Block {
    Block* next;
    std::size_t size_class;
  };
  // Trivially destructible, so a frame freed during thread exit still finds it.
  struct State {
    Block* free[kClasses];
    std::uint32_t count[kClasses];
    bool dead;
  };
  struct Drain {
    ~Drain() {
      State& st = state();
      st.dead = true;
      for (auto*& head : st.free) {
        while (head) ::operator delete(std::exchange(head, head->next), std::align_val_t{kGranule});
      }
    }
  };
  static State& state() noexcept {
    static thread_local State st{};
    static thread_local Drain drain;
    (void)drain;
    return st;
  }
  static std::size_t class_of(std::size_t size) noexcept { return (size + sizeof(Block) + kGranule - 1) / kGranule - 1; }
  static void* frame_of(Block* b) noexcept { return b + 1; }
  static Block* block_of(void* frame) noexcept { return static_cast<Block*>(frame) - 1; }
};

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
  void return_value(U&& v) { value.emplace(std::forward<U>(v)); }
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

template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  explicit Task(Handle h) noexcept : handle_(h) {}
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
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

  bool await_ready() const noexcept { return !handle_ || handle_.done(); }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
    handle_.promise().continuation = awaiter;
    return handle_;
  }
  T await_resume() { return handle_.promise().take(); }

  // For the runtime: the handle of a process's main task.
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
