// wgi on Node.js: the WebAssembly build (build/web/wgi.{js,wasm}) with dawn.node (npm `webgpu`, Dawn's Node.js
// binding, installed by scripts/setup into third_party/dawn-node) as navigator.gpu. The API is web/wgi.mjs's,
// unchanged; this module only provides the GPU and loads the module from files (docs/node.md).
//
//   import * as wgi from './web/node.mjs';
//   await wgi.setup({toggles: ['allow_unsafe_apis']});   // optional: Session.create calls it with defaults
//   const session = await wgi.Session.create(fs.readFileSync('model.onnx'));
//   const out = await session.run({x: {data: new Float32Array(4), dims: [1, 4]}});
//   wgi.shutdown();   // drops navigator.gpu: dawn.node keeps the process alive while it is referenced
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';
import * as wgi from './wgi.mjs';

export {webgpuAvailable} from './wgi.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_DAWN_NODE = path.join(repo, 'third_party/dawn-node');
const DEFAULT_MODULE = path.join(repo, 'build/web/wgi.js');
const DEFAULT_SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const TIMESTAMP_QUANTISATION = 'timestamp_quantization';  // a Dawn toggle, disabled by default here

let state = null;  // {options, gpu} once setup() ran

function list(value) {
  if (value === undefined || value === null) return [];
  const items = Array.isArray(value) ? value : String(value).split(',');
  return items.map((s) => String(s).trim()).filter((s) => s);
}

// The options setup() uses: the given ones, else the environment (WGI_DAWN_TOGGLES, WGI_DAWN_DISABLE_TOGGLES,
// WGI_BACKEND, WGI_ADAPTER, WGI_DAWN_NODE, WGI_SWIFTSHADER_ICD), else the defaults.
export function resolveOptions(options = {}, env = process.env) {
  const backend = (options.backend ?? env.WGI_BACKEND ?? 'vulkan').toLowerCase() || 'vulkan';
  if (backend !== 'vulkan' && backend !== 'swiftshader') {
    throw new Error(`wgi node: backend '${backend}' is not available through dawn.node: expected vulkan or ` +
                    'swiftshader (the WebAssembly build asks for a core-feature adapter, which GL ES is not)');
  }
  const toggles = list(options.toggles ?? env.WGI_DAWN_TOGGLES);
  // Dawn rounds timestamps to 65.536 us by default (timing-attack hardening for the web), which makes the
  // per-node profiles of stats() coarse; native wgi disables it too (src/gpu/device.cpp). Enabling the toggle
  // keeps it.
  const disableToggles = list(options.disableToggles ?? env.WGI_DAWN_DISABLE_TOGGLES);
  if (!toggles.includes(TIMESTAMP_QUANTISATION) && !disableToggles.includes(TIMESTAMP_QUANTISATION))
    disableToggles.push(TIMESTAMP_QUANTISATION);
  return {
    backend,
    adapter: options.adapter ?? env.WGI_ADAPTER ?? '',
    toggles,
    disableToggles,
    dawnFlags: list(options.dawnFlags),
    dawnNode: options.dawnNode ?? env.WGI_DAWN_NODE ?? DEFAULT_DAWN_NODE,
    moduleUrl: options.moduleUrl === undefined ? pathToFileURL(DEFAULT_MODULE)
             : String(options.moduleUrl).startsWith('file:') ? new URL(String(options.moduleUrl))
             : pathToFileURL(path.resolve(String(options.moduleUrl))),
    swiftshaderIcd: options.swiftshaderIcd ?? env.WGI_SWIFTSHADER_ICD ?? DEFAULT_SWIFTSHADER_ICD,
  };
}

// dawn.node's create() flags for resolved options (its README lists them; toggles: Dawn's Toggles.cpp).
export function dawnFlags(o) {
  const flags = ['backend=vulkan'];  // never Dawn's Null backend, which answers with zeros (DESIGN.md)
  if (o.adapter) flags.push('adapter=' + o.adapter);
  if (o.toggles.length) flags.push('enable-dawn-features=' + o.toggles.join(','));
  if (o.disableToggles.length) flags.push('disable-dawn-features=' + o.disableToggles.join(','));
  return flags.concat(o.dawnFlags);
}

