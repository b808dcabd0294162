// The pure parts of the CUDA device side (contracts in cuda_device.hpp):
// versions, device descriptions, selectors, the runs-on check and error names.
#include "kcache/cuda_device/cuda_device.hpp"

#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <utility>

namespace kcache::cuda_device {
namespace {

std::optional<int> parse_int(std::string_view s, int lo, int hi) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// The codes kcache's own messages and tests name; cuGetErrorName answers the
// rest when the driver is there.
constexpr std::array<std::pair<int, std::string_view>, 24> k_names = {{
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {200, "CUDA_ERROR_INVALID_IMAGE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {218, "CUDA_ERROR_INVALID_PTX"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED"},
    {300, "CUDA_ERROR_INVALID_SOURCE"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},
    {500, "CUDA_ERROR_NOT_FOUND"},
    {719, "CUDA_ERROR_LAUNCH_FAILED"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {999, "CUDA_ERROR_UNKNOWN"},
}};

std::string device_list(const std::vector<DeviceInfo>& devices) {
  std::string out;
  for (const auto& d : devices)
    out += fmt::format("{}cuda:{} {} (compute capability {})", out.empty() ? "" : ", ", d.ordinal,
                       util::escape_untrusted(d.name), d.compute_capability());
  return out;
}

}  // namespace

std::string cuda_version_text(int version) { return fmt::format("{}.{}", version / 1000, (version % 1000) / 10); }

std::optional<int> parse_cuda_version(std::string_view text) {
  const auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const auto major_text = text.substr(0, dot), minor_text = text.substr(dot + 1);
  if (!all_digits(major_text) || !all_digits(minor_text)) return std::nullopt;
  auto major = parse_int(major_text, 1, 999);
  auto minor = parse_int(minor_text, 0, 99);
  if (!major || !minor) return std::nullopt;
  return *major * 1000 + *minor * 10;
}

std::string DeviceInfo::compute_capability() const { return fmt::format("{}.{}", cc_major, cc_minor); }

std::string DeviceInfo::native_arch() const { return fmt::format("sm_{}{}", cc_major, cc_minor); }

Result<DeviceInfo> parse_device_description(std::string_view text) {
  constexpr std::string_view form =
      "expected NAME;MAJOR.MINOR;CUDA_VERSION, e.g. \"A100;8.0;12040\" or \"A100;8.0;12.4\"";
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const auto semi = text.find(';', start);
    parts.push_back(text.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start));
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  if (parts.size() != 3)
    return fail(Category::invalid_argument, "CUDA device description '{}' has {} parts; {}",
                util::escape_untrusted(text), parts.size(), form);
  DeviceInfo d;
  if (parts[0].empty() || !util::is_printable_utf8(parts[0]) || parts[0].size() > 256)
    return fail(Category::invalid_argument, "CUDA device description '{}': the name is empty or not printable; {}",
                util::escape_untrusted(text), form);
  d.name = std::string(parts[0]);
  const auto dot = parts[1].find('.');
  std::optional<int> major, minor;
  if (dot != std::string_view::npos && all_digits(parts[1].substr(0, dot)) && all_digits(parts[1].substr(dot + 1))) {
    major = parse_int(parts[1].substr(0, dot), 1, 99);
    minor = parse_int(parts[1].substr(dot + 1), 0, 9);
  }
  if (!major || !minor)
    return fail(Category::invalid_argument,
                "CUDA device description '{}': compute capability '{}' is not MAJOR.MINOR (e.g. 9.0); {}",
                util::escape_untrusted(text), util::escape_untrusted(parts[1]), form);
  d.cc_major = *major;
  d.cc_minor = *minor;
  std::optional<int> version;
  if (parts[2].find('.') != std::string_view::npos) version = parse_cuda_version(parts[2]);
  else if (all_digits(parts[2])) version = parse_int(parts[2], 1000, 999990);
  if (!version)
    return fail(Category::invalid_argument,
                "CUDA device description '{}': CUDA version '{}' is neither 12040-style nor 12.4-style; {}",
                util::escape_untrusted(text), util::escape_untrusted(parts[2]), form);
  d.cuda_version = *version;
  return d;
}

bool is_cuda_selector(std::string_view selector) { return selector == "cuda" || selector.starts_with("cuda:"); }

Result<DeviceInfo> select_device(const std::vector<DeviceInfo>& devices, std::string_view selector) {
  std::string_view sel = selector;
  if (sel == "cuda") sel = {};
  else if (sel.starts_with("cuda:")) sel.remove_prefix(5);
  if (devices.empty())
    return fail(Category::device_unavailable, "no CUDA device to select '{}' from", util::escape_untrusted(selector));
  if (sel.empty()) return devices.front();
  if (all_digits(sel)) {
    for (const auto& d : devices)
      if (std::to_string(d.ordinal) == sel) return d;
    return fail(Category::not_found, "no CUDA device {} (there are: {})", util::escape_untrusted(selector),
                device_list(devices));
  }
  std::vector<DeviceInfo> matches;
  for (const auto& d : devices)
    if (d.name.find(sel) != std::string::npos) matches.push_back(d);
  if (matches.size() == 1) return matches.front();
  if (matches.size() > 1)
    return fail(Category::ambiguous, "'{}' matches {} CUDA devices ({}): select one by number (cuda:N)",
                util::escape_untrusted(selector), matches.size(), device_list(matches));
  return fail(Category::not_found, "no CUDA device matches '{}' (there are: {})", util::escape_untrusted(selector),
              device_list(devices));
}

Result<void> check_runs(const FingerprintRecord& record, const DeviceInfo& device) {
  const std::string* arch_text = record.find(k_cuda_field_arch);
  const auto arch = arch_text ? parse_cuda_arch(*arch_text) : std::nullopt;
  if (!arch)
    return fail(Category::corruption, "the cuda namespace record has no valid arch ({})",
                arch_text ? util::escape_untrusted(*arch_text) : std::string("absent"));
  std::vector<std::string> problems;
  if (!cuda_arch_runs_on(*arch, device.cc_major, device.cc_minor)) {
    std::string rule;
    if (arch->ptx && arch->suffix == 0)
      rule = fmt::format("PTX for {} needs compute capability {}.{} or newer", *arch_text, arch->major, arch->minor);
    else if (arch->suffix == 'a')
      rule = fmt::format("an arch-specific {} image runs only on {}.{} devices", *arch_text, arch->major, arch->minor);
    else
      rule = fmt::format("a {} image runs only on {}.{} to {}.9 devices", *arch_text, arch->major, arch->minor,
                         arch->major);
    problems.push_back(
        fmt::format("arch {} vs device compute capability {}: {}", *arch_text, device.compute_capability(), rule));
  }
  if (const std::string* needs = record.find(k_cuda_field_cuda_version); needs && !needs->empty()) {
    const auto version = parse_cuda_version(*needs);
    if (!version)
      return fail(Category::corruption, "the cuda namespace record's cuda_version '{}' is not MAJOR.MINOR",
                  util::escape_untrusted(*needs));
    if (*version > device.cuda_version)
      problems.push_back(fmt::format("cuda_version: needs CUDA {}, the driver offers {}", *needs,
                                     cuda_version_text(device.cuda_version)));
  }
  if (problems.empty()) return {};
  std::string joined;
  for (const auto& p : problems) joined += (joined.empty() ? "" : "; ") + p;
  return fail(Category::fingerprint_mismatch,
              "cuda/{} cannot run on CUDA device {} ({}): {}; build for {} (manifest `arch`), or update the driver",
              *arch_text, device.ordinal, util::escape_untrusted(device.name), joined, device.native_arch());
}

Category error_category(int cu_result) {
  switch (cu_result) {
    case 3:
    case 4:
    case 34:
    case 35:
    case 36:
    case 46:
    case 100:
    case 101:
    case 102:
    case 804: return Category::device_unavailable;
    case 200:
    case 209:
    case 218:
    case 221:
    case 222:
    case 223:
    case 300: return Category::compile_failed;
    case 500: return Category::not_found;
    default: return Category::io_error;
  }
}

std::string fallback_error_name(int cu_result) {
  for (const auto& [code, name] : k_names)
    if (code == cu_result) return std::string(name);
  return fmt::format("CUDA error {}", cu_result);
}

std::string parse_nvidia_proc_version(std::string_view text) {
  constexpr std::string_view marker = "Kernel Module";
  auto at = text.find(marker);
  if (at == std::string_view::npos) return {};
  std::string_view rest = text.substr(at + marker.size());
  for (;;) {
    const auto start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) return {};
    rest.remove_prefix(start);
    const auto end = std::min(rest.find_first_of(" \t\n"), rest.size());
    const std::string_view word = rest.substr(0, end);
    if (!word.empty() && word.front() >= '0' && word.front() <= '9' &&
        word.find_first_not_of("0123456789.") == std::string_view::npos && word.size() <= 32)
      return std::string(word);
    if (word.find('\n') != std::string_view::npos || end == rest.size() || rest[end] == '\n') return {};
    rest.remove_prefix(end);
  }
}

}  // namespace kcache::cuda_device
