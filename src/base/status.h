// Errors as values.
//
// Status carries a code and a human-readable message that names what is wrong
// and, where possible, what to do about it. Result<T> is a value or a Status.
// Neither throws. The OK status allocates nothing; an error status owns a
// std::string, so errors belong on slow paths only. Hot paths (fabric ops,
// completions) use small enums of their own and convert at the boundary.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace drtmx {

enum class Code : unsigned char {
  kOk = 0,
  kInvalidArgument,    // bad configuration, command line or parameter
  kNotFound,           // a named thing (node, region, handler, device) is absent
  kAlreadyExists,      // duplicate node id, region id, handler id
  kOutOfRange,         // remote address outside a region, value too large
  kResourceExhausted,  // queue, ring or memory full
  kTimeout,            // a peer did not answer in time
  kUnavailable,        // peer gone, connection lost, device missing
  kAborted,            // the cluster was torn down because of another error
  kInternal,           // a broken invariant; a bug
  kIoError,            // a system call failed
  kNotSupported,       // this host, device or build cannot do it (say what would)
};

const char* code_name(Code c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string msg) : code_(code), msg_(std::move(msg)) {}

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }
  // "code_name: message"
  std::string to_string() const;

  // Prepends context ("while X: ") to the message; keeps the code.
  Status with_context(const std::string& ctx) const;

 private:
  Code code_ = Code::kOk;
  std::string msg_;
};

inline Status invalid_argument(std::string m) {
  return {Code::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) {
  return {Code::kNotFound, std::move(m)};
}
inline Status already_exists(std::string m) {
  return {Code::kAlreadyExists, std::move(m)};
}
inline Status out_of_range(std::string m) {
  return {Code::kOutOfRange, std::move(m)};
}
inline Status exhausted(std::string m) {
  return {Code::kResourceExhausted, std::move(m)};
}
inline Status timeout_error(std::string m) {
  return {Code::kTimeout, std::move(m)};
}
inline Status unavailable(std::string m) {
  return {Code::kUnavailable, std::move(m)};
}
inline Status aborted(std::string m) {
  return {Code::kAborted, std::move(m)};
}
inline Status internal_error(std::string m) {
  return {Code::kInternal, std::move(m)};
}
inline Status not_supported(std::string m) {
  return {Code::kNotSupported, std::move(m)};
}
// An I/O error naming the call and errno's text.
Status io_error(const std::string& what, int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status st) : status_(std::move(st)) {   // NOLINT: implicit by design
    assert(!status_.is_ok() && "Result built from an OK status without a value");
  }

  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace drtmx

// Propagates an error Status out of the enclosing function.
#define DRTMX_RETURN_IF_ERROR(expr)           \
  do {                                        \
    ::drtmx::Status drtmx_st_ = (expr);       \
    if (!drtmx_st_.is_ok()) return drtmx_st_; \
  } while (0)