function sameOptions(a, b) {
  return JSON.stringify({...a, moduleUrl: String(a.moduleUrl)}) === JSON.stringify({...b, moduleUrl: String(b.moduleUrl)});
}

// Creates the dawn.node GPU, installs it (and the GPU* constants) as navigator.gpu, and loads the wasm module.
// Once per process: a second call with other options throws (the module and its GPU are process-wide); a call
// without options after the first returns the first one's result.
export async function setup(options = {}) {
  if (state && Object.keys(options).length === 0) return state;
  const o = resolveOptions(options);
  if (state) {
    if (!sameOptions(state.options, o)) {
      throw new Error('wgi node: setup() already ran with other options (' + dawnFlags(state.options).join(' ') +
                      '); the GPU is set up once per process');
    }
    return state;
  }
  const entry = path.join(o.dawnNode, 'index.js');
  if (!fs.existsSync(entry)) {
    throw new Error(`wgi node: dawn.node not found at ${o.dawnNode} (run scripts/setup, or set WGI_DAWN_NODE to ` +
                    'an unpacked npm `webgpu` package)');
  }
  const wasmPath = fileURLToPath(new URL('wgi.wasm', o.moduleUrl));
  if (!fs.existsSync(fileURLToPath(o.moduleUrl)) || !fs.existsSync(wasmPath)) {
    throw new Error(`wgi node: ${fileURLToPath(o.moduleUrl)} or ${wasmPath} missing: run scripts/build-web`);
  }
  if (o.backend === 'swiftshader') {
    if (!fs.existsSync(o.swiftshaderIcd)) {
      throw new Error(`wgi node: SwiftShader Vulkan ICD not found at ${o.swiftshaderIcd} (install Debian's ` +
                      'chromium package, run scripts/setup, or set WGI_SWIFTSHADER_ICD)');
    }
    // The Vulkan loader reads these when Dawn creates its instance (at create() / the first adapter request).
    process.env.VK_ICD_FILENAMES = o.swiftshaderIcd;
    process.env.VK_DRIVER_FILES = o.swiftshaderIcd;
  }
  const {create, globals} = await import(pathToFileURL(entry).href);
  for (const [name, value] of Object.entries(globals)) {
    if (!(name in globalThis)) globalThis[name] = value;
  }
  const gpu = create(dawnFlags(o));
  if (typeof globalThis.navigator === 'undefined') {
    Object.defineProperty(globalThis, 'navigator', {value: {}, configurable: true, writable: true});
  }
  Object.defineProperty(globalThis.navigator, 'gpu', {value: gpu, configurable: true, writable: true});
  await wgi.init(o.moduleUrl, {wasmBinary: fs.readFileSync(wasmPath)});
  state = {options: o, gpu};
  return state;
}

// The adapter wgi's module gets (the same request as src/gpu/web/webgpu.js): its info, features and limits.
export async function adapterInfo() {
  const {gpu} = await setup();
  const adapter = await gpu.requestAdapter({powerPreference: 'high-performance'});
  if (!adapter) throw new Error('wgi node: dawn.node returned no adapter for flags ' + dawnFlags(state.options).join(' '));
  const info = adapter.info;
  const limits = {};
  for (const key in adapter.limits) limits[key] = adapter.limits[key];
  return {
    vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description,
    subgroupMinSize: info.subgroupMinSize, subgroupMaxSize: info.subgroupMaxSize,
    subgroupMatrixConfigs: (info.subgroupMatrixConfigs || []).map(
        (c) => `${c.componentType}->${c.resultComponentType} ${c.M}x${c.N}x${c.K}`),
    features: [...adapter.features].sort(), limits, flags: dawnFlags(state.options),
  };
}

