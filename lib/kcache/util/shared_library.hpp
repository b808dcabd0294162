// A shared library loaded at run time (dlopen) rather than linked: for
// libraries kcache needs only on some paths (NVRTC, the CUDA driver,
// libcurl), so that a machine without them still runs everything else and
// a command that never uses them never pays their load time.
//
// Thread-safety: open() may be called from any thread (dlopen is
// thread-safe; its error text is read under a lock); a SharedLibrary is
// used by one thread while resolving, then only read.
#pragma once

#include "kcache/util/error.hpp"

#include <string>

namespace kcache::util {

class SharedLibrary {
 public:
  /// How long the library stays mapped.
  enum class Lifetime {
    until_closed,  ///< unmapped when the last SharedLibrary of it is destroyed
    /// Mapped for the rest of the process (RTLD_NODELETE): for a library
    /// that registers exit handlers or keeps allocations alive past its
    /// last use (NVRTC's C++ runtime does both).
    process,
  };

  /// Loads `name` (a path, or a soname the dynamic loader searches for) with
  /// every symbol bound now and none exported to later loads (RTLD_NOW |
  /// RTLD_LOCAL). not_found with the loader's reason; callers add what to
  /// install.
  static Result<SharedLibrary> open(const std::string& name, Lifetime lifetime = Lifetime::until_closed);

  SharedLibrary() = default;
  ~SharedLibrary();
  SharedLibrary(SharedLibrary&& o) noexcept : m_handle(o.m_handle), m_name(std::move(o.m_name)) {
    o.m_handle = nullptr;
  }
  SharedLibrary& operator=(SharedLibrary&& o) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  /// Sets `out` to the function `symbol`; when the library has none, sets
  /// it to null and appends the name to `missing` (", "-separated), so a
  /// loader resolves its whole table and reports every absent symbol at once.
  template <typename Fn>
  void resolve(const char* symbol, Fn& out, std::string& missing) const {
    out = reinterpret_cast<Fn>(address_of(symbol));
    if (!out) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  }

  /// What open() was given.
  const std::string& name() const { return m_name; }

 private:
  void* address_of(const char* symbol) const;
  void* m_handle = nullptr;
  std::string m_name;
};

}  // namespace kcache::util
