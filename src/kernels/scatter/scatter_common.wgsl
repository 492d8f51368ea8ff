// What ScatterElements and ScatterND share: the bindings (each kernel has its own `Params`: ops/scatter.cpp), the
// workgroup size, how an update is combined with the value it lands on (COMBINE: the reduction), and the
// run status where an index out of range at run time is recorded (common/run_status.wgsl).
#include "common/run_status.wgsl"

#interface

override WG_SIZE: u32 = 256;

fn combine(v: {{TYPE}}, u: {{TYPE}}) -> {{TYPE}} {
  return {{COMBINE}};
}
