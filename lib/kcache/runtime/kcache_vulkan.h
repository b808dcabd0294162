/* kcache_vulkan.h: fills a kcache_device from a Vulkan physical device, the
 * way `kcache devices` does. Header-only, so libkcache itself never links
 * Vulkan; include it where the application already uses the Vulkan headers.
 * Driver properties (driverID, driverInfo) are read on a device of API
 * version 1.2 or later, as kcache reads them. Thread-safety: as the Vulkan
 * calls it makes (vkGetPhysicalDeviceProperties2 is safe on any thread). */
#ifndef KCACHE_RUNTIME_KCACHE_VULKAN_H
#define KCACHE_RUNTIME_KCACHE_VULKAN_H

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

#endif /* KCACHE_RUNTIME_KCACHE_VULKAN_H */
