#include "kcache/embed/embed.hpp"

#include "kcache/core/namespace.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>
#include <optional>

namespace kcache::embed {
namespace {

constexpr std::uint32_t k_spirv_magic = 0x07230203;

/// A name the output can use as a C prefix and a C++ namespace: letters,
/// digits and '_', not a keyword of either language (the header is C and
/// C++), not reserved to the implementation (a leading "__" or '_' and a
/// capital).
bool is_c_identifier(std::string_view s) {
  if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  if (!std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
    return false;
  if (s.starts_with("__") || (s.size() > 1 && s[0] == '_' && std::isupper(static_cast<unsigned char>(s[1]))))
    return false;
  static constexpr std::string_view k_keywords[] = {"alignas",
                                                    "alignof",
                                                    "and",
                                                    "and_eq",
                                                    "asm",
                                                    "auto",
                                                    "bitand",
                                                    "bitor",
                                                    "bool",
                                                    "break",
                                                    "case",
                                                    "catch",
                                                    "char",
                                                    "char8_t",
                                                    "char16_t",
                                                    "char32_t",
                                                    "class",
                                                    "compl",
                                                    "concept",
                                                    "const",
                                                    "consteval",
                                                    "constexpr",
                                                    "constinit",
                                                    "const_cast",
                                                    "continue",
                                                    "co_await",
                                                    "co_return",
                                                    "co_yield",
                                                    "decltype",
                                                    "default",
                                                    "delete",
                                                    "do",
                                                    "double",
                                                    "dynamic_cast",
                                                    "else",
                                                    "enum",
                                                    "explicit",
                                                    "export",
                                                    "extern",
                                                    "false",
                                                    "float",
                                                    "for",
                                                    "friend",
                                                    "goto",
                                                    "if",
                                                    "inline",
                                                    "int",
                                                    "long",
                                                    "mutable",
                                                    "namespace",
                                                    "new",
                                                    "noexcept",
                                                    "not",
                                                    "not_eq",
                                                    "nullptr",
                                                    "operator",
                                                    "or",
                                                    "or_eq",
                                                    "private",
                                                    "protected",
                                                    "public",
                                                    "register",
                                                    "reinterpret_cast",
                                                    "requires",
                                                    "restrict",
                                                    "return",
                                                    "short",
                                                    "signed",
                                                    "sizeof",
                                                    "static",
                                                    "static_assert",
                                                    "static_cast",
                                                    "struct",
                                                    "switch",
                                                    "template",
                                                    "this",
                                                    "thread_local",
                                                    "throw",
                                                    "true",
                                                    "try",
                                                    "typedef",
                                                    "typeid",
                                                    "typename",
                                                    "union",
                                                    "unsigned",
                                                    "using",
                                                    "virtual",
                                                    "void",
                                                    "volatile",
                                                    "wchar_t",
                                                    "while",
                                                    "xor",
                                                    "xor_eq",
                                                    "std",
                                                    "kcache"};
  return std::find(std::begin(k_keywords), std::end(k_keywords), s) == std::end(k_keywords);
}

/// A C string literal; every byte outside printable ASCII (and '?', against
/// trigraphs) as a three-digit octal escape, which cannot swallow the next
/// character as a hex escape would.
std::string c_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    if (b == '"' || b == '\\') out += '\\', out += ch;
    else if (b >= 0x20 && b < 0x7f && b != '?') out += ch;
    else out += fmt::format("\\{:03o}", b);
  }
  return out + "\"";
}

/// A name inside a /* comment */: escaped as a literal's content, every "*/"
/// (it would end the comment) and "/*" (-Wcomment: -Wall -Werror builds of
/// the output would fail) broken by a space. A space creates no new pair.
std::string comment_text(std::string_view name) {
  std::string text = c_string(name);
  text = text.substr(1, text.size() - 2);
  for (std::size_t i = 0; i + 1 < text.size(); ++i)
    if ((text[i] == '*' && text[i + 1] == '/') || (text[i] == '/' && text[i + 1] == '*')) text.insert(i + 1, " ");
  return text;
}

struct Kernel {
  std::string name, key_id, key_ir, stage, entry;
  std::vector<std::uint32_t> spirv;
  struct Spec {
    std::uint32_t id;
    std::string type, text;
  };
  std::vector<Spec> spec;
};

const std::string* field(const std::vector<Field>& fields, std::string_view name) {
  for (const auto& [k, v] : fields)
    if (k == name) return &v;
  return nullptr;
}

Result<Kernel> kernel_of(const Entry& e, const std::string& ns) {
  Kernel k;
  k.name = e.kernel;
  k.key_id = e.key.id.hex();
  k.key_ir = e.key.ir.hex();
  if (e.payload_kind != PayloadKind::spirv || e.payload.size() < 20 || e.payload.size() % 4 != 0)
    return fail(Category::corruption, "entry '{}' in {} holds no SPIR-V module — run `kcache verify`", e.kernel, ns);
  k.spirv.resize(e.payload.size() / 4);
  std::memcpy(k.spirv.data(), e.payload.data(), e.payload.size());
  if (k.spirv[0] != k_spirv_magic)
    return fail(Category::corruption, "entry '{}' in {} is not a SPIR-V module — run `kcache verify`", e.kernel, ns);
  const std::string* stage = field(e.id_fields, "stage");
  const std::string* entry = field(e.id_fields, "entry");
  k.stage = stage ? *stage : "";
  k.entry = entry ? *entry : "main";
  // "spec_constant:<id>" = "<type>:<text>" (definition.cpp); the runtime
  // converts them to bits with the store lookup's own rule.
  constexpr std::string_view prefix = "spec_constant:";
  for (const auto& [name, value] : e.id_fields) {
    if (!name.starts_with(prefix)) continue;
    auto colon = value.find(':');
    std::uint32_t id = 0;
    auto id_text = std::string_view(name).substr(prefix.size());
    auto [p, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (colon == std::string::npos || ec != std::errc{} || p != id_text.data() + id_text.size())
      return fail(Category::corruption, "entry '{}' in {}: malformed spec constant field '{}'", e.kernel, ns, name);
    k.spec.push_back({id, value.substr(0, colon), value.substr(colon + 1)});
  }
  std::sort(k.spec.begin(), k.spec.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return k;
}

void append_words(std::string& out, const std::vector<std::uint32_t>& words) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    fmt::format_to(std::back_inserter(out), "0x{:x},", words[i]);
    out += (i % 12 == 11 || i + 1 == words.size()) ? '\n' : ' ';
  }
}

std::string header_comment(const Sources& s) {
  return fmt::format(
      "/* Generated by `kcache emit` from the store namespace {}: {} kernels, {} bytes of SPIR-V.\n"
      " * Do not edit; re-run kcache emit. Types: kcache/runtime/kcache_embedded.h. */\n",
      s.ns, s.kernels, s.spirv_bytes);
}

/// The per-kernel arrays and the kernels array, shared by C and C++
/// (the C++ file puts them into its namespace).
std::string definitions(const std::vector<Kernel>& kernels, std::string_view table_name, std::string_view target,
                        bool cpp) {
  std::string out;
  const char* storage = "static const";
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    fmt::format_to(std::back_inserter(out), "/* {} */\n{} uint32_t kcache_spirv_{}[{}] = {{\n", comment_text(k.name),
                   storage, i, k.spirv.size());
    append_words(out, k.spirv);
    out += "};\n";
    if (!k.spec.empty()) {
      fmt::format_to(std::back_inserter(out), "{} kcache_embedded_spec kcache_spec_{}[{}] = {{\n", storage, i,
                     k.spec.size());
      for (const auto& s : k.spec)
        fmt::format_to(std::back_inserter(out), "  {{{}, {}, {}}},\n", s.id, c_string(s.type), c_string(s.text));
      out += "};\n";
    }
  }
  fmt::format_to(std::back_inserter(out), "\n{} kcache_embedded_kernel kcache_kernels[{}] = {{\n", storage,
                 std::max<std::size_t>(kernels.size(), 1));
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    fmt::format_to(
        std::back_inserter(out), "  {{{}, {}, {},\n   {}, {}, kcache_spirv_{}, {}, {}, {}}},\n", c_string(k.name),
        c_string(k.key_id), c_string(k.key_ir), c_string(k.stage), c_string(k.entry), i, k.spirv.size(),
        k.spec.empty() ? std::string(cpp ? "nullptr" : "NULL") : fmt::format("kcache_spec_{}", i), k.spec.size());
  }
  if (kernels.empty()) out += cpp ? "  {}\n" : "  {0}\n";
  out += "};\n\n";
  fmt::format_to(std::back_inserter(out),
                 "const kcache_embedded_table {} = {{KCACHE_EMBEDDED_VERSION, {}, kcache_kernels, {}}};\n", table_name,
                 c_string(target), kernels.size());
  return out;
}

}  // namespace

