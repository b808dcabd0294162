// libFuzzer entry point for the pipeline interface a vulkan entry records
// (device/pipeline_entry.hpp, recipe scheme 2; docs/reliability.md F1). A
// trusted runtime serves that interface as read, and it arrives in bundles,
// remote values and stores, so its parser sees untrusted bytes. The input is
// the three fields' values (bindings, push_constants, specialization)
// separated by newlines, placed after a valid recipe. Any outcome but a
// crash, a sanitizer report or a hang is fine, with three rules: the recipe
// before the fields still reads, a refusal says what is wrong in printable
// text, and an accepted interface writes back exactly the values it was
// read from (each interface has one encoding).
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace kcache;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string values[3];
  for (auto& v : values) {
    const std::size_t nl = input.find('\n');
    v = std::string(input.substr(0, nl));
    input = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  }
  const device::PipelineRecipe recipe{"spirv/vulkan1.2", {}, "main", {{0, 64}}};
  Entry e;
  e.kernel = "k";
  e.payload_kind = PayloadKind::pipeline_cache;
  e.ir_fields = recipe.fields();
  e.ir_fields.emplace_back("bindings", values[0]);
  e.ir_fields.emplace_back("push_constants", values[1]);
  e.ir_fields.emplace_back("specialization", values[2]);
  e.key.ir = device::recipe_hash(recipe);

  if (!device::read_pipeline_recipe(e)) std::abort();  // the interface is not the recipe
  auto read = device::read_pipeline_interface(e);
  if (!read) {
    if (read.error().message.empty() || !util::is_printable_utf8(read.error().message)) std::abort();
    return 0;
  }
  if (!read->has_value()) std::abort();  // scheme 2 always has one
  const auto fields = (*read)->fields();
  for (int i = 0; i < 3; ++i)
    if (fields[i].second != values[i]) std::abort();
  return 0;
}
