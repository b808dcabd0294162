// Bundle reader, batches: records read on the caller's thread, checked on workers, handed out in order.
#include "kcache/bundle/reader_internal.hpp"

#include <algorithm>
#include <cstdlib>

namespace kcache::bundle {

/// Reads the next records into a batch (a spare one when there is one):
/// up to k_batch_bytes of them, or with `single` exactly one. Stops at the
/// first error, which the batch carries.
internal::Batch BundleReader::Impl::read_batch(bool single) {
  internal::Batch b;
  if (!spare.empty()) {
    b = std::move(spare.back());
    spare.pop_back();
  }
  b.reset(next_entry);
  const std::size_t n = header.index.size();
  while (next_entry < n) {
    const std::size_t i = next_entry;
    const std::size_t size = stored_size(i);
    if (!b.ends.empty() && (single || b.size() + size > internal::k_batch_bytes)) break;
    auto frame_done = read_record(i, b.append(size));
    if (!frame_done) {
      b.ends.pop_back();
      b.error = std::move(frame_done).error();
      b.error_consumed = consumed;
      break;
    }
    b.consumed.push_back(consumed);
    ++next_entry;
    if (auto ok = end_record(i, *frame_done); !ok) {
      b.error = std::move(ok).error();
      b.error_after_last = true;
      b.error_consumed = consumed;
      break;
    }
  }
  return b;
}

/// Checks record `i` (its bytes as read) against its index entry and decodes
/// it. Touches only the index, so it runs on a worker while the caller reads.
Result<Entry> BundleReader::Impl::check_record(std::size_t i, std::span<const std::uint8_t> bytes) const {
  const IndexEntry& want = header.index[i];
  if (digest_bytes(bytes) != want.digest)
    return corrupt(fmt::format("bundle {} digest mismatch: its bytes differ from the index", entry_name(i)));
  auto entry = decode_entry(bytes);
  if (!entry) return tl::unexpected(std::move(entry).error().context("bundle " + entry_name(i)));
  if (entry->kernel != want.kernel || entry->key != want.key || entry->payload_kind != want.payload_kind ||
      entry->payload.size() != want.payload_size)
    return corrupt(fmt::format("bundle {}: the record (kernel '{}', {} payload bytes) does not match its index entry",
                               entry_name(i), printable(entry->kernel), entry->payload.size()));
  // What the record says (recorded paths, names, fields) is checked here, so
  // that nothing downstream (import, freshness, inspect) sees a record that
  // could lead it outside the project or drive a terminal.
  if (auto ok = validate_entry_record(*entry); !ok)
    return corrupt(fmt::format("bundle {}: {}", entry_name(i), ok.error().message));
  return std::move(*entry);
}

internal::Checked BundleReader::Impl::check_batch(const internal::Batch& b) const {
  internal::Checked out;
  out.entries.reserve(b.ends.size());
  // Version 2 and later: each record is restored here, on the worker, into
  // one buffer for the batch. On the reading thread, restoring was a third
  // of that thread's CPU, which then bounded the whole read on 2 cores.
  // malloc, not new: a program that compiles zero-fills operator new (for
  // deterministic compiles, compile/defined_heap.cpp), which this buffer,
  // overwritten at once, does not need.
  std::unique_ptr<std::uint8_t, decltype(&std::free)> restored(nullptr, &std::free);
  if (internal::traits(header.format_version).transformed_records) {
    std::uint64_t largest = 0;
    for (std::size_t k = 0; k < b.ends.size(); ++k) largest = std::max(largest, header.index[b.first + k].record_size);
    restored.reset(static_cast<std::uint8_t*>(std::malloc(std::max<std::uint64_t>(largest, 1))));
    if (!restored) {
      out.error = Error{Category::io_error, fmt::format("out of memory restoring {}", entry_name(b.first))};
      return out;
    }
  }
  for (std::size_t k = 0; k < b.ends.size(); ++k) {
    const std::size_t i = b.first + k;
    std::span<const std::uint8_t> record = b.record(k);
    if (internal::traits(header.format_version).transformed_records) {
      std::span<std::uint8_t> target(restored.get(), static_cast<std::size_t>(header.index[i].record_size));
      if (auto ok = internal::restore_record(record, header.index[i], target, header.format_version); !ok) {
        out.error = Error{Category::corruption, fmt::format("bundle {}: {}", entry_name(i), ok.error().message)};
        break;
      }
      record = target;
    }
    auto entry = check_record(i, record);
    if (!entry) {
      out.error = std::move(entry).error();
      break;
    }
    out.entries.push_back(std::move(*entry));
  }
  return out;
}

/// check_batch for a batch of one record larger than k_batch_bytes, which
/// frees its bytes as soon as they are used: the stored form once restored
/// (versions 2 and 3), the record once decoded (the Entry holds its own
/// copy). So a record costs at most 3 x its size while it is restored
/// (stored form, record, the transform's words), 2 x while it is decoded
/// and its size (the Entry) after; no batch buffer of that size outlives it.
internal::Checked BundleReader::Impl::check_alone(internal::Batch& b) const {
  auto release = [&b] {
    b.bytes.reset();
    b.capacity = 0;
  };
  if (b.ends.size() != 1 || b.record(0).size() <= internal::k_batch_bytes) {
    internal::Checked out = check_batch(b);
    if (b.capacity > internal::k_batch_bytes) release();
    return out;
  }
  internal::Checked out;
  const std::size_t i = b.first;
  std::span<const std::uint8_t> record = b.record(0);
  std::unique_ptr<std::uint8_t, decltype(&std::free)> restored(nullptr, &std::free);
  if (internal::traits(header.format_version).transformed_records) {
    const auto size = static_cast<std::size_t>(header.index[i].record_size);
    restored.reset(static_cast<std::uint8_t*>(std::malloc(std::max<std::size_t>(size, 1))));
    if (!restored) {
      out.error = Error{Category::io_error, fmt::format("out of memory restoring {}", entry_name(i))};
      release();
      return out;
    }
    std::span<std::uint8_t> target(restored.get(), size);
    auto ok = internal::restore_record(record, header.index[i], target, header.format_version);
    release();
    if (!ok) {
      out.error = Error{Category::corruption, fmt::format("bundle {}: {}", entry_name(i), ok.error().message)};
      return out;
    }
    record = target;
  }
  auto entry = check_record(i, record);
  release();
  if (entry) out.entries.push_back(std::move(*entry));
  else out.error = std::move(entry).error();
  return out;
}

/// Makes `current` the next batch with its verdict: from the worker's
/// window, or read and checked here when the next record is larger than a
/// batch or no worker is wanted (or none could be started).
Result<void> BundleReader::Impl::next_batch() {
  if (current) {
    spare.push_back(std::move(*current));
    current.reset();
  }
  const auto big = [&] {
    return next_entry < header.index.size() && header.index[next_entry].record_size > internal::k_batch_bytes;
  };
  // A window that stopped taking batches still holds the ones before the
  // next record: they come first.
  if (window || (workers > 0 && !big())) {
    if (!window) {
      auto started = internal::CheckWindow::start(workers, [this](const internal::Batch& b) { return check_batch(b); });
      if (started) window = std::move(*started);
      else workers = 0;  // no thread to be had: the same checks, on this thread
    }
    if (window) {
      // The window stops taking batches before a large record (read and
      // checked alone, below) and after an error.
      auto produce = [&]() -> Result<std::optional<internal::Batch>> {
        if (read_failed || next_entry == header.index.size() || big()) return std::optional<internal::Batch>{};
        internal::Batch b = read_batch(false);
        if (b.error) read_failed = true;
        return std::optional<internal::Batch>(std::move(b));
      };
      auto mapped = KCACHE_TRY(window->next(produce));
      if (mapped) {
        current = std::move(mapped->item);
        checked = std::move(mapped->result);
        handed_in_batch = 0;
        return {};
      }
      window.reset();  // drained; a new one starts after the large record
    }
  }
  current = read_batch(big());
  if (current->error) read_failed = true;
  checked = check_alone(*current);
  handed_in_batch = 0;
  return {};
}

Result<std::optional<Entry>> BundleReader::Impl::next() {
  const std::size_t n = header.index.size();
  for (;;) {
    if (current) {
      const std::size_t k = handed_in_batch;
      if (k < checked.entries.size()) {
        // Record k passed its checks, but the read failed closing its block.
        if (k + 1 == current->ends.size() && current->error && current->error_after_last) {
          shown_consumed = current->error_consumed;
          return tl::unexpected(*current->error);
        }
        ++handed_in_batch;
        ++handed;
        shown_consumed = current->consumed[k];
        return std::optional<Entry>(std::move(checked.entries[k]));
      }
      if (checked.error) {
        shown_consumed = current->consumed[k];
        return tl::unexpected(*checked.error);
      }
      if (current->error) {
        shown_consumed = current->error_consumed;
        return tl::unexpected(*current->error);
      }
    }
    if (handed == n) {
      // Every record read: the reading thread is the caller's again.
      window.reset();
      shown_consumed = consumed;
      return std::nullopt;
    }
    KCACHE_CHECK(next_batch());
  }
}

}  // namespace kcache::bundle
