// assess() (build/freshness.hpp): the direct rule, then one expansion.
#include "kcache/engine/freshness.hpp"

#include "kcache/compile/compiler.hpp"

namespace kcache::engine {

Assessment assess(const definition::KernelSpec& spec, const Recorded& stored, definition::FileCache& files,
                  const compile::Toolchain& toolchain) {
  auto id = definition::compute_id(spec);
  const auto& fields = toolchain.fields(spec.optimize);
  Assessment a = check_direct(id, fields, stored, files);
  bool only_inputs =
      std::all_of(a.changes.begin(), a.changes.end(), [](const Change& c) { return c.name.starts_with("input:"); });
  if (a.state != Freshness::stale || !only_inputs) return a;
  a.direct = false;
  PhaseTimes ignored;
  auto def = compile::expand(spec, files, ignored);
  if (!def) {
    a.changes.push_back({"expand", "ok", def.error().message});
    return a;
  }
  if (stored.ir_known && definition::compute_ir(*def, fields).hash == stored.key.ir) {
    a.state = Freshness::fresh;
    a.changes.clear();
  }
  return a;
}

}  // namespace kcache::engine
