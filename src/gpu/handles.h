// Opaque WebGPU handle types, declared without webgpu.h so that code above src/gpu/ never includes it.
#pragma once

struct WGPUInstanceImpl;
struct WGPUAdapterImpl;
struct WGPUDeviceImpl;
struct WGPUQueueImpl;
struct WGPUBufferImpl;
struct WGPUShaderModuleImpl;
struct WGPUComputePipelineImpl;
struct WGPUBindGroupLayoutImpl;
struct WGPUBindGroupImpl;
struct WGPUQuerySetImpl;
struct WGPUCommandEncoderImpl;
struct WGPUComputePassEncoderImpl;
