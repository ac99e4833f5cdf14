#pragma once
// A scheduler's name as ExchangePlanOptions holds it: up to 31 characters in
// the object itself, no std::string. The options stay trivially copyable, so
// they are safe as a braced temporary inside a co_await expression, which
// GCC 12 destroys twice (`co_await ExchangePlan::create(p, mine,
// {.scheduler = "optimal"})` freed the string twice). Converts from and to
// strings, compares with them, and prints.

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers {

class SchedulerName {
 public:
  static constexpr std::size_t kMaxLength = 31;

  constexpr SchedulerName() noexcept = default;
  // Implicit, as a string would be: options.scheduler = "ac" reads as before.
  SchedulerName(std::string_view name) {  // NOLINT(google-explicit-constructor)
    if (name.size() > kMaxLength) {
      throw InvalidArgument("switchyard: scheduler name '" + std::string(name) + "' is longer than " +
                            std::to_string(kMaxLength) + " characters");
    }
    std::copy(name.begin(), name.end(), chars_);
    size_ = static_cast<unsigned char>(name.size());
  }
  SchedulerName(const char* name) : SchedulerName(std::string_view(name)) {}   // NOLINT
  SchedulerName(const std::string& name) : SchedulerName(std::string_view(name)) {}  // NOLINT

  std::string_view view() const noexcept { return {chars_, size_}; }
  std::string str() const { return std::string(view()); }
  operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor)
  bool empty() const noexcept { return size_ == 0; }

  friend bool operator==(const SchedulerName& a, const SchedulerName& b) noexcept { return a.view() == b.view(); }
  friend bool operator==(const SchedulerName& a, std::string_view b) noexcept { return a.view() == b; }
  friend bool operator==(const SchedulerName& a, const char* b) noexcept { return a.view() == b; }
  friend bool operator==(const SchedulerName& a, const std::string& b) noexcept { return a.view() == b; }
  friend std::string operator+(const std::string& a, const SchedulerName& b) { return a + b.str(); }
  friend std::string operator+(const char* a, const SchedulerName& b) { return a + b.str(); }
  friend std::string operator+(const SchedulerName& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const SchedulerName& a, const char* b) { return a.str() + b; }
  friend std::ostream& operator<<(std::ostream& os, const SchedulerName& n) { return os << n.view(); }

 private:
  char chars_[kMaxLength] = {};
  unsigned char size_ = 0;
};

}  // namespace switchyard::schedulers