Result<Sources> emit_sources(store::Store& store, const EmitOptions& options) {
  if (!is_c_identifier(options.name))
    return fail(Category::invalid_argument,
                "--name '{}' is not a C identifier (letters, digits and '_', at most 64; not a C or C++ keyword, "
                "std or kcache, nor reserved: a leading '__' or '_' and a capital) — it names the files and "
                "symbols",
                util::escape_untrusted(options.name));
  Sources out;
  std::vector<Kernel> kernels;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    auto records = KCACHE_TRY(reader.namespace_records());
    std::vector<std::string> spirv;
    for (const auto& r : records)
      if (r.ns.backend == "spirv") spirv.push_back(r.ns.name());
    if (options.ns.empty()) {
      if (spirv.size() != 1)
        return fail(spirv.empty() ? Category::not_found : Category::invalid_argument, "{} — name one with --namespace",
                    spirv.empty() ? "the store holds no SPIR-V namespace"
                                  : fmt::format("the store holds several SPIR-V "
                                                "namespaces ({})",
                                                fmt::join(spirv, ", ")));
      out.ns = spirv.front();
    } else {
      if (!options.ns.starts_with("spirv/"))
        return fail(Category::invalid_argument,
                    "namespace '{}': only SPIR-V namespaces (spirv/<target>) are embedded — pipeline-cache blobs "
                    "belong to one device; ship them in a bundle (`kcache export`)",
                    options.ns);
      if (std::find(spirv.begin(), spirv.end(), options.ns) == spirv.end())
        return fail(Category::not_found, "the store has no namespace '{}' (it has: {})", options.ns,
                    spirv.empty() ? std::string("none") : fmt::format("{}", fmt::join(spirv, ", ")));
      out.ns = options.ns;
    }
    std::optional<Error> bad;
    KCACHE_CHECK(reader.scan(out.ns, [&](Entry&& e) {
      if (kernels.size() >= k_max_embedded_kernels) {
        bad = Error{
            Category::invalid_argument,
            fmt::format("{} holds more than {} kernels — emit fewer per source pair", out.ns, k_max_embedded_kernels)};
        return false;
      }
      auto k = kernel_of(e, out.ns);
      if (!k) {
        bad = k.error();
        return false;
      }
      kernels.push_back(std::move(*k));
      return true;
    }));
    if (bad) return tl::unexpected(*bad);
    return {};
  }));
  if (kernels.empty()) return fail(Category::not_found, "{} holds no kernels — run `kcache build` first", out.ns);
  std::sort(kernels.begin(), kernels.end(), [](const Kernel& a, const Kernel& b) { return a.name < b.name; });
  out.kernels = kernels.size();
  for (const auto& k : kernels) out.spirv_bytes += k.spirv.size() * 4;
  const std::string target = out.ns.substr(out.ns.find('/') + 1);
  const std::string& name = options.name;
  const std::string comment = header_comment(out);

  if (options.language == Language::c) {
    out.header_name = name + ".h";
    out.source_name = name + ".c";
    std::string guard = "KCACHE_EMBEDDED_" + name + "_H";
    std::transform(guard.begin(), guard.end(), guard.begin(), [](unsigned char c) { return std::toupper(c); });
    out.header =
        comment +
        fmt::format(
            "#ifndef {0}\n#define {0}\n\n#include <kcache/runtime/kcache_embedded.h>\n\n"
            "#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n"
            "/** Every kernel ({2}), sorted by name: read it, or open it with kcache_store_open_embedded(). */\n"
            "extern const kcache_embedded_table {1}_table;\n\n"
            "/** The kernel named `name`, or NULL (a binary search). */\n"
            "const kcache_embedded_kernel* {1}_find(const char* name);\n\n"
            "#ifdef __cplusplus\n}} /* extern \"C\" */\n#endif\n\n#endif /* {0} */\n",
            guard, name, out.kernels);
    out.source = comment +
                 fmt::format("#include \"{}\"\n\n#include <stdint.h>\n#include <string.h>\n\n", out.header_name) +
                 definitions(kernels, name + "_table", target, false) +
                 fmt::format(
                     "\nconst kcache_embedded_kernel* {0}_find(const char* name) {{\n"
                     "  size_t lo = 0, hi = {0}_table.count;\n"
                     "  if (!name) return NULL;\n"
                     "  while (lo < hi) {{\n"
                     "    size_t mid = lo + (hi - lo) / 2;\n"
                     "    int c = strcmp({0}_table.kernels[mid].name, name);\n"
                     "    if (c == 0) return &{0}_table.kernels[mid];\n"
                     "    if (c < 0) lo = mid + 1; else hi = mid;\n"
                     "  }}\n"
                     "  return NULL;\n}}\n",
                     name);
  } else {
    out.header_name = name + ".hpp";
    out.source_name = name + ".cpp";
    out.header =
        comment + fmt::format(
                      "#pragma once\n\n#include <kcache/runtime/kcache_embedded.h>\n\n#include <string_view>\n\n"
                      "namespace {0} {{\n\n"
                      "/// Every kernel ({1}), sorted by name: read it, or open it with\n"
                      "/// kcache::runtime::Store::open_embedded(table) / kcache_store_open_embedded(&table).\n"
                      "extern const kcache_embedded_table table;\n\n"
                      "/// The kernel named `name`, or nullptr (a binary search).\n"
                      "const kcache_embedded_kernel* find(std::string_view name);\n\n"
                      "}}  // namespace {0}\n",
                      name, out.kernels);
    out.source =
        comment +
        fmt::format("#include \"{}\"\n\n#include <algorithm>\n#include <cstdint>\n\nnamespace {} {{\n\n",
                    out.header_name, name) +
        definitions(kernels, "table", target, true) +
        "\nconst kcache_embedded_kernel* find(std::string_view name) {\n"
        "  const kcache_embedded_kernel* end = table.kernels + table.count;\n"
        "  const kcache_embedded_kernel* it = std::lower_bound(table.kernels, end, name,\n"
        "      [](const kcache_embedded_kernel& k, std::string_view n) { return std::string_view(k.name) < n; });\n"
        "  return it != end && std::string_view(it->name) == name ? it : nullptr;\n"
        "}\n\n" +
        fmt::format("}}  // namespace {}\n", name);
  }
  return out;
}

Result<void> write_sources(const Sources& sources, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(Category::io_error, "cannot create {}: {}", dir.string(), ec.message());
  for (const auto& [name, text] :
       {std::pair{&sources.header_name, &sources.header}, std::pair{&sources.source_name, &sources.source}}) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(text->data());
    KCACHE_CHECK(util::write_file_atomic(dir / *name, std::span<const std::uint8_t>(bytes, text->size())));
  }
  return {};
}

}  // namespace kcache::embed
