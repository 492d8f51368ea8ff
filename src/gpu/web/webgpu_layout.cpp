// The wasm32 layout of every webgpu.h struct field and the value of every enum that the JavaScript
// implementation of webgpu.h (webgpu.js) reads or writes, computed by the compiler from the very header the
// engine is compiled against. webgpu.js parses this table once and looks every field up by name, so it never
// hard-codes an offset or an enum number; a field it asks for that is missing here is an error, not a guess.
// Feature numbers come from gpu/webgpu_abi.h (the numbering src/gpu/ actually passes), not from the header's
// WGPUFeatureName, so the browser build decodes features exactly as the native build does.
#include <emscripten/emscripten.h>
#include <webgpu/webgpu.h>

#include <cstddef>
#include <string>

#include "gpu/webgpu_abi.h"

namespace {

std::string build_table() {
  std::string t;
  auto field = [&t](const char* name, size_t offset, size_t size) {
    t += name;
    t += '=';
    t += std::to_string(offset);
    t += ':';
    t += std::to_string(size);
    t += ';';
  };
  auto value = [&t](const char* name, unsigned long long v) {
    t += name;
    t += '=';
    t += std::to_string(v);
    t += ';';
  };
#define WGI_FIELD(S, f) field(#S "." #f, offsetof(S, f), sizeof(S::f))
#define WGI_SIZE(S) value("sizeof." #S, sizeof(S))
#define WGI_ENUM(E) value(#E, static_cast<unsigned long long>(E))

  WGI_FIELD(WGPUStringView, data);
  WGI_FIELD(WGPUStringView, length);
  WGI_SIZE(WGPUStringView);
  WGI_FIELD(WGPUChainedStruct, next);
  WGI_FIELD(WGPUChainedStruct, sType);

  WGI_FIELD(WGPURequestAdapterOptions, featureLevel);
  WGI_FIELD(WGPURequestAdapterOptions, powerPreference);
  WGI_FIELD(WGPURequestAdapterOptions, forceFallbackAdapter);
  WGI_FIELD(WGPURequestAdapterOptions, backendType);

  // Callback infos share one shape for the fields read here (callback, userdata1, userdata2).
  WGI_FIELD(WGPURequestAdapterCallbackInfo, callback);
  WGI_FIELD(WGPURequestAdapterCallbackInfo, userdata1);
  WGI_FIELD(WGPURequestAdapterCallbackInfo, userdata2);
  WGI_FIELD(WGPURequestDeviceCallbackInfo, callback);
  WGI_FIELD(WGPURequestDeviceCallbackInfo, userdata1);
  WGI_FIELD(WGPURequestDeviceCallbackInfo, userdata2);
  WGI_FIELD(WGPUDeviceLostCallbackInfo, callback);
  WGI_FIELD(WGPUDeviceLostCallbackInfo, userdata1);
  WGI_FIELD(WGPUDeviceLostCallbackInfo, userdata2);
  WGI_FIELD(WGPUUncapturedErrorCallbackInfo, callback);
  WGI_FIELD(WGPUUncapturedErrorCallbackInfo, userdata1);
  WGI_FIELD(WGPUUncapturedErrorCallbackInfo, userdata2);
  WGI_FIELD(WGPUBufferMapCallbackInfo, callback);
  WGI_FIELD(WGPUBufferMapCallbackInfo, userdata1);
  WGI_FIELD(WGPUBufferMapCallbackInfo, userdata2);
  WGI_FIELD(WGPUCompilationInfoCallbackInfo, callback);
  WGI_FIELD(WGPUCompilationInfoCallbackInfo, userdata1);
  WGI_FIELD(WGPUCompilationInfoCallbackInfo, userdata2);
  WGI_FIELD(WGPUCreateComputePipelineAsyncCallbackInfo, callback);
  WGI_FIELD(WGPUCreateComputePipelineAsyncCallbackInfo, userdata1);
  WGI_FIELD(WGPUCreateComputePipelineAsyncCallbackInfo, userdata2);
  WGI_FIELD(WGPUPopErrorScopeCallbackInfo, callback);
  WGI_FIELD(WGPUPopErrorScopeCallbackInfo, userdata1);
  WGI_FIELD(WGPUPopErrorScopeCallbackInfo, userdata2);
  WGI_FIELD(WGPUQueueWorkDoneCallbackInfo, callback);
  WGI_FIELD(WGPUQueueWorkDoneCallbackInfo, userdata1);
  WGI_FIELD(WGPUQueueWorkDoneCallbackInfo, userdata2);

  WGI_FIELD(WGPUAdapterInfo, vendor);
  WGI_FIELD(WGPUAdapterInfo, architecture);
  WGI_FIELD(WGPUAdapterInfo, device);
  WGI_FIELD(WGPUAdapterInfo, description);
  WGI_FIELD(WGPUAdapterInfo, backendType);
  WGI_FIELD(WGPUAdapterInfo, adapterType);
  WGI_FIELD(WGPUAdapterInfo, vendorID);
  WGI_FIELD(WGPUAdapterInfo, deviceID);
  WGI_FIELD(WGPUAdapterInfo, subgroupMinSize);
  WGI_FIELD(WGPUAdapterInfo, subgroupMaxSize);

  // Every limit that WebGPU in the browser may know; webgpu.js copies those the browser reports.
  WGI_FIELD(WGPULimits, maxTextureDimension1D);
  WGI_FIELD(WGPULimits, maxTextureDimension2D);
  WGI_FIELD(WGPULimits, maxTextureDimension3D);
  WGI_FIELD(WGPULimits, maxTextureArrayLayers);
  WGI_FIELD(WGPULimits, maxBindGroups);
  WGI_FIELD(WGPULimits, maxBindGroupsPlusVertexBuffers);
  WGI_FIELD(WGPULimits, maxBindingsPerBindGroup);
  WGI_FIELD(WGPULimits, maxDynamicUniformBuffersPerPipelineLayout);
  WGI_FIELD(WGPULimits, maxDynamicStorageBuffersPerPipelineLayout);
  WGI_FIELD(WGPULimits, maxSampledTexturesPerShaderStage);
  WGI_FIELD(WGPULimits, maxSamplersPerShaderStage);
  WGI_FIELD(WGPULimits, maxStorageBuffersPerShaderStage);
  WGI_FIELD(WGPULimits, maxStorageTexturesPerShaderStage);
  WGI_FIELD(WGPULimits, maxUniformBuffersPerShaderStage);
  WGI_FIELD(WGPULimits, maxUniformBufferBindingSize);
  WGI_FIELD(WGPULimits, maxStorageBufferBindingSize);
  WGI_FIELD(WGPULimits, minUniformBufferOffsetAlignment);
  WGI_FIELD(WGPULimits, minStorageBufferOffsetAlignment);
  WGI_FIELD(WGPULimits, maxVertexBuffers);
  WGI_FIELD(WGPULimits, maxBufferSize);
  WGI_FIELD(WGPULimits, maxVertexAttributes);
  WGI_FIELD(WGPULimits, maxVertexBufferArrayStride);
  WGI_FIELD(WGPULimits, maxInterStageShaderVariables);
  WGI_FIELD(WGPULimits, maxColorAttachments);
  WGI_FIELD(WGPULimits, maxColorAttachmentBytesPerSample);
  WGI_FIELD(WGPULimits, maxComputeWorkgroupStorageSize);
  WGI_FIELD(WGPULimits, maxComputeInvocationsPerWorkgroup);
  WGI_FIELD(WGPULimits, maxComputeWorkgroupSizeX);
  WGI_FIELD(WGPULimits, maxComputeWorkgroupSizeY);
  WGI_FIELD(WGPULimits, maxComputeWorkgroupSizeZ);
  WGI_FIELD(WGPULimits, maxComputeWorkgroupsPerDimension);
  WGI_FIELD(WGPULimits, maxImmediateSize);

  WGI_FIELD(WGPUDeviceDescriptor, label);
  WGI_FIELD(WGPUDeviceDescriptor, requiredFeatureCount);
  WGI_FIELD(WGPUDeviceDescriptor, requiredFeatures);
  WGI_FIELD(WGPUDeviceDescriptor, requiredLimits);
  WGI_FIELD(WGPUDeviceDescriptor, deviceLostCallbackInfo);
  WGI_FIELD(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo);
  WGI_FIELD(WGPUSupportedFeatures, featureCount);
  WGI_FIELD(WGPUSupportedFeatures, features);

  WGI_FIELD(WGPUBufferDescriptor, label);
  WGI_FIELD(WGPUBufferDescriptor, usage);
  WGI_FIELD(WGPUBufferDescriptor, size);
  WGI_FIELD(WGPUBufferDescriptor, mappedAtCreation);

  WGI_FIELD(WGPUShaderModuleDescriptor, nextInChain);
  WGI_FIELD(WGPUShaderModuleDescriptor, label);
  WGI_FIELD(WGPUShaderSourceWGSL, code);
  WGI_FIELD(WGPUCompilationInfo, messageCount);
  WGI_FIELD(WGPUCompilationInfo, messages);
  WGI_SIZE(WGPUCompilationInfo);
  WGI_FIELD(WGPUCompilationMessage, message);
  WGI_FIELD(WGPUCompilationMessage, type);
  WGI_FIELD(WGPUCompilationMessage, lineNum);
  WGI_FIELD(WGPUCompilationMessage, linePos);
  WGI_FIELD(WGPUCompilationMessage, offset);
  WGI_FIELD(WGPUCompilationMessage, length);
  WGI_SIZE(WGPUCompilationMessage);

  WGI_FIELD(WGPUBindGroupLayoutDescriptor, label);
  WGI_FIELD(WGPUBindGroupLayoutDescriptor, entryCount);
  WGI_FIELD(WGPUBindGroupLayoutDescriptor, entries);
  WGI_FIELD(WGPUBindGroupLayoutEntry, binding);
  WGI_FIELD(WGPUBindGroupLayoutEntry, visibility);
  WGI_FIELD(WGPUBindGroupLayoutEntry, bindingArraySize);
  WGI_FIELD(WGPUBindGroupLayoutEntry, buffer);
  WGI_SIZE(WGPUBindGroupLayoutEntry);
  WGI_FIELD(WGPUBufferBindingLayout, type);
  WGI_FIELD(WGPUBufferBindingLayout, hasDynamicOffset);
  WGI_FIELD(WGPUBufferBindingLayout, minBindingSize);
  WGI_FIELD(WGPUPipelineLayoutDescriptor, label);
  WGI_FIELD(WGPUPipelineLayoutDescriptor, bindGroupLayoutCount);
  WGI_FIELD(WGPUPipelineLayoutDescriptor, bindGroupLayouts);

  WGI_FIELD(WGPUComputePipelineDescriptor, label);
  WGI_FIELD(WGPUComputePipelineDescriptor, layout);
  WGI_FIELD(WGPUComputePipelineDescriptor, compute);
  WGI_FIELD(WGPUComputeState, module);
  WGI_FIELD(WGPUComputeState, entryPoint);
  WGI_FIELD(WGPUComputeState, constantCount);
  WGI_FIELD(WGPUComputeState, constants);
  WGI_FIELD(WGPUConstantEntry, key);
  WGI_FIELD(WGPUConstantEntry, value);
  WGI_SIZE(WGPUConstantEntry);

  WGI_FIELD(WGPUBindGroupDescriptor, label);
  WGI_FIELD(WGPUBindGroupDescriptor, layout);
  WGI_FIELD(WGPUBindGroupDescriptor, entryCount);
  WGI_FIELD(WGPUBindGroupDescriptor, entries);
  WGI_FIELD(WGPUBindGroupEntry, binding);
  WGI_FIELD(WGPUBindGroupEntry, buffer);
  WGI_FIELD(WGPUBindGroupEntry, offset);
  WGI_FIELD(WGPUBindGroupEntry, size);
  WGI_FIELD(WGPUBindGroupEntry, sampler);
  WGI_FIELD(WGPUBindGroupEntry, textureView);
  WGI_SIZE(WGPUBindGroupEntry);

  WGI_FIELD(WGPUCommandEncoderDescriptor, label);
  WGI_FIELD(WGPUCommandBufferDescriptor, label);
  WGI_FIELD(WGPUComputePassDescriptor, label);
  WGI_FIELD(WGPUComputePassDescriptor, timestampWrites);
  WGI_FIELD(WGPUPassTimestampWrites, querySet);
  WGI_FIELD(WGPUPassTimestampWrites, beginningOfPassWriteIndex);
  WGI_FIELD(WGPUPassTimestampWrites, endOfPassWriteIndex);
  WGI_FIELD(WGPUQuerySetDescriptor, label);
  WGI_FIELD(WGPUQuerySetDescriptor, type);
  WGI_FIELD(WGPUQuerySetDescriptor, count);

  WGI_ENUM(WGPUSType_ShaderSourceWGSL);
  WGI_ENUM(WGPUFeatureLevel_Compatibility);
  WGI_ENUM(WGPUFeatureLevel_Core);
  WGI_ENUM(WGPUPowerPreference_LowPower);
  WGI_ENUM(WGPUPowerPreference_HighPerformance);
  WGI_ENUM(WGPUBackendType_WebGPU);
  WGI_ENUM(WGPUAdapterType_CPU);
  WGI_ENUM(WGPUAdapterType_Unknown);
  WGI_ENUM(WGPUStatus_Success);
  WGI_ENUM(WGPUWGSLLanguageFeatureName_Packed4x8IntegerDotProduct);
  WGI_ENUM(WGPUStatus_Error);
  WGI_ENUM(WGPURequestAdapterStatus_Success);
  WGI_ENUM(WGPURequestAdapterStatus_Unavailable);
  WGI_ENUM(WGPURequestAdapterStatus_Error);
  WGI_ENUM(WGPURequestDeviceStatus_Success);
  WGI_ENUM(WGPURequestDeviceStatus_Error);
  WGI_ENUM(WGPUDeviceLostReason_Unknown);
  WGI_ENUM(WGPUDeviceLostReason_Destroyed);
  WGI_ENUM(WGPUErrorType_NoError);
  WGI_ENUM(WGPUErrorType_Validation);
  WGI_ENUM(WGPUErrorType_OutOfMemory);
  WGI_ENUM(WGPUErrorType_Internal);
  WGI_ENUM(WGPUErrorType_Unknown);
  WGI_ENUM(WGPUErrorFilter_Validation);
  WGI_ENUM(WGPUErrorFilter_OutOfMemory);
  WGI_ENUM(WGPUErrorFilter_Internal);
  WGI_ENUM(WGPUPopErrorScopeStatus_Success);
  WGI_ENUM(WGPUPopErrorScopeStatus_Error);
  WGI_ENUM(WGPUMapAsyncStatus_Success);
  WGI_ENUM(WGPUMapAsyncStatus_Error);
  WGI_ENUM(WGPUMapAsyncStatus_Aborted);
  WGI_ENUM(WGPUQueueWorkDoneStatus_Success);
  WGI_ENUM(WGPUQueueWorkDoneStatus_Error);
  WGI_ENUM(WGPUCompilationInfoRequestStatus_Success);
  WGI_ENUM(WGPUCompilationMessageType_Error);
  WGI_ENUM(WGPUCompilationMessageType_Warning);
  WGI_ENUM(WGPUCompilationMessageType_Info);
  WGI_ENUM(WGPUCreatePipelineAsyncStatus_Success);
  WGI_ENUM(WGPUCreatePipelineAsyncStatus_ValidationError);
  WGI_ENUM(WGPUCreatePipelineAsyncStatus_InternalError);
  WGI_ENUM(WGPUBufferBindingType_BindingNotUsed);
  WGI_ENUM(WGPUBufferBindingType_Uniform);
  WGI_ENUM(WGPUBufferBindingType_Storage);
  WGI_ENUM(WGPUBufferBindingType_ReadOnlyStorage);
  WGI_ENUM(WGPUQueryType_Timestamp);
  WGI_ENUM(WGPUShaderStage_Compute);
  WGI_ENUM(WGPUMapMode_Read);
  WGI_ENUM(WGPUBufferUsage_MapRead);
  WGI_ENUM(WGPUBufferUsage_MapWrite);
  WGI_ENUM(WGPUBufferUsage_CopySrc);
  WGI_ENUM(WGPUBufferUsage_CopyDst);
  WGI_ENUM(WGPUBufferUsage_Uniform);
  WGI_ENUM(WGPUBufferUsage_Storage);
  WGI_ENUM(WGPUBufferUsage_QueryResolve);
  // Features in the numbering src/gpu/ uses (gpu/webgpu_abi.h), by WebGPU name: "feature.shader-f16=10".
  for (uint32_t v = 1; v < 64; ++v) {
    std::string name = wgi::gpu::abi::feature_name(v);
    if (name.rfind("0x", 0) == 0) continue;
    value(("feature." + name).c_str(), v);
  }
  const auto subgroup_matrix = static_cast<uint32_t>(wgi::gpu::abi::kSubgroupMatrix);
  value(("feature." + wgi::gpu::abi::feature_name(subgroup_matrix)).c_str(), subgroup_matrix);
#undef WGI_FIELD
#undef WGI_SIZE
#undef WGI_ENUM
  return t;
}

}  // namespace

// Called once by webgpu.js; the string lives as long as the module.
extern "C" EMSCRIPTEN_KEEPALIVE const char* wgi_web_layout() {
  static const std::string table = build_table();
  return table.c_str();
}
