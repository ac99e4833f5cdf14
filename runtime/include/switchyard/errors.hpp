#pragma once
#include <stdexcept>
#include <string>

namespace switchyard {

// Every error switchyard raises derives from Error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad argument to an API call, a bad option or a bad input file. The message
// says what was wrong and where.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Thrown inside every process of a job that is being cancelled, so that it
// unwinds. Run() never rethrows it: it rethrows the error that caused the cancel.
class JobCancelled : public Error {
 public:
  JobCancelled() : Error("switchyard: job cancelled") {}
};

// A job made no progress for longer than its stall timeout. The message names
// every blocked process and what it was waiting for.
class StallError : public Error {
 public:
  using Error::Error;
};

}  // namespace switchyard
