#pragma once
/// @file
/// A scheduler's name as ExchangePlanOptions holds it: up to 31 characters in
/// the object itself, no std::string. The options stay trivially copyable, so
/// they are safe as a braced temporary inside a co_await expression, which
/// GCC 12 destroys twice (`co_await ExchangePlan::create(p, mine,
/// {.scheduler = "optimal"})` freed the string twice). Converts from and to
/// strings, compares with them, and prints.

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers {

/// A scheduler's name, held in place (see the file's description).
class SchedulerName {
 public:
  static constexpr std::size_t kMaxLength = 31;  ///< the longest name it holds

  constexpr SchedulerName() noexcept = default;  ///< the empty name
  /// Implicit, as a string would be: options.scheduler = "ac" reads as before.
  SchedulerName(std::string_view name) {  // NOLINT(google-explicit-constructor)
    if (name.size() > kMaxLength) {
      throw InvalidArgument("switchyard: scheduler name '" + std::string(name) + "' is longer than " +
                            std::to_string(kMaxLength) + " characters");
    }
    std::copy(name.begin(), name.end(), chars_);
    size_ = static_cast<unsigned char>(name.size());
  }
  /// From a C string; InvalidArgument beyond kMaxLength.
  SchedulerName(const char* name) : SchedulerName(std::string_view(name)) {}  // NOLINT
  /// From a string; InvalidArgument beyond kMaxLength.
  SchedulerName(const std::string& name) : SchedulerName(std::string_view(name)) {}  // NOLINT

  std::string_view view() const noexcept { return {chars_, size_}; }  ///< the name, viewed in place
  std::string str() const { return std::string(view()); }  ///< the name, copied
  /// The name, copied: so that it passes wherever a string did.
  operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor)
  bool empty() const noexcept { return size_ == 0; }  ///< no name

  /// Equal names, compared with the name or with a string of any kind.
  friend bool operator==(const SchedulerName& a, const SchedulerName& b) noexcept { return a.view() == b.view(); }
  /// See operator==(const SchedulerName&, const SchedulerName&).
  friend bool operator==(const SchedulerName& a, std::string_view b) noexcept { return a.view() == b; }
  /// See operator==(const SchedulerName&, const SchedulerName&).
  friend bool operator==(const SchedulerName& a, const char* b) noexcept { return a.view() == b; }
  /// See operator==(const SchedulerName&, const SchedulerName&).
  friend bool operator==(const SchedulerName& a, const std::string& b) noexcept { return a.view() == b; }
  /// Concatenation with a string, either side, as a std::string name would allow.
  friend std::string operator+(const std::string& a, const SchedulerName& b) { return a + b.str(); }
  /// See operator+(const std::string&, const SchedulerName&).
  friend std::string operator+(const char* a, const SchedulerName& b) { return a + b.str(); }
  /// See operator+(const std::string&, const SchedulerName&).
  friend std::string operator+(const SchedulerName& a, const std::string& b) { return a.str() + b; }
  /// See operator+(const std::string&, const SchedulerName&).
  friend std::string operator+(const SchedulerName& a, const char* b) { return a.str() + b; }
  /// Prints the name.
  friend std::ostream& operator<<(std::ostream& os, const SchedulerName& n) { return os << n.view(); }

 private:
  char chars_[kMaxLength] = {};
  unsigned char size_ = 0;
};

}  // namespace switchyard::schedulers
