#pragma once
// The staging buffers of compiled exchanges between nodes, kept by the Runtime
// from job to job. A buffer's pages are mapped by the run that first writes
// it: for the 128 MiB that a node sends another in a 512-process exchange of
// 64 KiB messages, those page faults cost about as much as the copies
// themselves (a first run took twice as long as one whose buffers were
// written before). A plan run in one job after another then pays them once
// per Runtime, not once per job. The pool holds at most what the last job
// that staged anything gave back.

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "worker_mutex.hpp"

namespace switchyard::detail {

// Bytes left uninitialised when made: every run overwrites a staging buffer
// whole (its packing or its receive) before anything reads it.
class StagingBuffer {
 public:
  StagingBuffer() = default;
  explicit StagingBuffer(std::size_t capacity)
      : bytes_(std::make_unique_for_overwrite<std::byte[]>(capacity)), capacity_(capacity) {}

  std::byte* data() noexcept { return bytes_.get(); }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::span<std::byte> bytes() noexcept { return {bytes_.get(), size_}; }
  // At most capacity(): the pool hands out buffers that hold the size asked.
  void use(std::size_t size) noexcept { size_ = size; }

 private:
  std::unique_ptr<std::byte[]> bytes_;
  std::size_t capacity_ = 0, size_ = 0;
};

class NodeStagingPool {
 public:
  // A buffer of `bytes`: the smallest kept one that holds them, else a new one.
  // Called while an exchange lays out its staging, by any worker.
  StagingBuffer take(std::size_t bytes);
  // A buffer back from an exchange whose job is ending.
  void give_back(StagingBuffer buffer);
  // After every job, its exchanges gone: what it gave back is kept for the
  // next job and what it left untouched is freed; a job that took nothing
  // leaves the pool as it was.
  void end_job();

 private:
  WorkerMutex mutex_;  // take() runs on any worker; give_back() as groups are freed
  std::vector<StagingBuffer> kept_, given_back_;
  bool taken_ = false;
};

}  // namespace switchyard::detail
