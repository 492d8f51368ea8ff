// Subgroup-matrix GEMM probes through dawn.node (issue 21, item 3): f16 operands, f32 accumulation, C = A B with
// A [M, K] and B [K, N] row-major. Each variant is checked against a float64 product of the same f16 values
// at 256^3 and at a non-square size that spans several workgroup tiles and K slabs before it is timed at 4096^3,
// so a variant that crashes, hangs or computes garbage is seen for what it is; errors are caught per variant.
//
//   node bench/sgm_gemm_probe.mjs DAWN_NODE_PACKAGE [variant...]
// Variants:
//   direct    each subgroup loads its left / right 16x16 matrices straight from the storage buffers
//             (4 subgroups per workgroup, a 64x128 workgroup tile, 2x4 accumulators per subgroup)
//   staged    the same tile, with A's 64x32 and B's 32x128 K slab copied to workgroup memory first and the
//             matrices loaded from there (the shape of the probe that crashed dawn.node before)
//   staged8   as staged with a 128x128 workgroup tile: 4x4 accumulators per subgroup
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const say = (m) => fs.writeSync(1, m + '\n');
const [pkg, ...wanted] = process.argv.slice(2);
if (!pkg) {
  say('usage: node bench/sgm_gemm_probe.mjs DAWN_NODE_PACKAGE [direct|staged|staged8 ...]');
  process.exit(2);
}
const { create, globals } = require(pkg + '/dist/linux-x64/dawn.node');
Object.assign(globalThis, globals);
const gpu = create(['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia']);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
const features = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'];
const missing = features.filter((f) => !adapter.features.has(f));
if (missing.length) {
  say(`adapter lacks ${missing.join(', ')}: nothing to probe`);
  process.exit(0);
}
const device = await adapter.requestDevice({
  requiredFeatures: features,
  requiredLimits: { maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize },
});
let lastError = null;
device.addEventListener?.('uncapturederror', (e) => { lastError = e.error.message; say('uncaptured: ' + lastError); });

function toHalf(f) {
  const b = new DataView(new ArrayBuffer(4));
  b.setFloat32(0, f);
  const x = b.getUint32(0);
  const sign = (x >>> 16) & 0x8000;
  let exp = ((x >>> 23) & 0xff) - 127 + 15;
  let mant = x & 0x7fffff;
  if (exp <= 0) return sign;  // the probe's values are never this small
  if (exp >= 31) return sign | 0x7c00;
  const round = mant & 0x1fff;
  mant >>>= 13;
  if (round > 0x1000 || (round === 0x1000 && (mant & 1))) { mant += 1; if (mant === 0x400) { mant = 0; exp += 1; } }
  return sign | (exp << 10) | mant;
}
function fromHalf(h) {
  const exp = (h >>> 10) & 0x1f, mant = h & 0x3ff, sign = h & 0x8000 ? -1 : 1;
  if (exp === 0) return sign * mant * 2 ** -24;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
function randomHalves(count, seed) {
  let s = seed >>> 0;
  const out = new Uint16Array(count);
  for (let i = 0; i < count; ++i) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = toHalf(s / 2 ** 31 - 1);
  }
  return out;
}

// The kernel text of a variant: tile rows TM x cols TN per workgroup of 4 subgroups laid out 2 x 2; each
// subgroup owns (TM/2) x (TN/2) = AM x AN matrices of 16x16.
function kernel(variant) {
  const staged = variant !== 'direct';
  const TM = variant === 'staged8' ? 128 : 64, TN = 128, KS = 32;
  const AM = TM / 2 / 16, AN = TN / 2 / 16;
  let decl = '', mma = '', store = '';
  for (let i = 0; i < AM; ++i) for (let j = 0; j < AN; ++j) {
    decl += `  var acc${i}${j} = subgroup_matrix_result<f32, 16, 16>();\n`;
    mma += `      acc${i}${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}${j});\n`;
    store += `  subgroupMatrixStore(&c, (row0 + ${16 * i}u) * p.n + col0 + ${16 * j}u, acc${i}${j}, false, p.n);\n`;
  }
  let loads = '';
  for (let i = 0; i < AM; ++i) {
    loads += staged
      ? `      let l${i} = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&ta, (srow + ${16 * i}u) * ${KS}u + kk, false, ${KS}u);\n`
      : `      let l${i} = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a, (row0 + ${16 * i}u) * p.k + k0 + kk, false, p.k);\n`;
  }
  for (let j = 0; j < AN; ++j) {
    loads += staged
      ? `      let r${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&tb, kk * ${TN}u + scol + ${16 * j}u, false, ${TN}u);\n`
      : `      let r${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&b, (k0 + kk) * p.n + col0 + ${16 * j}u, false, p.n);\n`;
  }
  const aVec4 = TM * KS / 4 / 128, bVec4 = KS * TN / 4 / 128;
  const copy = staged ? `
    for (var t = 0u; t < ${aVec4}u; t++) {
      let e = (t * 128u + lid) * 4u;  // element of the ${TM}x${KS} slab
      let r = e / ${KS}u; let q = e % ${KS}u;
      let v = av[((wg.y * ${TM}u + r) * p.k + k0 + q) / 4u];
      ta[e] = v.x; ta[e + 1u] = v.y; ta[e + 2u] = v.z; ta[e + 3u] = v.w;
    }
    for (var t = 0u; t < ${bVec4}u; t++) {
      let e = (t * 128u + lid) * 4u;  // element of the ${KS}x${TN} slab
      let r = e / ${TN}u; let q = e % ${TN}u;
      let v = bv[((k0 + r) * p.n + wg.x * ${TN}u + q) / 4u];
      tb[e] = v.x; tb[e + 1u] = v.y; tb[e + 2u] = v.z; tb[e + 3u] = v.w;
    }
    workgroupBarrier();` : '';
  return {
    TM, TN,
    code: `enable f16;
enable chromium_experimental_subgroup_matrix;
struct Params { m: u32, n: u32, k: u32 }
${staged ? `@group(0) @binding(0) var<storage, read> av: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> bv: array<vec4<f16>>;
var<workgroup> ta: array<f16, ${TM * KS}>;
var<workgroup> tb: array<f16, ${KS * TN}>;`
    : `@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;`}
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(subgroup_id) sid: u32,
        @builtin(local_invocation_index) lid: u32) {
  let srow = (sid / 2u) * ${TM / 2}u;
  let scol = (sid % 2u) * ${TN / 2}u;
  let row0 = wg.y * ${TM}u + srow;
  let col0 = wg.x * ${TN}u + scol;
${decl}  for (var k0 = 0u; k0 < p.k; k0 += ${KS}u) {${copy}
    for (var kk = 0u; kk < ${KS}u; kk += 16u) {
${loads}${mma}    }${staged ? '\n    workgroupBarrier();' : ''}
  }
${store}}`,
  };
}

