/* kcache_vulkan.h: fills a kcache_device from a Vulkan physical device, the
 * way `kcache devices` does, picks a physical device by kcache's rule for
 * `--device`, and makes a thread's pipeline cache from a deployment file. Header-only, so libkcache itself never links
 * Vulkan; include it where the application already uses the Vulkan headers.
 * Driver properties (driverID, driverInfo) are read on a device of API
 * version 1.2 or later, as kcache reads them. Thread-safety: as the Vulkan
 * calls it makes (vkGetPhysicalDeviceProperties2 is safe on any thread). */
#ifndef KCACHE_RUNTIME_KCACHE_VULKAN_H
#define KCACHE_RUNTIME_KCACHE_VULKAN_H

#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "kcache/runtime/kcache.h"

/** Fills *out for `physical_device`; `get_properties2` is the application's
 *  vkGetPhysicalDeviceProperties2 (Vulkan 1.1 instance). */
static inline void kcache_device_from_vulkan(VkPhysicalDevice physical_device,
                                             PFN_vkGetPhysicalDeviceProperties2 get_properties2, kcache_device* out) {
  VkPhysicalDeviceDriverProperties driver;
  VkPhysicalDeviceIDProperties id;
  VkPhysicalDeviceProperties2 props;
  memset(out, 0, sizeof *out);
  memset(&driver, 0, sizeof driver);
  memset(&id, 0, sizeof id);
  memset(&props, 0, sizeof props);
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  id.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &id;
  get_properties2(physical_device, &props); /* first: which API version the device has */
  if (props.properties.apiVersion >= VK_API_VERSION_1_2) {
    id.pNext = &driver;
    get_properties2(physical_device, &props);
    out->driver_id = (uint32_t)driver.driverID;
    memcpy(out->driver_info, driver.driverInfo, sizeof out->driver_info - 1);
  }
  out->vendor_id = props.properties.vendorID;
  out->device_id = props.properties.deviceID;
  out->driver_version = props.properties.driverVersion;
  memcpy(out->pipeline_cache_uuid, props.properties.pipelineCacheUUID, 16);
  memcpy(out->device_uuid, id.deviceUUID, 16);
  memcpy(out->driver_uuid, id.driverUUID, 16);
}

/** Picks the physical device `selector` names among `instance`'s, by
 *  kcache_select_device's rule (NULL or "": a GPU before a CPU device; a
 *  number: that index; else the one device whose name contains it or whose
 *  fingerprint id starts with it), and stores it in *out. Returns
 *  kcache_select_device's status (kcache_last_error() says which devices
 *  there are), or KCACHE_ERROR_INTERNAL when memory runs out or the
 *  enumeration fails. `enumerate` and `get_properties2` are the
 *  application's vkEnumeratePhysicalDevices and
 *  vkGetPhysicalDeviceProperties2. Whether the device suits the
 *  application (its API version, queues) is the application's check. */
static inline kcache_status kcache_vulkan_select_device(VkInstance instance, PFN_vkEnumeratePhysicalDevices enumerate,
                                                        PFN_vkGetPhysicalDeviceProperties2 get_properties2,
                                                        const char* selector, VkPhysicalDevice* out) {
  uint32_t count = 0;
  VkPhysicalDevice* physical = NULL;
  VkPhysicalDeviceProperties2* props = NULL;
  kcache_device_candidate* candidates = NULL;
  size_t chosen = 0;
  kcache_status status = KCACHE_ERROR_INTERNAL;
  uint32_t i;
  if (enumerate(instance, &count, NULL) < 0) return KCACHE_ERROR_INTERNAL;
  if (count > 0) {
    physical = (VkPhysicalDevice*)calloc(count, sizeof *physical);
    props = (VkPhysicalDeviceProperties2*)calloc(count, sizeof *props);
    candidates = (kcache_device_candidate*)calloc(count, sizeof *candidates);
    if (!physical || !props || !candidates || enumerate(instance, &count, physical) < 0) goto done;
  }
  for (i = 0; i < count; ++i) {
    props[i].sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    get_properties2(physical[i], &props[i]);
    kcache_device_from_vulkan(physical[i], get_properties2, &candidates[i].device);
    candidates[i].name = props[i].properties.deviceName;
    candidates[i].device_type = (uint32_t)props[i].properties.deviceType;
  }
  status = kcache_select_device(selector, candidates, count, &chosen);
  if (status == KCACHE_OK) *out = physical[chosen];
done:
  free(candidates);
  free(props);
  free(physical);
  return status;
}

/** Creates a VkPipelineCache for one application thread from the merged
 *  pipeline cache a deployment file carries for `device`
 *  (kcache_file_pipeline_cache), or an empty one when the file has none for
 *  it: call it once per thread that creates pipelines, so that threads do
 *  not contend on one cache's lock and every pipeline of the file is still a
 *  hit. `create` is the application's vkCreatePipelineCache. Returns the
 *  driver's VkResult; *served says whether the merged cache was used (may
 *  be NULL). */
static inline VkResult kcache_vulkan_create_thread_cache(VkDevice vk_device, PFN_vkCreatePipelineCache create,
                                                         kcache_store* store, const kcache_device* device,
                                                         VkPipelineCache* out, int* served) {
  const uint8_t* data = NULL;
  size_t bytes = 0;
  VkPipelineCacheCreateInfo info;
  memset(&info, 0, sizeof info);
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  if (kcache_file_pipeline_cache(store, device, &data, &bytes) == KCACHE_OK) {
    info.initialDataSize = bytes;
    info.pInitialData = data;
  }
  if (served) *served = info.initialDataSize != 0;
  return create(vk_device, &info, NULL, out);
}

#endif /* KCACHE_RUNTIME_KCACHE_VULKAN_H */
