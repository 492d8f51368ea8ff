// One time step of ONNX LSTM / GRU / RNN for every batch row and direction (src/ops/recurrent.cpp).
// The input projection X * W^T of all steps is already in `projected` ([directions][rows][gate_rows], rows in
// X's order), so a step computes the recurrent product v * R^T (v: the hidden state, or GRU's r * h) and the
// cell. R is read transposed ([directions][hidden][gate_rows]): for one k, the UNITS threads of a k-slice read
// UNITS consecutive floats. A workgroup takes UNITS hidden units x BT batch rows of one direction; its KSPLIT
// slices split k and are reduced in workgroup memory, then UNITS x BT threads finish the cell.
// The hidden state ping-pongs between two slots of `state` (the step reads one, writes the other: other
// workgroups still read it); the cell state (LSTM), or GRU's z and r * h (two-phase GRU), live after them.
// Variants: LSTM, GRU_FUSED (linear_before_reset = 1), GRU_GATES then GRU_HIDDEN (linear_before_reset = 0),
// RNN. Rows past their sequence length hold their state and write zeros to Y (a row of length 0 ends with a
// zero state).
#include "elementwise/math.wgsl"

const UNITS: u32 = {{UNITS}}u;
const KSPLIT: u32 = {{KSPLIT}}u;
const WG: u32 = UNITS * KSPLIT;
const BT: u32 = {{BT}}u;
const GATES: u32 = {{GATES}}u;  // R rows per hidden unit that this kernel multiplies
const ACC: u32 = GATES * BT;

#interface

var<workgroup> partial: array<f32, WG * ACC>;

// ONNX's activation list: 0 Relu, 1 Tanh, 2 Sigmoid, 3 Affine, 4 LeakyRelu, 5 ThresholdedRelu, 6 ScaledTanh,
// 7 HardSigmoid, 8 Elu, 9 Softsign, 10 Softplus.
fn activate(kind: u32, alpha: f32, beta: f32, x: f32) -> f32 {
  switch kind {
    case 0u: { return max(x, 0.0); }
    case 1u: { return wgi_tanh(x); }
    case 2u: { return wgi_sigmoid(x); }
    case 3u: { return alpha * x + beta; }
    case 4u: { return select(x, alpha * x, x < 0.0); }
    case 5u: { return select(0.0, x, x > alpha); }
    case 6u: { return alpha * wgi_tanh(beta * x); }
    case 7u: { return clamp(alpha * x + beta, 0.0, 1.0); }
    case 8u: { return select(x, alpha * wgi_expm1(x), x < 0.0); }
    case 9u: { return x / (1.0 + abs(x)); }
    default: { return wgi_softplus(x); }
  }
}

fn act(d: u32, slot: u32, x: f32) -> f32 {
  return activate(params.kinds[d][slot], params.alphas[d][slot], params.betas[d][slot], x);
}

// A gate's activation: `clip` bounds its input (not LSTM's h(C), as in onnxruntime).
fn gate(d: u32, slot: u32, x: f32) -> f32 {
  var v = x;
  if (params.has_clip != 0u) {
    v = clamp(v, -params.clip, params.clip);
  }
  return act(d, slot, v);
}

// Wb + Rb of gate row `row` of direction d (0 without B).
fn gate_bias(d: u32, row: u32) -> f32 {
  if (params.has_bias == 0u) {
    return 0.0;
  }
  let base = d * 2u * params.gate_rows;
  return bias[base + row] + bias[base + params.gate_rows + row];
}

