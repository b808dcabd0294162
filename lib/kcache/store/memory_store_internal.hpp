// Memory-store internals that tests need to reach. Thread-safety: as store.hpp.
#pragma once

#include "kcache/store/store.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kcache::store::internal {

/// Stores `record` as is under entry key `key` (layout_internal.hpp) of a
/// store made by make_memory_store, as a damaged store file would hold it:
/// no checks, and the usage record is left alone. For tests: the memory
/// store's own writes always pass the record checks. invalid_argument when
/// `store` is not a memory store.
Result<void> put_raw_entry_record(Store& store, std::string key, std::vector<std::uint8_t> record);

}  // namespace kcache::store::internal
