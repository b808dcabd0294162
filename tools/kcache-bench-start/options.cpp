// kcache-bench-start's command line: the usage text and the option parser.
#include "bench_start.hpp"
#include "kcache/runtime/kcache.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace bench_start {

const char* const k_usage =
    "usage: kcache-bench-start [--store DIR | --file FILE] [--device SEL] [--target ENV]\n"
    "                          [--startup cold|warm [--threads N] | --lookups N] [--trusted]\n"
    "                          [--modules objects|inline|identifier]\n"
    "                          [--caches kernel|kernel-sync|thread]\n"
    "                          [--lookups-first] [KERNEL...]\n"
    "\n"
    "Creates the compute pipelines of KERNEL... (default: every compute kernel in the\n"
    "store) on a Vulkan device, cold (no blob) and warm (kcache's pipeline-cache blob),\n"
    "and prints both creation times.\n"
    "  --store DIR     kcache store (default: $KCACHE_STORE, else ~/.cache/kcache)\n"
    "  --file FILE     a deployment file (`kcache deploy`) instead of a store, opened as\n"
    "                  an application opens it (kcache_file_open: digest checked once)\n"
    "  --device SEL    a device index, or the one device whose name contains SEL\n"
    "                  (default: the first discrete GPU, else integrated, virtual, CPU)\n"
    "  --target ENV    SPIR-V target to look kernels up in, e.g. vulkan1.2\n"
    "  --startup MODE  instead, time an application's start once: store open, every\n"
    "                  lookup and pipeline (cold: empty caches; warm: kcache's blobs)\n"
    "  --threads N     threads for --startup (default 1), one pipeline cache per kernel\n"
    "  --lookups N     instead, time N lookups of every kernel (no pipelines created):\n"
    "                  the open, then the mean, the best round and the median over\n"
    "                  kernels of each kernel's fastest lookup, per lookup\n"
    "  --trusted       open the store with KCACHE_OPEN_TRUSTED (no spirv-val per lookup)\n"
    "  --modules MODE  objects: a VkShaderModule per pipeline (default); inline: none,\n"
    "                  the stage carries the module's create info (needs and enables\n"
    "                  VK_EXT_graphics_pipeline_library); identifier: none, the stage\n"
    "                  names the module by its identifier, a miss then makes the module\n"
    "                  (needs and enables VK_EXT_shader_module_identifier)\n"
    "  --lookups-first for --startup: look every kernel up before creating any pipeline\n"
    "                  (default: each lookup just before its pipeline)\n"
    "  --caches MODE   for a warm --startup: kernel = a VkPipelineCache per kernel from\n"
    "                  its blob (default); thread = every blob merged into one beforehand\n"
    "                  (untimed), and one VkPipelineCache per thread made from that;\n"
    "                  kernel-sync = as kernel, each cache created externally synchronized\n"
    "                  (needs pipelineCreationCacheControl)\n"
    "\n"
    "CUDA (no Vulkan used): kcache-bench-start --cuda [--startup nvrtc|ptx|cubin] [--store DIR]\n"
    "                      [--manifest DIR] [--cuda-device N] [--launch] | --cuda --list [--cc X.Y]\n"
    "  --startup MODE  time getting a CUfunction for every CUDA kernel of the store: nvrtc =\n"
    "                  compile the recorded source in process (sources under --manifest DIR),\n"
    "                  ptx = driver JIT of the stored PTX, cubin = the stored cubin (default)\n"
    "  --launch        then run saxpy once and check its result\n"
    "  --list          print the cubin or PTX kcache_lookup_cuda picks at compute capability --cc\n";

std::optional<Args> parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (s == "-h" || s == "--help") {
      std::fputs(k_usage, stdout);
      std::exit(0);
    } else if (s == "--store") {
      if (!value(a.store)) return std::nullopt;
    } else if (s == "--file") {
      if (!value(a.file)) return std::nullopt;
    } else if (s == "--device") {
      if (!value(a.device)) return std::nullopt;
    } else if (s == "--target") {
      if (!value(a.target)) return std::nullopt;
    } else if (s == "--cuda") {
      a.cuda = true;
    } else if (s == "--manifest") {
      if (!value(a.cuda_args.manifest_dir)) return std::nullopt;
    } else if (s == "--launch") {
      a.cuda_args.launch = true;
    } else if (s == "--list") {
      a.cuda_args.list = true;
    } else if (s == "--cc") {
      std::string cc;
      if (!value(cc) || std::sscanf(cc.c_str(), "%d.%d", &a.cuda_args.cc_major, &a.cuda_args.cc_minor) != 2)
        return std::nullopt;
    } else if (s == "--cuda-device") {
      std::string n;
      if (!value(n)) return std::nullopt;
      a.cuda_args.device = std::atoi(n.c_str());
    } else if (s == "--startup") {
      if (!value(a.startup)) return std::nullopt;
    } else if (s == "--threads") {
      std::string n;
      if (!value(n)) return std::nullopt;
      char* end = nullptr;
      const unsigned long v = std::strtoul(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v < 1 || v > 256) return std::nullopt;
      a.threads = static_cast<unsigned>(v);
    } else if (s == "--trusted") {
      a.open_flags = KCACHE_OPEN_TRUSTED;
    } else if (s == "--lookups-first") {
      a.lookups_first = true;
    } else if (s == "--caches") {
      if (!value(a.caches) || (a.caches != "kernel" && a.caches != "kernel-sync" && a.caches != "thread"))
        return std::nullopt;
    } else if (s == "--modules") {
      if (!value(a.modules) || (a.modules != "objects" && a.modules != "inline" && a.modules != "identifier"))
        return std::nullopt;
    } else if (s == "--lookups") {
      std::string n;
      if (!value(n)) return std::nullopt;
      char* end = nullptr;
      const unsigned long v = std::strtoul(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v < 1 || v > 1000000) return std::nullopt;
      a.lookups = static_cast<unsigned>(v);
    } else if (s.starts_with("-")) {
      return std::nullopt;
    } else {
      a.kernels.push_back(s);
    }
  }
  return a;
}

ModuleMode module_mode(const std::string& name) {
  return name == "inline"       ? ModuleMode::inline_info
         : name == "identifier" ? ModuleMode::identifier
                                : ModuleMode::objects;
}

}  // namespace bench_start