fn y_index(t: u32, d: u32, b: u32, u: u32) -> u32 {
  let H = params.hidden;
  if (params.batch_major == 0u) {
    return ((t * params.directions + d) * params.batch + b) * H + u;
  }
  return ((b * params.seq + t) * params.directions + d) * H + u;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let H = params.hidden;
  let B = params.batch;
  let d = wid.z;
  let b0 = wid.y * BT;
  let ui = lid % UNITS;
  let ks = lid / UNITS;
  let u = wid.x * UNITS + ui;

  // The recurrent products of this thread's k-slice.
  var acc: array<f32, ACC>;
  for (var i = 0u; i < ACC; i++) {
    acc[i] = 0.0;
  }
  if (u < H) {
    for (var k = ks; k < H; k += KSPLIT) {
      var v: array<f32, BT>;
      for (var bb = 0u; bb < BT; bb++) {
        v[bb] = 0.0;
        if (b0 + bb < B) {
          v[bb] = state[params.vector + (d * B + b0 + bb) * H + k];
        }
      }
      let r_row = (d * H + k) * params.gate_rows + params.first_gate * H + u;
      for (var g = 0u; g < GATES; g++) {
        let r = r_t[r_row + g * H];
        for (var bb = 0u; bb < BT; bb++) {
          acc[g * BT + bb] = fma(r, v[bb], acc[g * BT + bb]);
        }
      }
    }
  }
  for (var i = 0u; i < ACC; i++) {
    partial[(i * KSPLIT + ks) * UNITS + ui] = acc[i];
  }
  workgroupBarrier();
  if (lid >= UNITS * BT) {
    return;
  }
  let bb = lid / UNITS;
  let b = b0 + bb;
  if (u >= H || b >= B) {
    return;
  }
  var rec: array<f32, GATES>;
  for (var g = 0u; g < GATES; g++) {
    var s = 0.0;
    for (var j = 0u; j < KSPLIT; j++) {
      s += partial[((g * BT + bb) * KSPLIT + j) * UNITS + ui];
    }
    rec[g] = s;
  }

  let T = params.seq;
  var len = T;
  if (params.has_lens != 0u) {
    len = u32(clamp(lengths[b], 0, i32(T)));
  }
  let step = params.step;
  let in_sequence = step < len;
  let reverse = params.all_reverse != 0u || d == 1u;
  var t = step;
  if (in_sequence && reverse) {
    t = len - 1u - step;
  }
  let sidx = (d * B + b) * H + u;
  let h_prev = state[params.h_read + sidx];
#if GRU_GATES
  // Phase 1 of the two-phase GRU: z and r * h for phase 2 (0 for rows past their length, so that phase 2's
  // product stays finite).
  if (!in_sequence) {
    state[params.reset_h + sidx] = 0.0;
    return;
  }
#else
  if (!in_sequence) {
    // Held; a row of length 0 ends with a zero state, as in onnxruntime.
    var held = h_prev;
    if (len == 0u) {
      held = 0.0;
#if LSTM
      state[params.cell + sidx] = 0.0;
#endif
    }
    state[params.h_write + sidx] = held;
    if (params.has_y != 0u) {
      y[y_index(step, d, b, u)] = 0.0;
    }
    return;
  }
#endif
  let row = select(b * T + t, t * B + b, params.batch_major == 0u);
  let x_base = (d * T * B + row) * params.gate_rows;
  var h_new = 0.0;
#if LSTM
  // Gate order i, o, f, c; peepholes i, o, f.
  let c_prev = state[params.cell + sidx];
  var p_i = 0.0;
  var p_o = 0.0;
  var p_f = 0.0;
  if (params.has_peepholes != 0u) {
    p_i = peepholes[d * 3u * H + u];
    p_o = peepholes[d * 3u * H + H + u];
    p_f = peepholes[d * 3u * H + 2u * H + u];
  }
  let gi = gate(d, 0u, projected[x_base + u] + rec[0] + gate_bias(d, u) + p_i * c_prev);
  var gf = gate(d, 0u, projected[x_base + 2u * H + u] + rec[2] + gate_bias(d, 2u * H + u) + p_f * c_prev);
  if (params.input_forget != 0u) {
    gf = 1.0 - gi;
  }
  let gc = gate(d, 1u, projected[x_base + 3u * H + u] + rec[3] + gate_bias(d, 3u * H + u));
  let c_new = gf * c_prev + gi * gc;
  let go = gate(d, 0u, projected[x_base + H + u] + rec[1] + gate_bias(d, H + u) + p_o * c_new);
  h_new = go * act(d, 2u, c_new);
  state[params.cell + sidx] = c_new;
#endif
#if RNN
  h_new = gate(d, 0u, projected[x_base + u] + rec[0] + gate_bias(d, u));
#endif
#if GRU_FUSED
  // Gate order z, r, h; linear_before_reset: r scales h * Rh^T + Rbh.
  let gz = gate(d, 0u, projected[x_base + u] + rec[0] + gate_bias(d, u));
  let gr = gate(d, 0u, projected[x_base + H + u] + rec[1] + gate_bias(d, H + u));
  var rh_term = rec[2];
  var wb_h = 0.0;
  if (params.has_bias != 0u) {
    let base = d * 2u * params.gate_rows;
    rh_term += bias[base + params.gate_rows + 2u * H + u];
    wb_h = bias[base + 2u * H + u];
  }
  let gh = gate(d, 1u, projected[x_base + 2u * H + u] + wb_h + gr * rh_term);
  h_new = (1.0 - gz) * gh + gz * h_prev;
#endif
#if GRU_GATES
  let gz = gate(d, 0u, projected[x_base + u] + rec[0] + gate_bias(d, u));
  let gr = gate(d, 0u, projected[x_base + H + u] + rec[1] + gate_bias(d, H + u));
  state[params.cell + sidx] = gz;
  state[params.reset_h + sidx] = gr * h_prev;
#else
#if GRU_HIDDEN
  // rec[0] = (r * h) * Rh^T.
  let gz = state[params.cell + sidx];
  let gh = gate(d, 1u, projected[x_base + 2u * H + u] + rec[0] + gate_bias(d, 2u * H + u));
  h_new = (1.0 - gz) * gh + gz * h_prev;
#endif
  state[params.h_write + sidx] = h_new;
  if (params.has_y != 0u) {
    y[y_index(t, d, b, u)] = h_new;
  }
#endif
}
