// The result of a system call that can fail: a value, or the errno (and the
// path, where one was involved) for the caller to report. Library code
// returns these and never logs; exceptions are kept for load time
// (configuration, web config), where they carry file:line:col.
#pragma once

#include <cstring>
#include <string>
#include <utility>

namespace memcg::sys {

template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: a value converts to success
  static Result failure(int err, std::string path = {}) { return Result(err, std::move(path)); }

  bool ok() const noexcept { return err_ == 0; }
  int err() const noexcept { return err_; }
  const std::string& path() const noexcept { return path_; }
  T& value() & noexcept { return value_; }
  const T& value() const& noexcept { return value_; }
  T&& value() && noexcept { return std::move(value_); }
  // "PATH: strerror" (or just strerror without a path), for messages.
  std::string message() const { return (path_.empty() ? "" : path_ + ": ") + std::strerror(err_); }

 private:
  Result(int err, std::string path) : err_(err), path_(std::move(path)) {}
  T value_{};
  int err_ = 0;
  std::string path_;
};

}  // namespace memcg::sys
