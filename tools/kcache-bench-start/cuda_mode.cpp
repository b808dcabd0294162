// kcache-bench-start --cuda: an application's start with CUDA kernels, three ways
// to get a CUfunction for every CUDA kernel of a store (kcache's runtime API
// gives the cubin, PTX or the recorded compile inputs; the application loads
// libcuda and NVRTC itself with dlopen, as many do):
//   nvrtc  compile the kernel's source in process with NVRTC for the device's
//          arch (source, entry, defines, include dirs and options as the
//          entry records them; --manifest DIR is the manifest's folder), then
//          cuModuleLoadData of the cubin NVRTC made: what an application
//          without kcache pays on every cold start;
//   ptx    cuModuleLoadData of the stored PTX (compute_XY): the driver JIT;
//   cubin  cuModuleLoadData of the stored cubin for the device's arch.
// One line per run, parseable like the Vulkan --startup lines:
//   cuda-startup mode=cubin kernels=11 failed=0 wall_ms=... lookup_sum_ms=...
//   compile_sum_ms=... load_sum_ms=... context_ms=...
// wall_ms runs from store open (the CUDA context already made; context_ms is
// its cost, apart) to the last function. --launch then runs saxpy once and
// checks y = a*x + y (cuMemAlloc, cuLaunchKernel): proof the code runs.
// --list --cc X.Y prints what kcache_lookup_cuda picks for each kernel and
// needs no GPU.
#include "cuda_mode.hpp"

#include "kcache/runtime/kcache.h"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUdeviceptr = unsigned long long;

struct Cuda {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, std::size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, std::size_t);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                             void**, void**);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuGetErrorName)(CUresult, const char**);
};

struct Nvrtc {
  int (*create)(void**, const char*, const char*, int, const char* const*, const char* const*);
  int (*add_name)(void*, const char*);
  int (*compile)(void*, int, const char* const*);
  int (*log_size)(void*, std::size_t*);
  int (*log)(void*, char*);
  int (*cubin_size)(void*, std::size_t*);
  int (*cubin)(void*, char*);
  int (*lowered)(void*, const char*, const char**);
  int (*destroy)(void**);
};

template <typename F>
bool sym(void* h, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(h, name));
  if (!f) std::fprintf(stderr, "kcache-bench-start: %s lacks %s\n", "library", name);
  return f != nullptr;
}

