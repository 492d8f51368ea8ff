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
  say('usage: node bench/sgm_gemm_probe.mjs DAWN_NODE_PACKAGE|--print [direct|staged|staged8|tile:k=v,... ...]');
  process.exit(2);
}
if (pkg === '--print') {  // the WGSL of tile variants, to read them
  for (const v of wanted) say(tileKernel(v.replace(/^tile:/, '')).code);
  process.exit(0);
}
const { create, globals } = require(pkg + '/dist/linux-x64/dawn.node');
Object.assign(globalThis, globals);
// SGM_TOGGLES: Dawn toggles (default as Chrome runs: robustness on); native wgi adds
// disable_robustness,disable_workgroup_init.
const toggles = process.env.SGM_TOGGLES ?? 'allow_unsafe_apis,vulkan_enable_f16_on_nvidia';
const gpu = create([`enable-dawn-features=${toggles}`]);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
const features = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'];
// GPU time from timestamp queries at the compute pass's beginning and end when the adapter has them (the
// wall clock around onSubmittedWorkDone in dawn.node is far too coarse and noisy); else the wall clock.
const timestamps = adapter.features.has('timestamp-query');
const missing = features.filter((f) => !adapter.features.has(f));
if (missing.length) {
  say(`adapter lacks ${missing.join(', ')}: nothing to probe`);
  process.exit(0);
}
const device = await adapter.requestDevice({
  requiredFeatures: timestamps ? [...features, 'timestamp-query'] : features,
  requiredLimits: {
    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupSizeX: adapter.limits.maxComputeWorkgroupSizeX,
  },
});
let lastError = null;
device.addEventListener?.('uncapturederror', (e) => { lastError = e.error.message; say('uncaptured: ' + lastError); });

