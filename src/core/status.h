// status.h — errors as values at module boundaries: Status (ok or code + message) and
// Result<T> (a value or a non-ok Status). Exceptions never cross a module boundary; code
// that calls throwing libraries converts at the edge.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace kevin {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller passed something malformed
  kNotFound,         // a file, task, key... does not exist
  kAlreadyExists,
  kFailedPrecondition,  // the system is not in a state to do this (e.g. no torch)
  kUnavailable,         // a dependency (process, server, device) is not reachable right now
  kDeadlineExceeded,
  kIoError,
  kUnimplemented,
  kInternal,           // our own bug or an impossible state
  kCancelled,          // stopped on request (Ctrl-C) before it finished
  kResourceExhausted,  // a limit is reached (sessions, queue slots): retry later
};

// Human name of a code, e.g. "invalid_argument".
const char* status_code_name(StatusCode code);

// The outcome of an operation: ok, or an error code with a message for humans.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: <message>", or "ok".
  std::string to_string() const;
  // Returns a copy whose message is "<context>: <message>" (ok stays ok).
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status already_exists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status failed_precondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status deadline_exceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status resource_exhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }

// A value of type T, or the Status saying why there is none. Accessing value() of an error
// Result is a bug in the caller (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(data_).is_ok() && "Result built from an ok Status");
  }

  bool is_ok() const { return std::holds_alternative<T>(data_); }
  // The error; an ok Status when a value is held.
  Status status() const { return is_ok() ? Status::ok() : std::get<Status>(data_); }

  T& value() & {
    assert(is_ok());
    return std::get<T>(data_);
  }
  const T& value() const& {
    assert(is_ok());
    return std::get<T>(data_);
  }
  T&& value() && {
    assert(is_ok());
    return std::get<T>(std::move(data_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The value, or `fallback` when this holds an error.
  T value_or(T fallback) const& { return is_ok() ? std::get<T>(data_) : std::move(fallback); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace kevin

#define KEVIN_CONCAT_INNER_(a, b) a##b
#define KEVIN_CONCAT_(a, b) KEVIN_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not ok.
#define KEVIN_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::kevin::Status kevin_status_ = (expr);           \
    if (!kevin_status_.is_ok()) return kevin_status_; \
  } while (0)

// `KEVIN_ASSIGN_OR_RETURN(auto x, f());` — declares x from a Result or returns its error.
#define KEVIN_ASSIGN_OR_RETURN(lhs, expr) \
  KEVIN_ASSIGN_OR_RETURN_IMPL_(KEVIN_CONCAT_(kevin_result_, __LINE__), lhs, expr)
#define KEVIN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.is_ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
