#include "kcache/report/reproducible_report.hpp"

#include "kcache/report/render_internal.hpp"

#include <fmt/format.h>

namespace kcache::report {

using engine::Reproducibility;
using nlohmann::json;

std::string reproducible_text(const engine::ReproducibleResult& result) {
  std::string out;
  for (const auto& k : result.kernels) {
    if (k.state == Reproducibility::reproducible) continue;
    if (k.state == Reproducibility::differs && !k.error)
      out += fmt::format("differs  {}: {} B ({}) vs {} B ({}), first difference at byte {}\n", terminal_text(k.kernel),
                         k.bytes[0], k.digest[0].hex().substr(0, 16), k.bytes[1], k.digest[1].hex().substr(0, 16),
                         k.first_difference);
    else
      out += fmt::format("{:<8} {}: {}\n", engine::reproducibility_name(k.state), terminal_text(k.kernel),
                         terminal_text(k.error ? k.error->message.substr(0, k.error->message.find('\n')) : ""));
  }
  std::size_t differs = result.count(Reproducibility::differs);
  out += fmt::format("{} kernels compiled twice: {} reproducible, {} differ, {} failed ({:.2f} s)\n",
                     result.kernels.size(), result.count(Reproducibility::reproducible), differs,
                     result.count(Reproducibility::failed), result.wall_ms / 1000);
  if (differs)
    out +=
        "the same key gave different bytes: the compiler depends on something other than its inputs "
        "(docs/design.md \"Deterministic compiles\"); such a store cannot be merged with another build's\n";
  return out;
}

std::string reproducible_json(const engine::ReproducibleResult& result) {
  json kernels = json::array();
  json differs = json::array();
  for (const auto& k : result.kernels) {
    json j = {{"kernel", k.kernel},
              {"namespace", k.ns},
              {"key", {{"id", k.key.id.hex()}, {"ir", k.key.ir.hex()}}},
              {"state", engine::reproducibility_name(k.state)},
              {"bytes", {k.bytes[0], k.bytes[1]}},
              {"digests", {k.digest[0].hex(), k.digest[1].hex()}}};
    if (k.state == Reproducibility::differs) {
      differs.push_back(k.kernel);
      if (!k.error) j["first_difference"] = k.first_difference;
    }
    if (k.error) j["error"] = {{"category", category_name(k.error->category)}, {"message", k.error->message}};
    kernels.push_back(std::move(j));
  }
  json counts = json::object();
  for (auto r : {Reproducibility::reproducible, Reproducibility::differs, Reproducibility::failed})
    counts[std::string(engine::reproducibility_name(r))] = result.count(r);
  json out = {{"schema", "kcache.reproducible/1"},
              {"kernels", std::move(kernels)},
              {"counts", std::move(counts)},
              {"differs", std::move(differs)},
              {"wall_ms", result.wall_ms}};
  return internal::json_text(out);
}

}  // namespace kcache::report