const halfScratch = new DataView(new ArrayBuffer(4));
function toHalf(f) {
  halfScratch.setFloat32(0, f);
  const x = halfScratch.getUint32(0);
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

// B [K, N] row-major as 16x16 blocks, each block's rows contiguous, blocks in [K/16][N/16] order.
function blocked16(b, K, N) {
  const out = new Uint16Array(b.length);
  let o = 0;
  for (let kb = 0; kb < K / 16; ++kb) for (let nb = 0; nb < N / 16; ++nb)
    for (let r = 0; r < 16; ++r) for (let c = 0; c < 16; ++c) out[o++] = b[(kb * 16 + r) * N + nb * 16 + c];
  return out;
}

// X [R, C] row-major as chunks of 8 rows of one column: [R/8][C][8] (at / bt).
function columnChunks8(x, R, C) {
  const out = new Uint16Array(x.length);
  for (let r = 0; r < R; ++r) for (let c = 0; c < C; ++c) out[(Math.floor(r / 8) * C + c) * 8 + (r % 8)] = x[r * C + c];
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
    TM, TN, KS,
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

// A parameterised tile kernel, named `tile:KEY=VALUE,...` (defaults in brackets):
//   sg    subgroups per workgroup [8], laid out sgr x (sg / sgr) [sgr 4]
//   tm tn the workgroup tile [128 x 128]; each subgroup owns (tm / sgr) x (tn / sgc), in 16x16 accumulators
//   ks    the K slab staged in workgroup memory per step [32]
//   pad   halves added to each staged row (bank conflicts of the matrix loads) [8]
//   db    1: two slab buffers, the next slab's global loads issued before the current slab's MMAs and
//         stored after them (one barrier per slab) [1]
//   af32  1: A is float32 in memory, rounded to f16 while staging (what wgi's activations are) [0]
//   lw    bytes per global load of f16 data: 16 (vec4<u32>), 8 or 4 (u32: consecutive invocations then store
//         consecutive halves, which keeps the 16-bit workgroup stores free of bank conflicts) [16]
//   bdirect 1: B prepacked in 16x16 blocks (each block's 256 halves contiguous, blocks [K/16][N/16]), its
//         matrices loaded straight from the storage buffer (a weight is prepacked once at plan time); only
//         A is staged [0]
//   edge  1: wgi's shapes: any M and N; A [M, Kp] and B [Kp, Np] zero-padded to the K slab and the tile's
//         width (a cast kernel and the weight's prepack would write them); rows of A past M staged as zeros;
//         C [M, N] = A B + bias[n], written through workgroup memory one 16x16 accumulator at a time, in
//         bounds only [0]
//   eguard  with edge: 1: A's rows past M read as zeros (min/select); 0: A padded to whole tiles of rows in
//         memory, loads unguarded [1]
//   estore  with edge: 0: every accumulator through the workgroup bounce, bias added there; 1: workgroups
//         whose tile lies inside M x N store their accumulators straight to C (subgroupMatrixStore, row
//         stride N), the accumulators start from a [16, Np] matrix of bias rows (a result-matrix load), and
//         only edge workgroups bounce; 2: as 0, copied out by the whole workgroup at once (no subgroup
//         builtins, one barrier pair) [0]
//   pf    1: (single buffer) the next slab's global loads issued before the current slab's MMAs, stored
//         after them between two barriers [0]
//   perm  1: (16-byte loads of f16) each lane stores its 8 halves in an order that keeps the 16-bit stores into
//         workgroup memory free of bank conflicts (else lanes 8 apart hit the same banks: 4-way) [0]
//   mstage 1: (with pf, no edge) the slabs staged as subgroup matrices: each subgroup loads 16x16 blocks of A
//         and B from the storage buffers (subgroupMatrixLoad) and stores them into workgroup memory
//         (subgroupMatrixStore): the driver's stores instead of 16-bit scalar ones [0]
//   halves  1: (single buffer) A's slab loaded and stored before B's is loaded: half the staging registers
//         live at once [0]
//   at bt  1: (16-byte loads, no edge) A (at) or B (bt) in memory as chunks of 8 halves down a column
//         (A [M/8][K][8], B [K/8][N][8]; a cast kernel or the weight's prepack would write them): each lane
//         stores its 8 halves into 8 rows, consecutive lanes into consecutive halves of a row, so the 16-bit
//         workgroup stores are free of bank conflicts with static indices [0]
//   rot   1: (16- or 8-byte loads, row-major operands) each lane stores its words starting at a lane-dependent
//         one (the vector rotated by selects, no dynamic index): the lanes whose chunks share banks store
//         different words at each step, free of bank conflicts [0]
// Diagnostics (their products are wrong by design: not checked, timed only):
//   nostage 1: the first slab is staged once and every K step multiplies it again: no global loads, no
//         stores, no barriers in the loop (the ceiling of matrix loads from workgroup memory + MMAs) [0]
//   nomma   1: every slab is staged as usual, but only one MMA a slab uses it (the staging's own cost) [0]
//   sd      (with pf) the staging taken apart: 1: the slabs' global loads without their stores (folded into a
//         value the kernel writes only if it matches a constant); 2: every store to a conflict-free place
//         (consecutive lanes, consecutive halves); 3: no barriers in the K loop [0]
// Global loads are 16 bytes per invocation (vec4<u32>: 8 halves, or vec4<f32> with af32); stores into
// workgroup memory are f16 scalars (subgroupMatrixLoad reads array<f16>).
function tileKernel(spec) {
  const o = { sg: 8, sgr: 4, tm: 128, tn: 128, ks: 32, pad: 8, db: 1, af32: 0, bdirect: 0, lw: 16, edge: 0, eguard: 1, estore: 0, halves: 0, nostage: 0, nomma: 0, pf: 0, perm: 0, mstage: 0, at: 0, bt: 0, rot: 0, sd: 0 };
  for (const kv of spec.split(',').filter(Boolean)) {
    const [k, v] = kv.split('=');
    if (!(k in o)) throw new Error('unknown tile parameter ' + k);
    o[k] = Number(v);
  }
  const threads = 32 * o.sg, sgc = o.sg / o.sgr;
  const wm = o.tm / o.sgr, wn = o.tn / sgc, am = wm / 16, an = wn / 16;
  const sa = o.ks + o.pad, sb = o.tn + o.pad;  // staged row strides, in halves
  const words = o.lw / 4;                               // u32 words per load of f16 data
  const wordType = ['', 'u32', 'vec2<u32>', '', 'vec4<u32>'][words];
  const halves = 2 * words;                             // f16 elements per load
  const aPer = o.af32 ? 4 : halves;                     // A elements per load
  const aLoads = o.tm * o.ks / aPer / threads, bLoads = o.ks * o.tn / halves / threads;
  // Stores of the f16 pairs of a loaded value `v` (its words) at t[d], t[d + 1], ...
  // perm: lane i of a subgroup stores its 8 halves in the order that puts the 32 lanes of each 16-bit store on
  // 32 different banks: lanes whose 16-byte chunks fall on the same 4 banks (the same 16-byte column of the
  // 128-byte bank row) store different words of them at each step; `rank` numbers those lanes 0..3.
  const bankRanks = (chunksPerRow, strideHalves, chunkBytes = 16) => {
    const seen = new Map(), ranks = [];
    for (let i = 0; i < 32; ++i) {
      const g = ((Math.floor(i / chunksPerRow) * strideHalves * 2 + (i % chunksPerRow) * chunkBytes) / chunkBytes) % (128 / chunkBytes);
      ranks.push((seen.get(g) ?? 0) % (chunkBytes / 4));
      seen.set(g, (seen.get(g) ?? 0) + 1);
    }
    return ranks;
  };
  // A lane's rank as arithmetic on two constants (2 bits a lane): a constant array indexed by the lane may
  // be copied into each invocation's local memory.
  const rankFn = (name, ranks) => {
    const bits = (from) => ranks.slice(from, from + 16).reduce((a, r, i) => a + r * 4 ** i, 0);
    return `fn ${name}(lane: u32) -> u32 { return (select(${bits(16)}u, ${bits(0)}u, lane < 16u) >> ((lane % 16u) * 2u)) & 3u; }\n`;
  };
  const storeHalves = (t, v, rankTable, loadIndex, colStride) => {
    let out = '';
    if (o.sd === 2) {  // conflict-free, wrong places: consecutive lanes, consecutive halves
      const slab = t === 'ta' ? aSlab : bSlab;
      for (let w = 0; w < words; ++w) {
        const word = words === 1 ? v : `${v}.${'xyzw'[w]}`;
        for (let h = 0; h < 2; ++h)
          out += ` ${t}[buf * ${slab}u + ${(loadIndex * halves + 2 * w + h) * threads}u + lid] = bitcast<vec2<f16>>(${word}).${'xy'[h]};`;
      }
      return out + '\n';
    }
    if (colStride) {  // at / bt: half j of the chunk into row j
      for (let w = 0; w < words; ++w)
        out += ` { let h = bitcast<vec2<f16>>(${v}.${'xyzw'[w]}); ${t}[d + ${2 * w * colStride}u] = h.x; ${t}[d + ${(2 * w + 1) * colStride}u] = h.y; }`;
      return out + '\n';
    }
    if (o.rot && (words === 4 || words === 2)) {
      out += ` let r = ${rankTable}(lid % 32u);`;
      out += words === 4
        ? ` let v1 = select(${v}, ${v}.yzwx, (r & 1u) != 0u); let v2 = select(v1, v1.zwxy, (r & 2u) != 0u);`
        : ` let v2 = select(${v}, ${v}.yx, r != 0u);`;
      for (let w = 0; w < words; ++w)
        out += ` { let w = (${w}u + r) & ${words - 1}u; let h = bitcast<vec2<f16>>(v2.${'xyzw'[w]}); ${t}[d + 2u * w] = h.x; ${t}[d + 2u * w + 1u] = h.y; }`;
      return out + '\n';
    }
    if (o.perm && words === 4) {
      out += ` let k = ${rankTable}(lid % 32u);`;
      for (let j = 0; j < 8; ++j)
        out += ` { let w = (${j >> 1}u + k) & 3u; ${t}[d + 2u * w + ${j & 1}u] = bitcast<vec2<f16>>(${v}[w]).${'xy'[j & 1]}; }`;
      return out + '\n';
    }
    for (let w = 0; w < words; ++w) {
      const word = words === 1 ? v : `${v}.${'xyzw'[w]}`;
      out += ` { let h = bitcast<vec2<f16>>(${word}); ${t}[d + ${2 * w}u] = h.x; ${t}[d + ${2 * w + 1}u] = h.y; }`;
    }
    return out + '\n';
  };
  if (!Number.isInteger(aLoads) || !Number.isInteger(bLoads) || !Number.isInteger(am) || !Number.isInteger(an))
    throw new Error('tile ' + spec + ' does not divide evenly');
  if ((o.at || o.bt) && (words !== 4 || o.edge || o.af32 || o.bdirect || o.mstage))
    throw new Error('at / bt need 16-byte loads of f16 data, no edge, bdirect or mstage');
  if (o.sd && !o.pf) throw new Error('sd needs pf');
  const bufs = o.db ? 2 : 1;
  const aSlab = o.tm * sa, bSlab = o.ks * sb;
  let decl = '', mma = '', store = '', loads = '', direct = '';
  for (let i = 0; i < am; ++i) for (let j = 0; j < an; ++j) {
    decl += o.edge && o.estore === 1
      ? `  var acc${i}_${j} = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&biasm, col0 + ${16 * j}u, false, p.np);\n`
      : `  var acc${i}_${j} = subgroup_matrix_result<f32, 16, 16>();\n`;
    mma += `      acc${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}_${j});\n`;
    if (o.edge && o.estore === 2) {
      store += `  subgroupMatrixStore(&bounce, sid * 256u, acc${i}_${j}, false, 16u);
  workgroupBarrier();
  for (var e = lid; e < ${o.sg * 256}u; e += ${threads}u) {
    let s = e / 256u; let w = e % 256u;
    let row = wg.y * ${o.tm}u + (s / ${sgc}u) * ${wm}u + ${16 * i}u + w / 16u;
    let col = wg.x * ${o.tn}u + (s % ${sgc}u) * ${wn}u + ${16 * j}u + w % 16u;
    if (row < p.m && col < p.n) { c[row * p.n + col] = bounce[e] + bias[col]; }
  }
  workgroupBarrier();\n`;
    } else if (o.edge) {
      // Uniform: every subgroup stores its (i, j) accumulator, then its own lanes copy it out.
      const biasTerm = o.estore === 1 ? '' : ' + bias[col]';
      store += `  subgroupMatrixStore(&bounce, sid * 256u, acc${i}_${j}, false, 16u);
  workgroupBarrier();
  for (var e = sl; e < 256u; e += sgsize) {
    let row = row0 + ${16 * i}u + e / 16u; let col = col0 + ${16 * j}u + e % 16u;
    if (row < p.m && col < p.n) { c[row * p.n + col] = bounce[sid * 256u + e]${biasTerm}; }
  }
  workgroupBarrier();\n`;
      direct += `    subgroupMatrixStore(&c, (row0 + ${16 * i}u) * p.n + col0 + ${16 * j}u, acc${i}_${j}, false, p.n);\n`;
    } else {
      store += `  subgroupMatrixStore(&c, (row0 + ${16 * i}u) * p.n + col0 + ${16 * j}u, acc${i}_${j}, false, p.n);\n`;
    }
  }
  for (let i = 0; i < am; ++i)
    loads += `      let l${i} = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&ta, abase + (srow + ${16 * i}u) * ${sa}u + kk, false, ${sa}u);\n`;
  for (let j = 0; j < an; ++j) {
    loads += o.bdirect
      ? `      let r${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&bh, (((k0 + kk) / 16u) * (p.n / 16u) + col0 / 16u + ${j}u) * 256u, false, 16u);\n`
      : `      let r${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&tb, bbase + kk * ${sb}u + scol + ${16 * j}u, false, ${sb}u);\n`;
  }
  // Registers of one slab's global loads, then their stores into buffer `buf`.
  let fetch = '', put = '', fetchB = '', putB = '', fold = '';
  // sd=1: a loaded value's words xor-ed together (keeps the loads live without storing them).
  const foldWords = (v, n, f32) => {
    const c = (w) => (n === 1 ? v : `${v}.${'xyzw'[w]}`);
    return Array.from({ length: n }, (_, w) => (f32 ? `bitcast<u32>(${c(w)})` : c(w))).join(' ^ ');
  };
  const aChunksPerRow = o.ks / aPer, bChunksPerRow = o.tn / halves;
  for (let t = 0; t < aLoads; ++t) {
    fetch += `    let ca${t} = (${t}u * ${threads}u + lid);\n`;
    if (o.edge && o.eguard) {
      const zero = o.af32 ? 'vec4<f32>()' : `${wordType}()`;
      fetch += `    { let r = min(wg.y * ${o.tm}u + ca${t} / ${aChunksPerRow}u, p.m - 1u);\n`;
      fetch += `      ga${t} = select(${zero}, av[(r * p.k + k0 + (ca${t} % ${aChunksPerRow}u) * ${aPer}u) / ${aPer}u], wg.y * ${o.tm}u + ca${t} / ${aChunksPerRow}u < p.m); }\n`;
    } else if (o.at) {
      fetch += `    ga${t} = av[(wg.y * ${o.tm / 8}u + ca${t} / ${o.ks}u) * p.k + k0 + ca${t} % ${o.ks}u];\n`;
    } else {
      fetch += `    ga${t} = av[((wg.y * ${o.tm}u + ca${t} / ${aChunksPerRow}u) * p.k + k0 + (ca${t} % ${aChunksPerRow}u) * ${aPer}u) / ${aPer}u];\n`;
    }
    const dst = o.at ? `buf * ${aSlab}u + (ca${t} / ${o.ks}u) * ${8 * sa}u + ca${t} % ${o.ks}u`
                     : `buf * ${aSlab}u + (ca${t} / ${aChunksPerRow}u) * ${sa}u + (ca${t} % ${aChunksPerRow}u) * ${aPer}u`;
    put += `    { let ca${t} = (${t}u * ${threads}u + lid); let d = ${dst};\n`;
    if (o.af32) {
      put += `      ta[d] = f16(ga${t}.x); ta[d + 1u] = f16(ga${t}.y); ta[d + 2u] = f16(ga${t}.z); ta[d + 3u] = f16(ga${t}.w); }\n`;
    } else {
      put += `     ${storeHalves('ta', `ga${t}`, 'RANK_A', t, o.at ? sa : 0)}    }\n`;
    }
    if (o.sd === 1) fold += ` sink ^= ${foldWords(`ga${t}`, o.af32 ? 4 : words, o.af32)};`;
  }
  for (let t = 0; t < (o.bdirect ? 0 : bLoads); ++t) {
    fetchB += `    let cb${t} = (${t}u * ${threads}u + lid);\n`;
    fetchB += o.bt
      ? `    gb${t} = bv[(k0 / 8u + cb${t} / ${o.tn}u) * p.n + wg.x * ${o.tn}u + cb${t} % ${o.tn}u];\n`
      : `    gb${t} = bv[((k0 + cb${t} / ${bChunksPerRow}u) * ${o.edge ? 'p.np' : 'p.n'} + wg.x * ${o.tn}u + (cb${t} % ${bChunksPerRow}u) * ${halves}u) / ${halves}u];\n`;
    const dst = o.bt ? `buf * ${bSlab}u + (cb${t} / ${o.tn}u) * ${8 * sb}u + cb${t} % ${o.tn}u`
                     : `buf * ${bSlab}u + (cb${t} / ${bChunksPerRow}u) * ${sb}u + (cb${t} % ${bChunksPerRow}u) * ${halves}u`;
    putB += `    { let cb${t} = (${t}u * ${threads}u + lid); let d = ${dst};\n`;
    putB += `     ${storeHalves('tb', `gb${t}`, 'RANK_B', t, o.bt ? sb : 0)}    }\n`;
    if (o.sd === 1) fold += ` sink ^= ${foldWords(`gb${t}`, words, false)};`;
  }
  let regs = '';
  for (let t = 0; t < aLoads; ++t) regs += `  var ga${t}: ${o.af32 ? 'vec4<f32>' : wordType};\n`;
  for (let t = 0; t < (o.bdirect ? 0 : bLoads); ++t) regs += `  var gb${t}: ${wordType};\n`;
  const fn = o.mstage ? '' : `fn fetch_slab(k0: u32, lid: u32, wg: vec3u) {\n${fetch}${fetchB}}\nfn put_slab(buf: u32, lid: u32) {\n${put}${putB}}\n` +
    `fn fetch_a(k0: u32, lid: u32, wg: vec3u) {\n${fetch}}\nfn put_a(buf: u32, lid: u32) {\n${put}}\n` +
    `fn fetch_b(k0: u32, lid: u32, wg: vec3u) {\n${fetchB}}\nfn put_b(buf: u32, lid: u32) {\n${putB}}\n`;
  const mmaOnce = `    { let l = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&ta, srow * ${sa}u, false, ${sa}u);
      let r = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&tb, scol, false, ${sb}u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l, r, acc0_0); }\n`;
  const compute = `    let abase = cur * ${aSlab}u; let bbase = cur * ${bSlab}u;
    for (var kk = 0u; kk < ${o.ks}u; kk += 16u) {
${loads}${mma}    }\n`;
  let mdecl = '', mfetch = '', mput = '';
  if (o.mstage) {
    const kbs = o.ks / 16, nA = (o.tm / 16) * kbs / o.sg, nB = kbs * (o.tn / 16) / o.sg;
    if (!Number.isInteger(nA) || !Number.isInteger(nB)) throw new Error('mstage: blocks do not divide over subgroups');
    for (let i = 0; i < nA; ++i) {
      mdecl += `  var ma${i}: subgroup_matrix_left<f16, 16, 16>;\n`;
      mfetch += `    { let q = sid * ${nA}u + ${i}u; ma${i} = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a16, (wg.y * ${o.tm}u + (q / ${kbs}u) * 16u) * p.k + KZ + (q % ${kbs}u) * 16u, false, p.k); }\n`;
      mput += `    { let q = sid * ${nA}u + ${i}u; subgroupMatrixStore(&ta, (q / ${kbs}u) * ${16 * sa}u + (q % ${kbs}u) * 16u, ma${i}, false, ${sa}u); }\n`;
    }
    const cbs = o.tn / 16;
    for (let j = 0; j < nB; ++j) {
      mdecl += `  var mb${j}: subgroup_matrix_right<f16, 16, 16>;\n`;
      mfetch += `    { let q = sid * ${nB}u + ${j}u; mb${j} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&b16, (KZ + (q / ${cbs}u) * 16u) * p.n + wg.x * ${o.tn}u + (q % ${cbs}u) * 16u, false, p.n); }\n`;
      mput += `    { let q = sid * ${nB}u + ${j}u; subgroupMatrixStore(&tb, (q / ${cbs}u) * ${16 * sb}u + (q % ${cbs}u) * 16u, mb${j}, false, ${sb}u); }\n`;
    }
  }
  // The next slab's global loads in flight during this slab's products (pf), the slab staged as subgroup
  // matrices with mstage: one loop, the fetch and the store of either form.
  const fetchAt = (k) => (o.mstage ? mfetch.replaceAll('KZ', k) : `    fetch_slab(${k}, lid, wg);\n`);
  const putSlab = o.mstage ? mput : '    put_slab(0u, lid);\n';
  const loopBarrier = o.sd === 3 ? '' : '    workgroupBarrier();\n';
  const loop = o.mstage || o.pf
    ? `${mdecl}${fetchAt('0u')}${putSlab}  workgroupBarrier();
  let cur = 0u;
  for (var k0 = 0u; k0 < p.k; k0 += ${o.ks}u) {
    let more = k0 + ${o.ks}u < p.k;
    if (more) {
${fetchAt(`(k0 + ${o.ks}u)`)}    }
${compute}${loopBarrier}    if (more) {
${o.sd === 1 ? `   ${fold}\n` : putSlab}    }
${loopBarrier}  }\n${o.sd === 1 ? '  if (sink == 0x9e3779b9u) { c[0] = 1.0; }\n' : ''}`
    : o.nostage
    ? `  fetch_slab(0u, lid, wg);
  put_slab(0u, lid);
  workgroupBarrier();
  let cur = 0u;
  for (var k0 = 0u; k0 < p.k; k0 += ${o.ks}u) {
${compute}  }\n`
    : o.nomma
    ? `  for (var k0 = 0u; k0 < p.k; k0 += ${o.ks}u) {
    fetch_slab(k0, lid, wg);
    put_slab(0u, lid);
    workgroupBarrier();
${mmaOnce}    workgroupBarrier();
  }\n`
    : o.halves
    ? `  let cur = 0u;
  for (var k0 = 0u; k0 < p.k; k0 += ${o.ks}u) {
    fetch_a(k0, lid, wg);
    put_a(0u, lid);
    fetch_b(k0, lid, wg);
    put_b(0u, lid);
    workgroupBarrier();
${compute}    workgroupBarrier();
  }\n`
    : o.db
    ? `  fetch_slab(0u, lid, wg);
  put_slab(0u, lid);
  workgroupBarrier();
  var cur = 0u;
  for (var k0 = 0u; k0 < p.k; k0 += ${o.ks}u) {
    let more = k0 + ${o.ks}u < p.k;
    if (more) { fetch_slab(k0 + ${o.ks}u, lid, wg); }
${compute}    if (more) { put_slab(1u - cur, lid); }
    workgroupBarrier();
    cur = 1u - cur;
  }\n`
    : `  let cur = 0u;
  for (var k0 = 0u; k0 < p.k; k0 += ${o.ks}u) {
    fetch_slab(k0, lid, wg);
    put_slab(0u, lid);
    workgroupBarrier();
${compute}    workgroupBarrier();
  }\n`;
  return {
    TM: o.tm, TN: o.tn, KS: o.ks, threads, diagnostic: !!(o.nostage || o.nomma || o.sd), af32: !!o.af32,
    aCols8: !!o.at, bCols8: !!o.bt, bBlocks: !!o.bdirect, edge: !!o.edge,
    padRows: !!o.edge && !o.eguard, biasRows: !!o.edge && o.estore === 1,
    code: `enable f16;
enable chromium_experimental_subgroup_matrix;${o.edge ? '\nenable subgroups;' : ''}
struct Params { m: u32, n: u32, k: u32, np: u32 }
${o.mstage ? `@group(0) @binding(0) var<storage, read> a16: array<f16>;
@group(0) @binding(1) var<storage, read> b16: array<f16>;` : `@group(0) @binding(0) var<storage, read> av: array<${o.af32 ? 'vec4<f32>' : wordType}>;
@group(0) @binding(1) var<storage, read> ${o.bdirect ? 'bh: array<f16>' : `bv: array<${wordType}>`};`}
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
${o.edge ? `@group(0) @binding(4) var<storage, read> bias: array<f32>;
var<workgroup> bounce: array<f32, ${o.sg * 256}>;` : ''}${o.edge && o.estore === 1 ? `
@group(0) @binding(5) var<storage, read> biasm: array<f32>;` : ''}
var<workgroup> ta: array<f16, ${bufs * aSlab}>;
${o.bdirect ? '' : `var<workgroup> tb: array<f16, ${bufs * bSlab}>;`}
${o.perm || o.rot ? `${rankFn('RANK_A', bankRanks(aChunksPerRow, sa, 2 * aPer))}${rankFn('RANK_B', bankRanks(bChunksPerRow, sb, 2 * halves))}` : ''}${o.sd === 1 ? 'var<private> sink: u32;\n' : ''}${o.mstage ? '' : regs.replace(/  var /g, 'var<private> ')}${fn}
@compute @workgroup_size(${threads})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(subgroup_id) sid: u32,
        @builtin(local_invocation_index) lid: u32${o.edge ? `,
        @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) sgsize: u32` : ''}) {
  let srow = (sid / ${sgc}u) * ${wm}u;
  let scol = (sid % ${sgc}u) * ${wn}u;
  let row0 = wg.y * ${o.tm}u + srow;
  let col0 = wg.x * ${o.tn}u + scol;
${decl}${loop}${o.edge && o.estore === 1 ? `  if ((wg.y + 1u) * ${o.tm}u <= p.m && (wg.x + 1u) * ${o.tn}u <= p.n) {\n${direct}    return;\n  }\n` : ''}${store}}`,
  };
}

async function probe(variant) {
  const { code, TM, TN, KS, af32, bBlocks, edge, padRows, biasRows, diagnostic, aCols8, bCols8 } =
    variant.startsWith('tile:') ? tileKernel(variant.slice(5)) : kernel(variant);
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
    // With edge: A [M, Kp] and B [Kp, Np] zero-padded (Kp, Np: K and N rounded up to the slab and the tile).
    const Kp = edge ? Math.ceil(K / KS) * KS : K, Np = edge ? Math.ceil(N / TN) * TN : N;
    const ah = randomHalves(M * K, 1234 + M), bh = randomHalves(K * N, 99 + N);
    const bias = edge ? Float32Array.from(randomHalves(N, 7 + N), fromHalf) : null;
    const pad = (x, rows, cols, stride) => {
      if (stride === cols) return x;
      const out = new Uint16Array(rows * stride);
      for (let r = 0; r < rows; ++r) out.set(x.subarray(r * cols, (r + 1) * cols), r * stride);
      return out;
    };
    const ap0 = pad(ah, M, K, Kp);
    // Unguarded A loads read whole tiles of rows: the rows past M are zeros in memory.
    const ap = padRows ? new Uint16Array(Math.ceil(M / TM) * TM * Kp) : ap0;
    if (padRows) ap.set(ap0);
    const bpad = new Uint16Array(Kp * Np);
    bpad.set(pad(bh, K, N, Np));
    const mk = (data, usage) => {
      const buf = device.createBuffer({ size: Math.max(16, data.byteLength), usage: usage | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(buf, 0, data);
      return buf;
    };
    const ba = mk(af32 ? Float32Array.from(ap, fromHalf) : aCols8 ? columnChunks8(ap, M, K) : ap, GPUBufferUsage.STORAGE);
    const bb = mk(bBlocks ? blocked16(bh, K, N) : bCols8 ? columnChunks8(bh, K, N) : edge ? bpad : bh, GPUBufferUsage.STORAGE);
    const bc = device.createBuffer({ size: M * N * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const bp = mk(new Uint32Array([M, N, Kp, Np]), GPUBufferUsage.UNIFORM);
    const entries = [
      { binding: 0, resource: { buffer: ba } }, { binding: 1, resource: { buffer: bb } },
      { binding: 2, resource: { buffer: bc } }, { binding: 3, resource: { buffer: bp } }];
    // With the bias rows the bounce adds no bias: binding 4 is unused (and absent from the 'auto' layout).
    if (edge && !biasRows) entries.push({ binding: 4, resource: { buffer: mk(bias, GPUBufferUsage.STORAGE) } });
    if (biasRows) {
      const rows = new Float32Array(16 * Np);
      for (let r = 0; r < 16; ++r) rows.set(bias, r * Np);
      entries.push({ binding: 5, resource: { buffer: mk(rows, GPUBufferUsage.STORAGE) } });
    }
    const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
    const groupsX = Math.ceil(N / TN), groupsY = Math.ceil(M / TM);
    const querySet = timestamps ? device.createQuerySet({ type: 'timestamp', count: 2 }) : null;
    const resolved = timestamps ? device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC }) : null;
    const stamps = timestamps ? device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }) : null;
    // Milliseconds of GPU time of one pass of `count` dispatches.
    const gpuTime = async (count) => {
      const e = device.createCommandEncoder();
      const pass = e.beginComputePass({ timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } });
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bind);
      for (let i = 0; i < count; ++i) pass.dispatchWorkgroups(groupsX, groupsY);
      pass.end();
      e.resolveQuerySet(querySet, 0, 2, resolved, 0);
      e.copyBufferToBuffer(resolved, 0, stamps, 0, 16);
      device.queue.submit([e.finish()]);
      await stamps.mapAsync(GPUMapMode.READ);
      const t = new BigInt64Array(stamps.getMappedRange().slice(0));
      stamps.unmap();
      return Number(t[1] - t[0]) / 1e6;
    };
    const submit = (count) => {
      const e = device.createCommandEncoder();
      const pass = e.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bind);
      for (let i = 0; i < count; ++i) pass.dispatchWorkgroups(groupsX, groupsY);
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
        let want = edge ? bias[n] : 0, scale = Math.abs(want);
        for (let k = 0; k < K; ++k) { const t = af[m * K + k] * bf[k * N + n]; want += t; scale += Math.abs(t); }
        const err = Math.abs(got[m * N + n] - want) / Math.max(scale, 1e-30);
        if (!(err <= worst)) { worst = err; worstAt = m * N + n; }
      }
      return { worst, worstAt };
    }
    // The GPU's clocks fall to a few hundred MHz within a second of idling (the host's float64 checks, a
    // pipeline's compilation) and take a few hundred ms of load to come back: keep it busy first.
    const warmEnd = performance.now() + 400;
    while (performance.now() < warmEnd) await submit(reps);
    const times = [];
    for (let i = 0; i < 7; ++i) {
      if (timestamps) {
        times.push((await gpuTime(reps)) / reps);
      } else {
        const t0 = performance.now(); await submit(reps); times.push((performance.now() - t0) / reps);
      }
    }
    times.sort((x, y) => x - y);
    return { ms: times[3], tflops: 2 * M * N * K / times[3] / 1e9 };
  };
  // Float32 accumulation of f16 products: error ~K * 2^-24 of the sum of magnitudes; 1e-5 is far above it and
  // far below a wrong tile (garbage or a missed K slab gives errors of order 1).
  const checks = edge ? [[577, 768, 768], [100, 200, 72], [2 * TM, 2 * TN, 8 * KS], [300, 261, 136], [256, 380, 64]]
                      : [[2 * TM, 2 * TN, 8 * KS], [3 * TM, 3 * TN, 5 * KS]];
  for (const [M, N, K] of diagnostic ? [] : checks) {
    const { worst, worstAt } = await run(M, N, K, 1, true);
    say(`  ${variant} ${M}x${N}x${K}: worst error / sum|a b| ${worst.toExponential(2)} at ${worstAt} ${worst < 1e-5 ? 'ok' : 'WRONG'}`);
    if (!(worst < 1e-5)) return;
  }
  for (const size of (process.env.SGM_SIZES ?? '4096').split(',').map(Number)) {
    const { ms, tflops } = await run(size, size, size, size === 4096 ? 10 : 20, false);
    say(`  ${variant} ${size}^3: ${ms.toFixed(3)} ms, ${tflops.toFixed(1)} TFLOP/s`);
  }
  // The GEMMs of the target models (SigLIP-B's 197 tokens at batch 1 and 8, DaViT-base's largest stage).
  for (const [M, N, K] of edge ? [[197, 3072, 768], [1576, 3072, 768], [1576, 768, 3072], [2304, 1024, 1024]] : []) {
    const { ms, tflops } = await run(M, N, K, 20, false);
    say(`  ${variant} ${M}x${N}x${K}: ${ms.toFixed(4)} ms, ${tflops.toFixed(1)} TFLOP/s`);
  }
}

say(`adapter: ${adapter.info?.vendor ?? ''} ${adapter.info?.architecture ?? ''} ${adapter.info?.description ?? ''}`);
say(`toggles ${toggles}`);
say(`maxComputeWorkgroupStorageSize ${adapter.limits.maxComputeWorkgroupStorageSize}; times from ${timestamps ? 'timestamp queries (GPU)' : 'the wall clock'}`);
for (const variant of wanted.length ? wanted : ['direct', 'staged', 'staged8']) {
  say(`variant ${variant} (${(performance.now() / 1000).toFixed(1)} s)`);
  try {
    await probe(variant);
  } catch (e) {
    say(`  ${variant} threw: ${e?.message ?? e}`);
  }
}
process.exit(0);
