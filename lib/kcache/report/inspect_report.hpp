// Reports of `kcache inspect KERNEL` and `kcache inspect --why`: a kernel's
// stored entries in full, and why kernels would not hit. JSON schemas
// "kcache.inspect-kernel/1" and "kcache.why/1"; fields are only ever added.
// (The store listing, damaged entries included, is report.hpp store_text.)
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/engine/explain.hpp"
#include "kcache/maintain/inspect.hpp"

#include <string>
#include <vector>

namespace kcache::report {

/// Every stored entry of the kernel (identity, toolchain, inputs, origin),
/// then the explanation; with `why_only`, only the verdict per entry and the
/// explanation.
std::string kernel_text(const maintain::KernelReport& report, bool why_only);
/// The same as JSON (schema "kcache.inspect-kernel/1").
std::string kernel_json(const maintain::KernelReport& report, bool why_only);

/// One line per kernel that would not hit, then "N of M kernels fresh".
std::string why_text(const std::vector<engine::Explanation>& all);
/// The same as JSON (schema "kcache.why/1").
std::string why_json(const std::vector<engine::Explanation>& all);

/// What `inspect --foreign` says when no namespace is foreign.
std::string no_foreign_text(bool with_manifest);

}  // namespace kcache::report