// The external data locations an ONNX model's bytes name (initializers, sparse initializers, tensor attributes,
// subgraphs), found by walking the protobuf fields that can hold a TensorProto; nothing else is decoded.
export function externalDataLocations(bytes) {
  const found = new Set();
  // Calls visit(field, start, end) for each length-delimited field of the message in bytes[start, end).
  const fields = (start, end, visit) => {
    let p = start;
    const varint = () => {
      let v = 0, scale = 1;
      for (;;) {
        if (p >= end) throw new Error('wgi node: the model is not a valid ONNX protobuf (truncated varint)');
        const b = bytes[p++];
        v += (b & 0x7f) * scale;
        if (!(b & 0x80)) return v;
        scale *= 128;
      }
    };
    while (p < end) {
      const key = varint(), field = Math.floor(key / 8), wire = key % 8;
      if (wire === 0) varint();
      else if (wire === 1) p += 8;
      else if (wire === 5) p += 4;
      else if (wire === 2) {
        const n = varint();
        if (p + n > end) throw new Error('wgi node: the model is not a valid ONNX protobuf (field past its end)');
        visit(field, p, p + n);
        p += n;
      } else {
        throw new Error(`wgi node: the model is not a valid ONNX protobuf (wire type ${wire})`);
      }
    }
  };
  const text = (start, end) => new TextDecoder().decode(bytes.subarray(start, end));
  const tensor = (s, e) => fields(s, e, (f, a, b) => {
    if (f !== 13) return;  // external_data: StringStringEntryProto {key = 1, value = 2}
    let key = '', value = '';
    fields(a, b, (g, c, d) => { if (g === 1) key = text(c, d); else if (g === 2) value = text(c, d); });
    if (key === 'location' && value) found.add(value);
  });
  const sparse = (s, e) => fields(s, e, (f, a, b) => { if (f === 1 || f === 2) tensor(a, b); });
  const graph = (s, e) => fields(s, e, (f, a, b) => {
    if (f === 5) tensor(a, b);
    else if (f === 15) sparse(a, b);
    else if (f === 1) fields(a, b, (g, c, d) => { if (g === 5) attribute(c, d); });  // node.attribute
  });
  const attribute = (s, e) => fields(s, e, (f, a, b) => {
    if (f === 5 || f === 10) tensor(a, b);
    else if (f === 6 || f === 11) graph(a, b);
    else if (f === 22 || f === 23) sparse(a, b);
  });
  fields(0, bytes.length, (f, a, b) => { if (f === 7) graph(a, b); });
  return [...found];
}

// Reads an .onnx file and the external data files it names that exist next to it (a missing one is left to
// the importer, whose error names the tensor): {bytes, externalData} for Session.create.
export function readModelFiles(file) {
  const bytes = new Uint8Array(fs.readFileSync(file));
  const externalData = {};
  let locations = [];
  try {
    locations = externalDataLocations(bytes);
  } catch {
    return {bytes, externalData};  // not a valid protobuf: the importer says what is wrong with it
  }
  for (const location of locations) {
    // Absolute or '..' locations are refused by the importer with a message naming the tensor.
    if (path.isAbsolute(location) || location.split(/[\\/]/).includes('..')) continue;
    const full = path.join(path.dirname(file), location);
    if (fs.existsSync(full) && fs.statSync(full).isFile()) externalData[location] = fs.readFileSync(full);
  }
  return {bytes, externalData};
}

// web/wgi.mjs's Session; create() first sets up the GPU with the defaults (and the environment) when setup() was
// not called. The sessions it returns are web/wgi.mjs's Session objects.
export class Session extends wgi.Session {
  static async create(bytes, options = {}) {
    await setup();
    return wgi.Session.create(bytes, options);
  }
}

// Drops the reference to the dawn.node GPU so that the process can exit (Sessions must be freed first).
export function shutdown() {
  if (globalThis.navigator) delete globalThis.navigator.gpu;
  if (state) state.gpu = null;
}
