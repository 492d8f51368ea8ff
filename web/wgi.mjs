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

// One WebGPU device that several sessions share (wgi::Environment, docs/environment.md): they compile each
// kernel once. Sessions made on it keep the device after free().
export class Environment {
  static async create(options = {}) {
    const M = await init(options.moduleUrl);
    if (!webgpuAvailable()) {
      throw new Error('WebGPU is not available in this browser (navigator.gpu is undefined); wgi needs a ' +
                      'browser with WebGPU enabled, on https or localhost');
    }
    return serialized(async () => {
      const handle = await M.ccall('wgi_web_environment_create', 'number', [], [], {async: true});
      if (!handle) throw new Error(lastError(M));
      return new Environment(M, handle);
    });
  }

  constructor(M, handle) {
    this.M = M;
    this.handle = handle;
  }

  free() {
    return serialized(async () => {
      if (this.handle) this.M._wgi_web_environment_free(this.handle);
      this.handle = 0;
    });
  }
}

// A model loaded on the page's GPU.
export class Session {
  // bytes: Uint8Array/ArrayBuffer of an ONNX model.
  // options.environment: a wgi.Environment whose device the session shares (default: a device of its own).
  // options.profiling: per-node GPU times in stats().profile when the adapter has timestamp queries.
  // options.precision: 'f32' (default) or 'f16': the GEMMs of constant weights and the large group-1 convs on
  //   subgroup matrices (tensor cores), f16 operands and f32 accumulation; refused on an adapter without
  //   shader-f16 and chromium-experimental-subgroup-matrix (docs/float16.md, "Computing in float16").
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
      const precision = new TextEncoder().encode((options.precision ?? 'f32') + '\0');
      const precisionPtr = M._malloc(precision.length);
      M.HEAPU8.set(precision, precisionPtr);
      let handle = 0;
      const environment = options.environment ? options.environment.handle : 0;
      try {
        if (options.environment && !environment) throw new Error('wgi: options.environment was freed');
        handle = await M.ccall('wgi_web_session_create', 'number',
                               ['number', 'number', 'number', 'number', 'number', 'number'],
                               [ptr, data.length, options.profiling ? 1 : 0, dirPtr, environment, precisionPtr],
                               {async: true});
      } finally {
        M._free(ptr);
        M._free(dirPtr);
        M._free(precisionPtr);
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
      this.#setInputs(feeds);
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

  // For timing the GPU's work without transfers (`node web/cli.mjs bench --device-inputs`): runs with the
  // inputs kept on the device and every output left there, not returned. `feeds` (as run's) are uploaded once
  // and reused by the calls that pass none. Resolves when the GPU is done.
  runOnDevice(feeds = null) {
    return serialized(async () => {
      const M = this.M;
      if (!this.handle) throw new Error('wgi: session was freed');
      if (feeds) this.#setInputs(feeds);
      const count = await M.ccall('wgi_web_session_run_on_device', 'number', ['number'], [this.handle],
                                  {async: true});
      if (count < 0) throw new Error(lastError(M));
    });
  }

  // Copies `feeds` into the wasm session as the next run's inputs.
  #setInputs(feeds) {
    const M = this.M;
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
  }