bool load_cuda(Cuda& c) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "kcache-bench-start: no CUDA driver: %s\n", dlerror());
    return false;
  }
  return sym(h, c.cuInit, "cuInit") && sym(h, c.cuDeviceGet, "cuDeviceGet") &&
         sym(h, c.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
         sym(h, c.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
         sym(h, c.cuCtxSetCurrent, "cuCtxSetCurrent") && sym(h, c.cuModuleLoadData, "cuModuleLoadData") &&
         sym(h, c.cuModuleGetFunction, "cuModuleGetFunction") && sym(h, c.cuMemAlloc, "cuMemAlloc_v2") &&
         sym(h, c.cuMemcpyHtoD, "cuMemcpyHtoD_v2") && sym(h, c.cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
         sym(h, c.cuLaunchKernel, "cuLaunchKernel") && sym(h, c.cuCtxSynchronize, "cuCtxSynchronize") &&
         sym(h, c.cuGetErrorName, "cuGetErrorName");
}

bool load_nvrtc(Nvrtc& n) {
  void* h = nullptr;
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
    if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  if (!h) {
    std::fprintf(stderr, "kcache-bench-start: no NVRTC: %s\n", dlerror());
    return false;
  }
  return sym(h, n.create, "nvrtcCreateProgram") && sym(h, n.add_name, "nvrtcAddNameExpression") &&
         sym(h, n.compile, "nvrtcCompileProgram") && sym(h, n.log_size, "nvrtcGetProgramLogSize") &&
         sym(h, n.log, "nvrtcGetProgramLog") && sym(h, n.cubin_size, "nvrtcGetCUBINSize") &&
         sym(h, n.cubin, "nvrtcGetCUBIN") && sym(h, n.lowered, "nvrtcGetLoweredName") &&
         sym(h, n.destroy, "nvrtcDestroyProgram");
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

std::string cu_error(const Cuda& c, CUresult r) {
  const char* name = nullptr;
  if (c.cuGetErrorName && c.cuGetErrorName(r, &name) == 0 && name) return name;
  return "CUDA error " + std::to_string(r);
}

int collect(const char* name, void* user) {
  static_cast<std::vector<std::string>*>(user)->emplace_back(name);
  return 0;
}

// NVRTC, from the inputs the entry records. Returns the cubin and the
// function's (lowered) name, or false with the log printed.
bool nvrtc_compile(const Nvrtc& n, const kcache_kernel* k, const std::string& manifest_dir, int major, int minor,
                   std::vector<char>& cubin, std::string& symbol) {
  const char* source = kcache_kernel_id_field(k, "source");
  const char* entry = kcache_kernel_id_field(k, "entry");
  if (!source || !entry) {
    std::fprintf(stderr, "kcache-bench-start: %s records no source/entry\n", kcache_kernel_name(k));
    return false;
  }
  const std::string path = manifest_dir + "/" + source;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "kcache-bench-start: cannot read %s (pass --manifest DIR)\n", path.c_str());
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> options = {"--gpu-architecture=sm_" + std::to_string(major * 10 + minor)};
  const std::string dir = path.substr(0, path.rfind('/'));
  options.push_back("-I" + dir);
  for (int i = 0;; ++i) {
    const char* inc = kcache_kernel_id_field(k, ("include_dir:" + std::to_string(i)).c_str());
    if (!inc) break;
    options.push_back("-I" + manifest_dir + "/" + inc);
  }
  for (int i = 0;; ++i) {
    const char* o = kcache_kernel_id_field(k, ("nvrtc_option:" + std::to_string(i)).c_str());
    if (!o) break;
    options.push_back(o);
  }
  // Defines: every "define:NAME" field (the variant values among them).
  for (std::size_t i = 0; const char* field = kcache_kernel_id_field_name(k, i); ++i)
    if (std::strncmp(field, "define:", 7) == 0)
      options.push_back(std::string("-D") + (field + 7) + "=" + kcache_kernel_id_field(k, field));
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  void* prog = nullptr;
  const std::string src = text.str();
  if (n.create(&prog, src.c_str(), source, 0, nullptr, nullptr) != 0) return false;
  n.add_name(prog, entry);
  const int rc = n.compile(prog, static_cast<int>(argv.size()), argv.data());
  bool ok = rc == 0;
  if (!ok) {
    std::size_t size = 0;
    n.log_size(prog, &size);
    std::string log(size, '\0');
    n.log(prog, log.data());
    std::fprintf(stderr, "kcache-bench-start: NVRTC failed on %s:\n%s\n", kcache_kernel_name(k), log.c_str());
  } else {
    std::size_t size = 0;
    n.cubin_size(prog, &size);
    cubin.resize(size);
    n.cubin(prog, cubin.data());
    const char* lowered = nullptr;
    symbol = n.lowered(prog, entry, &lowered) == 0 && lowered ? lowered : entry;
  }
  n.destroy(&prog);
  return ok;
}

bool launch_saxpy(const Cuda& c, CUfunction fn) {
  const int count = 1 << 20;
  std::vector<float> x(count), y(count), out(count);
  for (int i = 0; i < count; ++i) x[i] = static_cast<float>(i % 1000), y[i] = 1.0f;
  CUdeviceptr dx = 0, dy = 0;
  const std::size_t bytes = count * sizeof(float);
  if (c.cuMemAlloc(&dx, bytes) || c.cuMemAlloc(&dy, bytes) || c.cuMemcpyHtoD(dx, x.data(), bytes) ||
      c.cuMemcpyHtoD(dy, y.data(), bytes))
    return false;
  float a = 2.0f;
  int n = count;
  void* params[] = {&a, &dx, &dy, &n};
  if (CUresult r = c.cuLaunchKernel(fn, (count + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr); r) {
    std::fprintf(stderr, "kcache-bench-start: cuLaunchKernel: %s\n", cu_error(c, r).c_str());
    return false;
  }
  if (c.cuCtxSynchronize() || c.cuMemcpyDtoH(out.data(), dy, bytes)) return false;
  for (int i = 0; i < count; ++i)
    if (std::fabs(out[i] - (a * x[i] + y[i])) > 1e-3f) {
      std::fprintf(stderr, "kcache-bench-start: saxpy wrong at %d: %g, not %g\n", i, out[i], a * x[i] + y[i]);
      return false;
    }
  return true;
}

}  // namespace

int run_cuda(const CudaArgs& args) {
  std::vector<std::string> names;
  if (args.list) {
    kcache_store* store = nullptr;
    if (kcache_store_open(args.store.empty() ? nullptr : args.store.c_str(), &store) != KCACHE_OK) {
      std::fprintf(stderr, "kcache-bench-start: %s\n", kcache_last_error());
      return 3;
    }
    kcache_list_cuda_kernels(store, collect, &names);
    int failed = 0;
    for (const auto& name : names) {
      kcache_kernel* k = nullptr;
      if (kcache_lookup_cuda(store, name.c_str(), args.cc_major, args.cc_minor, &k) != KCACHE_OK) {
        std::printf("%s: none (%s)\n", name.c_str(), kcache_last_error());
        ++failed;
        continue;
      }
      std::size_t bytes = 0;
      kcache_kernel_payload(k, &bytes);
      std::printf("%s: %s %s %zu bytes symbol %s\n", name.c_str(), kcache_kernel_target(k),
                  kcache_kernel_payload_kind(k) == KCACHE_PAYLOAD_CUBIN ? "cubin" : "ptx", bytes,
                  kcache_kernel_function_symbol(k));
      kcache_kernel_free(k);
    }
    kcache_store_close(store);
    return failed ? 1 : 0;
  }

  Cuda c{};
  if (!load_cuda(c)) return 3;
  Nvrtc nv{};
  if (args.startup == "nvrtc" && !load_nvrtc(nv)) return 3;
  const auto t_context = std::chrono::steady_clock::now();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  int major = 0, minor = 0;
  if (CUresult r = c.cuInit(0); r) {
    std::fprintf(stderr, "kcache-bench-start: cuInit: %s\n", cu_error(c, r).c_str());
    return 3;
  }
  if (c.cuDeviceGet(&dev, args.device) || c.cuDeviceGetAttribute(&major, 75, dev) ||
      c.cuDeviceGetAttribute(&minor, 76, dev) || c.cuDevicePrimaryCtxRetain(&ctx, dev) || c.cuCtxSetCurrent(ctx)) {
    std::fprintf(stderr, "kcache-bench-start: no CUDA device %d\n", args.device);
    return 3;
  }
  const double context_ms = ms_since(t_context);

  const auto start = std::chrono::steady_clock::now();
  kcache_store* store = nullptr;
  if (kcache_store_open(args.store.empty() ? nullptr : args.store.c_str(), &store) != KCACHE_OK) {
    std::fprintf(stderr, "kcache-bench-start: %s\n", kcache_last_error());
    return 3;
  }
  kcache_list_cuda_kernels(store, collect, &names);
  double lookup_ms = 0, compile_ms = 0, load_ms = 0;
  std::size_t failed = 0, loaded = 0;
  CUfunction saxpy = nullptr;
  for (const auto& name : names) {
    auto t = std::chrono::steady_clock::now();
    kcache_kernel* k = nullptr;
    // ptx: ask as a device newer than any cubin, so the PTX is what comes back.
    const int ask_major = args.startup == "ptx" ? 99 : major, ask_minor = args.startup == "ptx" ? 9 : minor;
    const kcache_status s = kcache_lookup_cuda(store, name.c_str(), ask_major, ask_minor, &k);
    lookup_ms += ms_since(t);
    if (s != KCACHE_OK) {
      // A kernel with no PTX in ptx mode is not counted: the mode measures PTX.
      if (args.startup != "ptx") {
        std::fprintf(stderr, "kcache-bench-start: %s: %s\n", name.c_str(), kcache_last_error());
        ++failed;
      }
      continue;
    }
    std::vector<char> compiled;
    std::string symbol = kcache_kernel_function_symbol(k);
    const void* image = kcache_kernel_payload(k, nullptr);
    if (args.startup == "nvrtc") {
      t = std::chrono::steady_clock::now();
      const bool ok = nvrtc_compile(nv, k, args.manifest_dir, major, minor, compiled, symbol);
      compile_ms += ms_since(t);
      if (!ok) {
        ++failed;
        kcache_kernel_free(k);
        continue;
      }
      image = compiled.data();
    }
    t = std::chrono::steady_clock::now();
    CUmodule module = nullptr;
    CUfunction fn = nullptr;
    CUresult r = c.cuModuleLoadData(&module, image);
    if (!r) r = c.cuModuleGetFunction(&fn, module, symbol.c_str());
    load_ms += ms_since(t);
    if (r) {
      std::fprintf(stderr, "kcache-bench-start: %s: %s\n", name.c_str(), cu_error(c, r).c_str());
      ++failed;
    } else {
      ++loaded;
      if (name == "saxpy") saxpy = fn;
    }
    kcache_kernel_free(k);
  }
  const double wall_ms = ms_since(start);
  kcache_store_close(store);
  std::printf(
      "cuda-startup mode=%s kernels=%zu failed=%zu wall_ms=%.3f lookup_sum_ms=%.3f compile_sum_ms=%.3f "
      "load_sum_ms=%.3f context_ms=%.3f cc=%d.%d\n",
      args.startup.c_str(), loaded, failed, wall_ms, lookup_ms, compile_ms, load_ms, context_ms, major, minor);
  if (args.launch) {
    if (!saxpy) {
      std::fprintf(stderr, "kcache-bench-start: --launch: no saxpy kernel was loaded\n");
      return 1;
    }
    const bool ok = launch_saxpy(c, saxpy);
    std::printf("cuda-launch mode=%s kernel=saxpy result=%s\n", args.startup.c_str(), ok ? "ok" : "WRONG");
    if (!ok) return 1;
  }
  return failed ? 1 : 0;
}