async function probe(variant) {
  const { code, TM, TN } = kernel(variant);
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  // Tint warns once per use of a deprecated spelling: print each distinct message once, with its count.
  const seen = new Map();
  for (const m of info.messages) {
    const key = `${m.type}: ${m.message.split('\n')[0]}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  for (const [key, count] of seen) say(`  ${variant} ${key} (x${count})`);
  const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const run = async (M, N, K, reps, check) => {
    const ah = randomHalves(M * K, 1234 + M), bh = randomHalves(K * N, 99 + N);
    const mk = (data, usage) => {
      const buf = device.createBuffer({ size: Math.max(16, data.byteLength), usage: usage | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(buf, 0, data);
      return buf;
    };
    const ba = mk(ah, GPUBufferUsage.STORAGE), bb = mk(bh, GPUBufferUsage.STORAGE);
    const bc = device.createBuffer({ size: M * N * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const bp = mk(new Uint32Array([M, N, K, 0]), GPUBufferUsage.UNIFORM);
    const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [
      { binding: 0, resource: { buffer: ba } }, { binding: 1, resource: { buffer: bb } },
      { binding: 2, resource: { buffer: bc } }, { binding: 3, resource: { buffer: bp } }] });
    const submit = (count) => {
      const e = device.createCommandEncoder();
      const pass = e.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bind);
      for (let i = 0; i < count; ++i) pass.dispatchWorkgroups(N / TN, M / TM);
      pass.end();
      device.queue.submit([e.finish()]);
      return device.queue.onSubmittedWorkDone();
    };
    await submit(1);
    if (check) {
      const read = device.createBuffer({ size: M * N * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const e = device.createCommandEncoder();
      e.copyBufferToBuffer(bc, 0, read, 0, M * N * 4);
      device.queue.submit([e.finish()]);
      await read.mapAsync(GPUMapMode.READ);
      const got = new Float32Array(read.getMappedRange().slice(0));
      read.unmap();
      const af = Float64Array.from(ah, fromHalf), bf = Float64Array.from(bh, fromHalf);
      let worst = 0, worstAt = -1;
      for (let m = 0; m < M; ++m) for (let n = 0; n < N; ++n) {
        let want = 0, scale = 0;
        for (let k = 0; k < K; ++k) { const t = af[m * K + k] * bf[k * N + n]; want += t; scale += Math.abs(t); }
        const err = Math.abs(got[m * N + n] - want) / Math.max(scale, 1e-30);
        if (!(err <= worst)) { worst = err; worstAt = m * N + n; }
      }
      return { worst, worstAt };
    }
    const times = [];
    for (let i = 0; i < 5; ++i) { const t0 = performance.now(); await submit(reps); times.push((performance.now() - t0) / reps); }
    times.sort((x, y) => x - y);
    return { ms: times[2], tflops: 2 * M * N * K / times[2] / 1e9 };
  };
  // Float32 accumulation of f16 products: error ~K * 2^-24 of the sum of magnitudes; 1e-5 is far above it and
  // far below a wrong tile (garbage or a missed K slab gives errors of order 1).
  for (const [M, N, K] of [[256, 256, 256], [TM === 128 ? 384 : 320, 384, 160]]) {
    const { worst, worstAt } = await run(M, N, K, 1, true);
    say(`  ${variant} ${M}x${N}x${K}: worst error / sum|a b| ${worst.toExponential(2)} at ${worstAt} ${worst < 1e-5 ? 'ok' : 'WRONG'}`);
    if (!(worst < 1e-5)) return;
  }
  for (const size of [2048, 4096]) {
    const { ms, tflops } = await run(size, size, size, size === 4096 ? 10 : 20, false);
    say(`  ${variant} ${size}^3: ${ms.toFixed(3)} ms, ${tflops.toFixed(1)} TFLOP/s`);
  }
}

say(`adapter: ${adapter.info?.vendor ?? ''} ${adapter.info?.architecture ?? ''} ${adapter.info?.description ?? ''}`);
say(`maxComputeWorkgroupStorageSize ${adapter.limits.maxComputeWorkgroupStorageSize}`);
for (const variant of wanted.length ? wanted : ['direct', 'staged', 'staged8']) {
  say(`variant ${variant} (${(performance.now() / 1000).toFixed(1)} s)`);
  try {
    await probe(variant);
  } catch (e) {
    say(`  ${variant} threw: ${e?.message ?? e}`);
  }
}
process.exit(0);