  // {load_ms, last_plan_ms, weight_bytes, peak_activation_bytes, plans, nodes, dispatches, pipelines (the
  //  device's), pipelines_compiled (by this session), profile: [{node, op, kernel, gpu_ms}], profiling_note}
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

// ---- Pipelines: a model folder in the module's in-memory file system (Emscripten's MEMFS), the C++ pipeline
// on it (web/wgi_web_pipelines.cpp), results as the CLI's --json: Florence2 and Siglip; another pipeline adds
// its file list, a class like these over its wgi_web_<name>_* functions, and reuses the rest.

// A model folder's files: `source` is a base URL (string or URL; the files are fetched relative to it), a
// FileList / array of File from a folder picker (<input type=file webkitdirectory>: paths below the picked
// folder), an object {relative path: Uint8Array | ArrayBuffer | Blob}, or a function (relative path) ->
// bytes or null (Node.js reads a folder on disk so: only the files the pipeline needs). `required` must all
// be there, `optional` may be missing; `alternatives` is a list of file lists, the first complete one is
// taken. Returns a Map of relative path -> Uint8Array.
async function folderFiles(source, {required, optional = [], alternatives = [[]]}, onProgress) {
  const files = new Map();
  const isUrl = typeof source === 'string' || source instanceof URL;
  let lookup;
  if (typeof source === 'function') {
    lookup = async (name) => {
      const value = await source(name);
      if (value === null || value === undefined) return null;
      if (value instanceof Uint8Array) return value;
      if (value instanceof ArrayBuffer) return new Uint8Array(value);
      throw new Error(`wgi: the folder function gave ${name} as neither a Uint8Array nor an ArrayBuffer`);
    };
  } else if (isUrl) {
    const base = new URL(source.toString().replace(/\/?$/, '/'), typeof location !== 'undefined' ? location.href : undefined);
    lookup = async (name) => {
      const response = await fetch(new URL(name, base));
      if (response.status === 404) return null;
      if (!response.ok) throw new Error(`wgi: ${new URL(name, base)}: HTTP ${response.status}`);
      return new Uint8Array(await response.arrayBuffer());
    };
  } else {
    const entries = new Map();
    const list = typeof FileList !== 'undefined' && source instanceof FileList || Array.isArray(source) ?
        Array.from(source).map((f) => [(f.webkitRelativePath || f.name).split('/').slice(
            f.webkitRelativePath ? 1 : 0).join('/'), f]) :
        Object.entries(source);
    for (const [name, value] of list) entries.set(name, value);
    lookup = async (name) => {
      const value = entries.get(name);
      if (value === undefined) return null;
      if (value instanceof Uint8Array) return value;
      if (value instanceof ArrayBuffer) return new Uint8Array(value);
      if (typeof Blob !== 'undefined' && value instanceof Blob) return new Uint8Array(await value.arrayBuffer());
      throw new Error(`wgi: ${name} must be a Uint8Array, ArrayBuffer or Blob`);
    };
  }
  const where = isUrl ? ` at ${source}` : '';
  const get = async (name, needed) => {
    if (onProgress) onProgress(`reading ${name}`);
    const bytes = await lookup(name);
    if (bytes) files.set(name, bytes);
    else if (needed) throw new Error(`wgi: the model folder${where} lacks ${name}`);
    return !!bytes;
  };
  for (const name of required) await get(name, true);
  for (const name of optional) await get(name, false);
  for (let i = 0; i < alternatives.length; ++i) {
    const last = i === alternatives.length - 1;
    let complete = true;
    for (const name of alternatives[i]) complete = complete && await get(name, last);
    if (complete) break;
    for (const name of alternatives[i]) files.delete(name);
  }
  return files;
}

let folderCount = 0;

// Writes the files under a fresh MEMFS folder and returns its path.
function writeFolder(M, files) {
  const root = `/wgi-models/${++folderCount}`;
  for (const [name, bytes] of files) {
    const file = `${root}/${name}`;
    M.FS.mkdirTree(file.slice(0, file.lastIndexOf('/')));
    M.FS.writeFile(file, bytes);
  }
  return root;
}

function removeFolder(M, root) {
  for (const name of M.FS.readdir(root)) {
    if (name === '.' || name === '..') continue;
    const child = `${root}/${name}`;
    if (M.FS.isDir(M.FS.stat(child).mode)) removeFolder(M, child);
    else M.FS.unlink(child);
  }
  M.FS.rmdir(root);
}

// Decodes (and scales) an image the browser can draw — ImageBitmap, HTMLImageElement, HTMLCanvasElement,
// OffscreenCanvas, VideoFrame, or a Blob / File of an encoded image — to {width, height, rgb} at its own size
// or at width x height (the browser's smooth scaling, not PIL's bicubic). Transparent pixels over white.
export async function rgbImage(source, width, height) {
  const bitmap = typeof Blob !== 'undefined' && source instanceof Blob ? await createImageBitmap(source) : source;
  width = width || bitmap.width;
  height = height || bitmap.height;
  const canvas = new OffscreenCanvas(width, height);
  const ctx = canvas.getContext('2d');
  ctx.imageSmoothingQuality = 'high';
  ctx.drawImage(bitmap, 0, 0, width, height);
  const rgba = ctx.getImageData(0, 0, width, height).data;
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; i < rgba.length; i += 4, j += 3) {
    const a = rgba[i + 3] / 255;
    for (let c = 0; c < 3; ++c) rgb[j + c] = Math.round(rgba[i + c] * a + 255 * (1 - a));
  }
  return {width, height, rgb};
}

