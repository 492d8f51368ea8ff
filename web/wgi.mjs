// wgi in the browser: the JavaScript API over the WebAssembly build (build/web/wgi.js + wgi.wasm, made by
// scripts/build-web). The engine inside is the same C++ as the native one; WebGPU comes from the page.
//
//   import * as wgi from './wgi.mjs';
//   const session = await wgi.Session.create(new Uint8Array(await (await fetch('model.onnx')).arrayBuffer()));
//   const out = await session.run({x: {data: new Float32Array(3 * 224 * 224), dims: [1, 3, 224, 224]}});
//   out.y.data, out.y.dims, out.y.dtype
//
// The module suspends its C++ stack while waiting for the GPU (Asyncify), so only one call may be inside it at
// a time: every asynchronous call here is queued behind the previous one.

const DEFAULT_MODULE_URL = new URL('../build/web/wgi.js', import.meta.url);

let modulePromise = null;
let queue = Promise.resolve();

// Runs fn after every call queued before it, whether those succeeded or not.
function serialized(fn) {
  const result = queue.then(fn, fn);
  queue = result.catch(() => {});
  return result;
}

// Whether this browser exposes WebGPU at all (it may still fail to give an adapter).
export function webgpuAvailable() {
  return typeof navigator !== 'undefined' && !!navigator.gpu;
}

// Loads the WebAssembly module; called by Session.create with the default location. `url` points at wgi.js
// (wgi.wasm is expected next to it). `settings` are extra Emscripten module settings (web/node.mjs passes the
// wasm bytes as wasmBinary: Node's fetch cannot read files). The first call decides; later ones share it.
export function init(url = DEFAULT_MODULE_URL, settings = {}) {
  if (!modulePromise) {
    modulePromise = import(url.toString()).then((m) =>
      m.default({locateFile: (file) => new URL(file, url).toString(), ...settings}));
  }
  return modulePromise;
}

const ARRAY_TYPES = {
  float32: Float32Array,
  float16: Uint16Array,  // raw IEEE half bits
  int64: BigInt64Array,
  int32: Int32Array,
  int8: Int8Array,
  uint8: Uint8Array,
  bool: Uint8Array,
};

function dtypeOf(data) {
  if (data instanceof Float32Array) return 'float32';
  if (data instanceof BigInt64Array) return 'int64';
  if (data instanceof Int32Array) return 'int32';
  if (data instanceof Int8Array) return 'int8';
  if (data instanceof Uint8Array) return 'uint8';
  throw new Error('wgi: input data must be a Float32Array, BigInt64Array, Int32Array, Int8Array or Uint8Array ' +
                  '(or give dtype explicitly)');
}

function lastError(M) {
  return M.UTF8ToString(M._wgi_web_last_error());
}

let externalDirs = 0;

// Writes external data files into a fresh folder of the module's in-memory file system: {dir, paths} or null.
function writeExternalData(M, externalData) {
  if (!externalData || !Object.keys(externalData).length) return null;
  const dir = `/wgi-external/${++externalDirs}`;
  const paths = [];
  for (const [location, bytes] of Object.entries(externalData)) {
    const parts = location.split('/');
    if (!location || location.startsWith('/') || parts.includes('..')) {
      throw new Error(`wgi: externalData location '${location}' must be a relative path inside the model's folder`);
    }
    let folder = dir;
    for (const part of parts.slice(0, -1)) folder += '/' + part;
    M.FS.mkdirTree(folder);
    const path = `${dir}/${location}`;
    M.FS.writeFile(path, bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes));
    paths.push(path);
  }
  return {dir, paths};
}

