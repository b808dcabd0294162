// Loading Vulkan at run time and enumerating devices (see device.hpp,
// "Loading"). volk provides the function pointers; we do the dlopen ourselves
// so use_vulkan_loader can pick the library and a failure can say why.
#include "kcache/device/vulkan_internal.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace kcache::device::detail {
namespace {

constexpr std::string_view k_install_hint =
    "install a Vulkan loader and driver, e.g. on Debian: apt install libvulkan1 mesa-vulkan-drivers "
    "(mesa-vulkan-drivers includes lavapipe, a software device)";
constexpr std::string_view k_driver_hint =
    "install a Vulkan driver, e.g. on Debian: apt install mesa-vulkan-drivers (includes lavapipe, a software "
    "device), or your GPU vendor's driver";

std::mutex g_mutex;
Runtime* g_runtime = nullptr;  // guarded by g_mutex; never freed (see Runtime)
std::string g_loader;          // guarded by g_mutex: use_vulkan_loader's; empty = the default names

struct Loaded {
  void* handle = nullptr;
  std::string path;
};

/// Loads the named loader, else the default names. Called with g_mutex held.
Result<Loaded> load_library() {
  const std::string& named = g_loader;
  std::vector<std::string> candidates;
  if (!named.empty()) candidates.push_back(named);
  else candidates = {"libvulkan.so.1", "libvulkan.so"};
  std::string errors;
  for (const auto& path : candidates) {
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return Loaded{h, path};
    const char* why = dlerror();
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", why ? why : path.c_str());
  }
  if (!named.empty())
    return fail(Category::device_unavailable,
                "no Vulkan loader: cannot load '{}' named by KCACHE_VULKAN_LOADER ({}); unset it or {}", named, errors,
                k_install_hint);
  return fail(Category::device_unavailable, "no Vulkan loader ({}); {}", errors, k_install_hint);
}

Result<void> create_instance(Runtime& rt) {
  const std::uint32_t loader_version = volkGetInstanceVersion();
  if (loader_version == 0)
    return fail(Category::device_unavailable, "'{}' is not a usable Vulkan loader (no vkCreateInstance); {}",
                rt.library, k_install_hint);
  // A 1.1+ loader accepts any apiVersion; ask for the newest this build knows.
  rt.api_version = loader_version >= VK_API_VERSION_1_1 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_0;

  std::uint32_t count = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> available(count);
  vkEnumerateInstanceExtensionProperties(nullptr, &count, available.data());
  std::vector<const char*> extensions;
  VkInstanceCreateFlags flags = 0;
  for (const auto& e : available) {
    // Lists portability (layered) implementations such as MoltenVK too.
    if (std::strcmp(e.extensionName, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME) == 0) {
      extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
      flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kcache";
  app.applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0);
  app.pEngineName = "kcache";
  app.apiVersion = rt.api_version;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkInstance instance = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&info, nullptr, &instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return fail(Category::device_unavailable, "no Vulkan driver (vkCreateInstance: {}); {}", result_name(r),
                k_driver_hint);
  if (r != VK_SUCCESS) return fail(Category::device_unavailable, "vkCreateInstance failed: {}", result_name(r));
  rt.instance = instance;
  volkLoadInstanceOnly(instance);
  return {};
}

DeviceType to_type(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceType::integrated_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceType::discrete_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return DeviceType::virtual_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceType::cpu;
    default: return DeviceType::other;
  }
}

template <std::size_t N>
std::string fixed_string(const char (&s)[N]) {
  return std::string(s, strnlen(s, N));
}

PhysicalDevice query(const Runtime& rt, VkPhysicalDevice handle, std::uint32_t index) {
  PhysicalDevice pd;
  pd.handle = handle;

  std::uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(handle, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> exts(count);
  vkEnumerateDeviceExtensionProperties(handle, nullptr, &count, exts.data());
  exts.resize(count);
  for (const auto& e : exts) pd.extensions.push_back(fixed_string(e.extensionName));

  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(handle, &props);
  pd.api = std::min(props.apiVersion, rt.api_version);
  pd.limits = props.limits;

  DeviceInfo& info = pd.info;
  info.index = index;
  info.name = fixed_string(props.deviceName);
  info.type = to_type(props.deviceType);
  info.api_version = props.apiVersion;
  info.driver_version = props.driverVersion;
  info.vendor_id = props.vendorID;
  info.device_id = props.deviceID;
  std::copy(std::begin(props.pipelineCacheUUID), std::end(props.pipelineCacheUUID), info.pipeline_cache_uuid.begin());

  if (pd.api >= VK_API_VERSION_1_1) {
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    props2.pNext = &id;
    id.pNext = &subgroup;
    const bool has_driver = pd.api >= VK_API_VERSION_1_2 || pd.has_extension(VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    if (has_driver) subgroup.pNext = &driver;
    vkGetPhysicalDeviceProperties2(handle, &props2);
    std::copy(std::begin(id.deviceUUID), std::end(id.deviceUUID), info.device_uuid.begin());
    std::copy(std::begin(id.driverUUID), std::end(id.driverUUID), info.driver_uuid.begin());
    subgroup.pNext = nullptr;
    pd.subgroup = subgroup;
    if (has_driver) {
      info.driver_id = static_cast<std::uint32_t>(driver.driverID);
      info.driver_name = fixed_string(driver.driverName);
      info.driver_info = fixed_string(driver.driverInfo);
    }

    FeatureChain chain(pd.api, pd.has_extension(VK_EXT_PIPELINE_CREATION_CACHE_CONTROL_EXTENSION_NAME));
    vkGetPhysicalDeviceFeatures2(handle, chain.head());
    chain.store(pd.supported);
  } else {
    vkGetPhysicalDeviceFeatures(handle, &pd.supported.core);
  }
  info.fail_on_compile_required = pd.supported.v13.pipelineCreationCacheControl == VK_TRUE;
  info.seal_fingerprint();
  return pd;
}

}  // namespace

Result<const Runtime*> runtime() {
  std::lock_guard lock(g_mutex);
  if (g_runtime) {
    // The loader is process-wide; still honour a loader named since that is
    // another library, so "no loader" can be simulated at any time.
    const std::string& env = g_loader;
    if (env.empty() || g_runtime->library == env) return g_runtime;
    auto loaded = KCACHE_TRY(load_library());
    const bool same = loaded.handle == g_runtime->handle;
    dlclose(loaded.handle);  // drops only the reference taken just now
    if (same) return g_runtime;
    return fail(Category::device_unavailable,
                "KCACHE_VULKAN_LOADER names '{}' but this process already uses the Vulkan loader '{}'", env,
                g_runtime->library);
  }

  auto loaded = KCACHE_TRY(load_library());
  auto get_proc = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(loaded.handle, "vkGetInstanceProcAddr"));
  if (!get_proc) {
    dlclose(loaded.handle);
    return fail(Category::device_unavailable, "'{}' is not a Vulkan loader (no vkGetInstanceProcAddr); {}", loaded.path,
                k_install_hint);
  }
  volkInitializeCustom(get_proc);
  auto rt = std::make_unique<Runtime>();
  rt->library = loaded.path;
  rt->handle = loaded.handle;
  if (auto created = create_instance(*rt); !created) {
    // Keep the library loaded: volk's global pointers now point into it.
    return tl::unexpected(std::move(created).error());
  }
  g_runtime = rt.release();
  return g_runtime;
}

FeatureChain::FeatureChain(std::uint32_t api, bool ext_cache_control)
    : m_api(api), m_ext_cache_control(ext_cache_control) {
  m_features2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  m_v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  m_v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  m_v13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
  m_storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  m_variable_pointers.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES;
  m_cache_control.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_CREATION_CACHE_CONTROL_FEATURES;

  // Only structs the device's API version (or an offered extension) defines
  // may appear in the chain.
  void** next = &m_features2.pNext;
  auto link = [&next](auto& s) {
    *next = &s;
    next = &s.pNext;
  };
  if (api >= VK_API_VERSION_1_2) {
    link(m_v11);
    link(m_v12);
  } else if (api >= VK_API_VERSION_1_1) {
    link(m_storage16);
    link(m_variable_pointers);
  }
  if (api >= VK_API_VERSION_1_3) link(m_v13);
  else if (ext_cache_control) link(m_cache_control);
}

void FeatureChain::store(FeatureSet& out) const {
  out.core = m_features2.features;
  if (m_api >= VK_API_VERSION_1_2) {
    out.v11 = m_v11;
    out.v12 = m_v12;
  } else if (m_api >= VK_API_VERSION_1_1) {
    out.v11.storageBuffer16BitAccess = m_storage16.storageBuffer16BitAccess;
    out.v11.uniformAndStorageBuffer16BitAccess = m_storage16.uniformAndStorageBuffer16BitAccess;
    out.v11.storagePushConstant16 = m_storage16.storagePushConstant16;
    out.v11.variablePointersStorageBuffer = m_variable_pointers.variablePointersStorageBuffer;
    out.v11.variablePointers = m_variable_pointers.variablePointers;
  }
  if (m_api >= VK_API_VERSION_1_3) out.v13 = m_v13;
  else if (m_ext_cache_control) out.v13.pipelineCreationCacheControl = m_cache_control.pipelineCreationCacheControl;
  out.v11.pNext = out.v12.pNext = out.v13.pNext = nullptr;
}

void FeatureChain::load(const FeatureSet& in) {
  m_features2.features = in.core;
  // Copy field values but keep this chain's sType/pNext links.
  auto copy_keep_links = [](auto& dst, const auto& src) {
    auto type = dst.sType;
    void* next = dst.pNext;
    dst = src;
    dst.sType = type;
    dst.pNext = next;
  };
  copy_keep_links(m_v11, in.v11);
  copy_keep_links(m_v12, in.v12);
  copy_keep_links(m_v13, in.v13);
  m_storage16.storageBuffer16BitAccess = in.v11.storageBuffer16BitAccess;
  m_storage16.uniformAndStorageBuffer16BitAccess = in.v11.uniformAndStorageBuffer16BitAccess;
  m_storage16.storagePushConstant16 = in.v11.storagePushConstant16;
  m_variable_pointers.variablePointersStorageBuffer = in.v11.variablePointersStorageBuffer;
  m_variable_pointers.variablePointers = in.v11.variablePointers;
  m_cache_control.pipelineCreationCacheControl = in.v13.pipelineCreationCacheControl;
}

bool PhysicalDevice::has_extension(std::string_view name) const {
  return std::find(extensions.begin(), extensions.end(), name) != extensions.end();
}

Result<std::vector<PhysicalDevice>> enumerate_physical_devices() {
  const Runtime* rt = KCACHE_TRY(runtime());
  std::uint32_t count = 0;
  VkResult r = vkEnumeratePhysicalDevices(rt->instance, &count, nullptr);
  std::vector<VkPhysicalDevice> handles(count);
  if (r == VK_SUCCESS && count > 0) r = vkEnumeratePhysicalDevices(rt->instance, &count, handles.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE)
    return fail(Category::device_unavailable, "vkEnumeratePhysicalDevices failed: {}", result_name(r));
  handles.resize(count);
  if (handles.empty())
    return fail(Category::device_unavailable, "the Vulkan loader '{}' found no device; {}", rt->library, k_driver_hint);
  std::vector<PhysicalDevice> out;
  out.reserve(handles.size());
  for (std::uint32_t i = 0; i < handles.size(); ++i) out.push_back(query(*rt, handles[i], i));
  return out;
}

std::string result_name(VkResult result) {
  switch (result) {
#define KCACHE_RESULT(name) \
  case name: return #name;
    KCACHE_RESULT(VK_SUCCESS)
    KCACHE_RESULT(VK_NOT_READY)
    KCACHE_RESULT(VK_TIMEOUT)
    KCACHE_RESULT(VK_INCOMPLETE)
    KCACHE_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    KCACHE_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    KCACHE_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    KCACHE_RESULT(VK_ERROR_DEVICE_LOST)
    KCACHE_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    KCACHE_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    KCACHE_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    KCACHE_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    KCACHE_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    KCACHE_RESULT(VK_ERROR_UNKNOWN)
    KCACHE_RESULT(VK_ERROR_INVALID_SHADER_NV)
    KCACHE_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef KCACHE_RESULT
    default: break;
  }
  return fmt::format("VkResult({})", static_cast<int>(result));
}

}  // namespace kcache::device::detail

namespace kcache::device {

void use_vulkan_loader(std::string path) {
  std::lock_guard lock(detail::g_mutex);
  detail::g_loader = std::move(path);
}

bool disable_driver_disk_caches() {
  setenv("__GL_SHADER_DISK_CACHE", "0", /*overwrite=*/0);
  setenv("MESA_SHADER_CACHE_DISABLE", "true", 0);
  std::lock_guard lock(detail::g_mutex);
  return detail::g_runtime == nullptr;
}

Result<std::vector<DeviceInfo>> list_devices() {
  auto physical = KCACHE_TRY(detail::enumerate_physical_devices());
  std::vector<DeviceInfo> out;
  out.reserve(physical.size());
  for (auto& pd : physical) out.push_back(std::move(pd.info));
  return out;
}

}  // namespace kcache::device