// Calls a pipeline's C function `name`(handle, image path, rgb, width, height, request JSON) on `image`: the
// bytes of an encoded file (Uint8Array / ArrayBuffer / Blob; written to MEMFS and decoded by stb_image in the
// module, as natively) or {width, height, rgb: Uint8Array}. Returns its JSON answer, parsed.
async function runOnImage(model, what, name, image, request) {
  let encoded = null;
  if (image instanceof ArrayBuffer) encoded = new Uint8Array(image);
  else if (image instanceof Uint8Array) encoded = image;
  else if (typeof Blob !== 'undefined' && image instanceof Blob) encoded = new Uint8Array(await image.arrayBuffer());
  else if (!image || !(image.rgb instanceof Uint8Array) || image.rgb.length !== image.width * image.height * 3) {
    throw new Error(`wgi: ${what} needs an encoded image (Uint8Array, ArrayBuffer, Blob) or ` +
                    '{width, height, rgb: Uint8Array of width * height * 3}');
  }
  return serialized(async () => {
    const M = model.M;
    if (!model.handle) throw new Error(`wgi: ${what}: the model was freed`);
    const path = `/wgi-image-${++folderCount}`;
    let rgbPtr = 0, result = 0;
    try {
      if (encoded) {
        M.FS.writeFile(path, encoded);
      } else {
        rgbPtr = M._malloc(image.rgb.length);
        M.HEAPU8.set(image.rgb, rgbPtr);
      }
      result = await M.ccall(name, 'number', ['number', 'string', 'number', 'number', 'number', 'string'],
                             [model.handle, path, rgbPtr, image.width || 0, image.height || 0, request],
                             {async: true});
    } finally {
      if (encoded) M.FS.unlink(path);
      if (rgbPtr) M._free(rgbPtr);
    }
    if (!result) throw new Error(lastError(M));
    return JSON.parse(M.UTF8ToString(result));
  });
}

// Loads a pipeline from `files` (a Map from folderFiles) through its C function `name`(folder, ...args);
// returns make(handle), called in the same turn of the queue (it may call into the module).
async function createPipeline(M, files, name, argTypes, args, onProgress, make) {
  return serialized(async () => {
    if (onProgress) onProgress('loading the sessions');
    const root = writeFolder(M, files);
    let handle = 0;
    try {
      handle = await M.ccall(name, 'number', ['string', ...argTypes], [root, ...args], {async: true});
    } finally {
      removeFolder(M, root);  // the sessions hold what they need; MEMFS copies would only take memory
    }
    if (!handle) throw new Error(lastError(M));
    return make(handle);
  });
}

function requireWebGpu() {
  if (!webgpuAvailable()) {
    throw new Error('WebGPU is not available in this browser (navigator.gpu is undefined); wgi needs a ' +
                    'browser with WebGPU enabled, on https or localhost');
  }
}

// A synchronous export that returns a string (null with wgi_web_last_error set), called after any run in flight:
// no call may enter the module while another is suspended (Asyncify).
function moduleString(M, name, argTypes, args) {
  return serialized(async () => {
    const text = M.ccall(name, 'string', argTypes, args);
    if (!text) throw new Error(lastError(M));
    return text;
  });
}

