// Kernel-name globs (`export --kernel`). Thread-safety: pure.
#pragma once

#include <string_view>

namespace kcache::util {

/// Whether `name` matches `pattern`: `*` is any run of characters, `?` one
/// character, everything else literal (brackets too, since variant names
/// contain them: `matmul[T=float,*`). Linear in practice, never exponential.
bool match_glob(std::string_view pattern, std::string_view name);

}  // namespace kcache::util
