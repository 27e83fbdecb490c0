//===- Error.h - Errors of the tang host runtimes ---------------*- C++ -*-===//
//
// Error and Expected<T>, shared by runtime/cuda and runtime/vulkan. Nothing
// throws (LLVM-style builds use -fno-exceptions): every fallible call returns
// an `Error` or an `Expected<T>`.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_RUNTIME_COMMON_ERROR_H
#define TANG_RUNTIME_COMMON_ERROR_H

#include <optional>
#include <string>
#include <utility>

namespace tang::runtime {

/// The outcome of a fallible call: success, or a failure with a message.
/// Like llvm::Error it is true on failure:
///   if (Error e = buffer.upload(data, n)) return e;
class [[nodiscard]] Error {
public:
  /// Success.
  Error() = default;
  /// Success.
  static Error success() { return Error(); }
  /// A failure saying `message` (an empty message reads "unknown error").
  static Error failure(std::string message) {
    Error e;
    e.failed = true;
    e.text = message.empty() ? "unknown error" : std::move(message);
    return e;
  }

  /// True on failure.
  explicit operator bool() const { return failed; }
  /// True on success.
  bool ok() const { return !failed; }
  /// What went wrong; empty on success.
  const std::string &message() const { return text; }
  /// This error with "`context`: " put in front of its message (success
  /// stays success).
  Error withContext(const std::string &context) && {
    if (failed)
      text = context + ": " + text;
    return std::move(*this);
  }

private:
  bool failed = false;
  std::string text;
};

/// A value of type T, or the Error that prevented it. Like llvm::Expected it
/// is true when it holds a value.
template <typename T>
class [[nodiscard]] Expected {
public:
  /// Holds `value`.
  Expected(T &&value) : value(std::move(value)) {}
  /// Holds a copy of `value`.
  Expected(const T &value) : value(value) {}
  /// Holds `error`, which must be a failure.
  Expected(Error error) : err(std::move(error)) {
    if (!err)
      err = Error::failure("internal error: Expected built from success");
  }

  /// True when a value is held.
  explicit operator bool() const { return value.has_value(); }
  /// The value; only when one is held.
  T &operator*() { return *value; }
  /// The value; only when one is held.
  const T &operator*() const { return *value; }
  /// The value; only when one is held.
  T *operator->() { return &*value; }
  /// The value; only when one is held.
  const T *operator->() const { return &*value; }
  /// The error (success when a value is held).
  const Error &error() const { return err; }
  /// Moves the error out (success when a value is held).
  Error takeError() { return std::move(err); }

private:
  std::optional<T> value;
  Error err;
};

} // namespace tang::runtime

#endif // TANG_RUNTIME_COMMON_ERROR_H