// The folder's files for a dtype (the C++ side names the model files: wgi_web_florence2_files).
async function florence2Folder(M, dtype) {
  const f = JSON.parse(await moduleString(M, 'wgi_web_florence2_files', ['string'], [dtype]));
  return {
    required: ['config.json', 'generation_config.json', 'preprocessor_config.json', 'tokenizer.json',
               f.embed_tokens, f.vision_encoder, f.encoder_model],
    optional: ['tokenizer_config.json'],
    decoders: {merged: [[f.decoder_model_merged]], split: [[f.decoder_model, f.decoder_with_past_model]]},
  };
}

// Florence-2 (include/wgi/florence2.h) on the page's GPU: the same C++ pipeline as `wgi florence2`.
//   const model = await wgi.Florence2.create('models/Florence-2-base-ft/');   // or a FileList, or {path: bytes}
//   const r = await model.generate(pngBytes, {task: '<OD>'});   // r.parsed['<OD>'].bboxes, .labels
export class Florence2 {
  // source: see folderFiles (onnx-community's layout, float32 files). options.decoder: 'merged'
  // (decoder_model_merged.onnx), 'split' (decoder_model.onnx + decoder_with_past_model.onnx) or, by default,
  // the merged one if the folder has it. options.dtype: which files (transformers.js's suffixes, as `wgi
  // florence2 --dtype`): 'q4', or per session 'vision_encoder=fp16,decoder_model_merged=q4' or
  // transformers.js's {vision_encoder: 'fp16', decoder_model_merged: 'q4'} (default fp32).
  // options.precision: 'f32' (default) or 'f16' for every session, as
  // Session.create's (refused where the adapter lacks what f16 needs). options.onProgress(text): progress
  // messages.
  static async create(source, options = {}) {
    const M = await init(options.moduleUrl);
    requireWebGpu();
    const decoder = options.decoder || 'auto';
    // transformers.js's per-session object ({vision_encoder: 'fp16', ...}) or wgi's string form.
    const dtype = options.dtype && typeof options.dtype === 'object'
        ? Object.entries(options.dtype).map(([session, d]) => `${session}=${d}`).join(',')
        : options.dtype || 'fp32';
    const {required, optional, decoders} = await florence2Folder(M, dtype);
    const alternatives = decoder === 'auto' ? [...decoders.merged, ...decoders.split] : decoders[decoder];
    if (!alternatives) throw new Error(`wgi: Florence2 decoder '${decoder}': 'merged', 'split' or 'auto'`);
    const files = await folderFiles(source, {required, optional, alternatives}, options.onProgress);
    return createPipeline(M, files, 'wgi_web_florence2_create', ['string', 'string'],
                          [options.precision ?? 'f32', dtype], options.onProgress, (handle) => new Florence2(M, handle));
  }

  constructor(M, handle) {
    this.M = M;
    this.handle = handle;
    const info = JSON.parse(M.UTF8ToString(M._wgi_web_florence2_info(handle)));
    this.imageWidth = info.image_width;    // the processor's input size: images must have it
    this.imageHeight = info.image_height;
    this.decoderFiles = info.decoder_files;
  }

  // image: the bytes of an encoded file (Uint8Array / ArrayBuffer / Blob: PNG, JPEG, ...; decoded by stb_image
  // in the module, as natively) or {width, height, rgb: Uint8Array} (rgbImage() makes one, and scales).
  // options: {task: '<CAPTION>' | '<OD>' | '<OCR_WITH_REGION>' | ..., text (tasks that take one),
  // maxNewTokens, numBeams (1: greedy, as transformers.js; unset: the folder's generation_config.json)}.
  // Returns {task, input_ids, generated_ids, generated_text, parsed}, as `wgi florence2 --json` (parsed is
  // {task: text} or {task: {labels, bboxes | quad_boxes}} in image pixels), with num_beams, decode_steps and
  // stages (ms: preprocess, vision, encoder, decode, postprocess; of decode, the steps' embed and decoder runs).
  async generate(image, options = {}) {
    const request = JSON.stringify({task: options.task, text: options.text || '',
                                    max_new_tokens: options.maxNewTokens ?? null, num_beams: options.numBeams ?? null});
    return runOnImage(this, 'Florence2.generate', 'wgi_web_florence2_generate', image, request);
  }

