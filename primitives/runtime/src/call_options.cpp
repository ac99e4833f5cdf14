#include "switchyard/primitives/call_options.hpp"

#include <algorithm>
#include <new>

#include "switchyard/errors.hpp"

namespace switchyard::primitives {

const char* to_string(Algorithm a) noexcept {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kBinomial:
      return "binomial";
    case Algorithm::kDirect:
      return "direct";
    case Algorithm::kBruck:
      return "bruck";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kPairwise:
      return "pairwise";
  }
  return "?";
}

std::span<std::byte> Workspace::bytes(std::size_t n) {
  if (n > capacity_) {
    const std::size_t rounded = (n + 63) / 64 * 64;
    storage_.reset(static_cast<std::byte*>(::operator new (rounded, std::align_val_t{64})));
    capacity_ = rounded;
  }
  return {storage_.get(), n};
}

void Workspace::AlignedDelete::operator()(std::byte* p) const noexcept { ::operator delete (p, std::align_val_t{64}); }

namespace detail {

void invalid(const char* task, const std::string& message) {
  throw InvalidArgument(std::string("switchyard::primitives::") + task + ": " + message);
}

void check_rank(Rank r, Rank n, const char* task, const char* what) {
  if (r >= n)
    invalid(task, std::string(what) + " " + std::to_string(r) + " is not a rank of a communicator of " +
                      std::to_string(n) + " members");
}

void check_size(std::size_t got, std::size_t want, const char* task, const char* what) {
  if (got != want) {
    invalid(task, std::string(what) + " holds " + std::to_string(got) + " bytes where " + std::to_string(want) +
                      " are needed");
  }
}

void check_members(std::span<const Rank> members, Rank n, const char* task, const char* what) {
  if (members.empty()) invalid(task, std::string(what) + " is empty");
  for (std::size_t i = 0; i < members.size(); ++i) {
    check_rank(members[i], n, task, what);
    if (i > 0 && members[i] <= members[i - 1]) {
      invalid(task, std::string(what) + " must be strictly increasing: entry " + std::to_string(i) + " (" +
                        std::to_string(members[i]) + ") follows " + std::to_string(members[i - 1]));
    }
  }
}

}  // namespace detail
}  // namespace switchyard::primitives
