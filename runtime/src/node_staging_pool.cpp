#include "node_staging_pool.hpp"

#include <algorithm>
#include <utility>

namespace switchyard::detail {

StagingBuffer NodeStagingPool::take(std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  taken_ = true;
  auto best = kept_.end();
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (it->capacity() >= bytes && (best == kept_.end() || it->capacity() < best->capacity())) best = it;
  }
  StagingBuffer b = best == kept_.end() ? StagingBuffer(bytes) : std::move(*best);
  if (best != kept_.end()) kept_.erase(best);
  b.use(bytes);
  return b;
}

void NodeStagingPool::give_back(StagingBuffer buffer) {
  if (buffer.capacity() == 0) return;
  const std::lock_guard lock(mutex_);
  given_back_.push_back(std::move(buffer));
}

void NodeStagingPool::end_job() {
  const std::lock_guard lock(mutex_);
  if (!taken_) return;
  kept_ = std::move(given_back_);
  given_back_.clear();
  taken_ = false;
}

}  // namespace switchyard::detail