  free() {
    return serialized(async () => {
      if (this.handle) this.M._wgi_web_florence2_free(this.handle);
      this.handle = 0;
    });
  }
}

// One task on one image: loads the folder, generates, frees (keep a Florence2 to run several).
export async function florence2(source, image, options = {}) {
  const model = await Florence2.create(source, options);
  try {
    return await model.generate(image, options);
  } finally {
    await model.free();
  }
}

// SigLIP zero-shot image classification (include/wgi/siglip.h) on the page's GPU: the same C++ pipeline as
// `wgi siglip`, its tokenizer from the folder's tokenizer.json (the browser build has no libsentencepiece, so a
// folder with spiece.model alone does not load here).
//   const model = await wgi.Siglip.create('models/siglip-base-patch16-224/');   // or a FileList, or {path: bytes}
//   const r = await model.classify(pngBytes, ['cat', 'dog']);   // r.output: [{score, label}], best first
export class Siglip {
  // source: see folderFiles (Xenova's layout: config.json, preprocessor_config.json, tokenizer.json,
  // onnx/model.onnx). options.modelFile: the joint model's file under onnx/ (default model.onnx), or
  // options.dtype: transformers.js's, which names it ('fp16' -> onnx/model_fp16.onnx; not both).
  // options.precision: 'f32' (default) or 'f16', as Session.create's. options.onProgress(text): progress
  // messages.
  static async create(source, options = {}) {
    const M = await init(options.moduleUrl);
    requireWebGpu();
    // The C++ names the file (SiglipOptions::file): dtype 'fp16' -> model_fp16.onnx, else options.modelFile.
    const modelFile = await moduleString(M, 'wgi_web_siglip_model_file', ['string', 'string'],
                                         [options.dtype || '', options.modelFile || '']);
    const files = await folderFiles(source, {
      required: ['config.json', 'preprocessor_config.json', 'tokenizer.json', `onnx/${modelFile}`],
      optional: ['tokenizer_config.json', 'special_tokens_map.json'],
    }, options.onProgress);
    return createPipeline(M, files, 'wgi_web_siglip_create', ['string', 'string'],
                          [modelFile, options.precision ?? 'f32'], options.onProgress, (handle) => new Siglip(M, handle));
  }

  constructor(M, handle) {
    this.M = M;
    this.handle = handle;
    const info = JSON.parse(M.UTF8ToString(M._wgi_web_siglip_info(handle)));
    this.imageWidth = info.image_width;    // the processor's input size: images must have it (no resize yet)
    this.imageHeight = info.image_height;
    this.maxLength = info.max_length;      // each text's length in ids
  }

  // image: as Florence2.generate's, at the processor's size (rgbImage(source, model.imageWidth,
  // model.imageHeight) scales one). labels: the candidate labels. options.hypothesisTemplate: its first {}
  // becomes each label (default "This is a photo of {}."). Returns {labels, texts, input_ids, logits, scores,
  // output} as `wgi siglip --json`: scores in label order, output [{score, label}] by descending score.
  async classify(image, labels, options = {}) {
    if (!Array.isArray(labels)) throw new Error('wgi: Siglip.classify needs an array of candidate labels');
    const request = JSON.stringify({labels, hypothesis_template: options.hypothesisTemplate ?? null});
    return runOnImage(this, 'Siglip.classify', 'wgi_web_siglip_classify', image, request);
  }

  free() {
    return serialized(async () => {
      if (this.handle) this.M._wgi_web_siglip_free(this.handle);
      this.handle = 0;
    });
  }
}