// A model loaded on the page's GPU.
export class Session {
  // bytes: Uint8Array/ArrayBuffer of an ONNX model.
  // options.profiling: per-node GPU times in stats().profile when the adapter has timestamp queries.
  // options.externalData: {location: Uint8Array} — the model's external weight files, each under the location
  //   the model names (e.g. {'model.onnx.data': bytes}); they are read while the session is created.
  static async create(bytes, options = {}) {
    const M = await init(options.moduleUrl);
    if (!webgpuAvailable()) {
      throw new Error('WebGPU is not available in this browser (navigator.gpu is undefined); wgi needs a ' +
                      'browser with WebGPU enabled, on https or localhost');
    }
    const data = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    return serialized(async () => {
      const files = writeExternalData(M, options.externalData);
      const ptr = M._malloc(Math.max(1, data.length));
      M.HEAPU8.set(data, ptr);
      const dir = new TextEncoder().encode((files ? files.dir : '') + '\0');
      const dirPtr = M._malloc(dir.length);
      M.HEAPU8.set(dir, dirPtr);
      let handle = 0;
      try {
        handle = await M.ccall('wgi_web_session_create', 'number', ['number', 'number', 'number', 'number'],
                               [ptr, data.length, options.profiling ? 1 : 0, dirPtr], {async: true});
      } finally {
        M._free(ptr);
        M._free(dirPtr);
        if (files) for (const f of files.paths) M.FS.unlink(f);  // the importer has read them
      }
      if (!handle) throw new Error(lastError(M));
      return new Session(M, handle);
    });
  }

  constructor(M, handle) {
    this.M = M;
    this.handle = handle;
    const info = JSON.parse(M.UTF8ToString(M._wgi_web_session_info(handle)));
    this.adapter = info.adapter;    // e.g. "(unnamed adapter) on WebGPU, CPU"
    this.inputs = info.inputs;      // [{name, dtype, dims, dim_names, rank_known}] (dims < 0: symbolic)
    this.outputs = info.outputs;
    this.maxBufferSize = info.max_buffer_size;  // the device's largest buffer, bytes
  }

  // feeds: {name: {data: TypedArray, dims: number[], dtype?: string}}. Returns {name: {data, dims, dtype}}.
  run(feeds) {
    return serialized(async () => {
      const M = this.M;
      if (!this.handle) throw new Error('wgi: session was freed');
      for (const [name, feed] of Object.entries(feeds)) {
        const dtype = feed.dtype || dtypeOf(feed.data);
        const bytes = new Uint8Array(feed.data.buffer, feed.data.byteOffset, feed.data.byteLength);
        const dims = Int32Array.from(feed.dims);
        const nameBytes = new TextEncoder().encode(name + '\0');
        const typeBytes = new TextEncoder().encode(dtype + '\0');
        const block = M._malloc(bytes.length + 4 * dims.length + nameBytes.length + typeBytes.length + 8);
        const dimsPtr = (block + 3) & ~3;
        const dataPtr = dimsPtr + 4 * dims.length;
        const namePtr = dataPtr + bytes.length;
        const typePtr = namePtr + nameBytes.length;
        M.HEAP32.set(dims, dimsPtr >> 2);
        M.HEAPU8.set(bytes, dataPtr);
        M.HEAPU8.set(nameBytes, namePtr);
        M.HEAPU8.set(typeBytes, typePtr);
        const rc = M._wgi_web_session_set_input(this.handle, namePtr, typePtr, dimsPtr, dims.length, dataPtr,
                                                bytes.length);
        M._free(block);
        if (rc !== 0) throw new Error(lastError(M));
      }
      const count = await M.ccall('wgi_web_session_run', 'number', ['number'], [this.handle], {async: true});
      if (count < 0) throw new Error(lastError(M));
      const outputs = {};
      for (let i = 0; i < count; ++i) {
        const info = JSON.parse(M.UTF8ToString(M._wgi_web_session_output_info(this.handle, i)));
        const ptr = M._wgi_web_session_output_data(this.handle, i);
        const size = M._wgi_web_session_output_bytes(this.handle, i);
        const Type = ARRAY_TYPES[info.dtype];
        // A copy: the wasm memory behind the output is reused by the next run.
        const copy = M.HEAPU8.slice(ptr, ptr + size);
        outputs[info.name] = {data: new Type(copy.buffer, 0, size / Type.BYTES_PER_ELEMENT), dims: info.dims,
                              dtype: info.dtype};
      }
      return outputs;
    });
  }

  // {load_ms, last_plan_ms, weight_bytes, peak_activation_bytes, plans, nodes, dispatches, pipelines,
  //  profile: [{node, op, kernel, gpu_ms}], profiling_note}
  stats() {
    return JSON.parse(this.M.UTF8ToString(this.M._wgi_web_session_stats(this.handle)));
  }

  free() {
    return serialized(async () => {
      if (this.handle) this.M._wgi_web_session_free(this.handle);
      this.handle = 0;
    });
  }
}
