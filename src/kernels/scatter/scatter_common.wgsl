// What ScatterElements and ScatterND share: the bindings (each kernel declares its own `Params`), the
// workgroup size, how an update is combined with the value it lands on (COMBINE: the reduction), and the
// run status where an index out of range at run time is recorded (common/run_status.wgsl).
#include "common/run_status.wgsl"

@group(0) @binding(0) var<storage, read> data: array<{{TYPE}}>;
@group(0) @binding(1) var<storage, read> indices: array<i32>;
@group(0) @binding(2) var<storage, read> updates: array<{{TYPE}}>;
@group(0) @binding(3) var<storage, read_write> destination: array<{{TYPE}}>;
@group(0) @binding(5) var<uniform> params: Params;

override WG_SIZE: u32 = 256;

fn combine(v: {{TYPE}}, u: {{TYPE}}) -> {{TYPE}} {
  return {{COMBINE}};
}
