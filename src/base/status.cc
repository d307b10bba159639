#include "base/status.h"

#include <cstring>

namespace drtmx {

const char* code_name(Code c) {
  switch (c) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kNotFound:
      return "not found";
    case Code::kAlreadyExists:
      return "already exists";
    case Code::kOutOfRange:
      return "out of range";
    case Code::kResourceExhausted:
      return "resource exhausted";
    case Code::kTimeout:
      return "timeout";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kAborted:
      return "aborted";
    case Code::kInternal:
      return "internal error";
    case Code::kIoError:
      return "I/O error";
    case Code::kNotSupported:
      return "not supported";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(code_name(code_)) + ": " + msg_;
}

Status Status::with_context(const std::string& ctx) const {
  if (is_ok()) return *this;
  return Status(code_, ctx + ": " + msg_);
}

Status io_error(const std::string& what, int err) {
  return Status(Code::kIoError, what + ": " + std::strerror(err));
}

}  // namespace drtmx
