// Runs an ONNX model on onnxruntime-node's CPU execution provider: the independent reference for wgi's model
// tests (tests/gpu/test_ocr.cpp). Inputs are float32 / int64 / bool .npy files, outputs float32 / int64.
// Usage: node run_model.js MODEL.onnx OUT_DIR NAME=IN.npy [NAME=IN.npy ...]
// Writes OUT_DIR/<output name>.npy (characters outside [A-Za-z0-9._-] replaced by '_').
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(process.env.WGI_ORT_DIR || path.join(__dirname, '..', '..', 'third_party', 'ort'),
                              'node_modules', 'onnxruntime-node'));

const kinds = {'<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '|b1': ['bool', Uint8Array]};

function readNpy(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = b[6];
  const headerLen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  if (!kinds[descr]) throw new Error(`${file}: unsupported dtype ${descr}`);
  const [type, T] = kinds[descr];
  const count = shape.reduce((a, c) => a * c, 1);
  const data = new T(b.buffer.slice(b.byteOffset + start + headerLen, b.byteOffset + start + headerLen + count * T.BYTES_PER_ELEMENT));
  return new ort.Tensor(type, data, shape);
}

function writeNpy(file, tensor) {
  const descr = {float32: '<f4', int64: '<i8', int32: '<i4', uint8: '|u1', int8: '|i1'}[tensor.type];
  if (!descr) throw new Error(`output type ${tensor.type} not handled`);
  const dims = tensor.dims.length === 1 ? `${tensor.dims[0]},` : tensor.dims.join(', ');
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, 'latin1'), data]));
}

(async () => {
  const [model, outDir, ...inputs] = process.argv.slice(2);
  if (!model || !outDir) throw new Error('usage: node run_model.js MODEL.onnx OUT_DIR NAME=IN.npy ...');
  const session = await ort.InferenceSession.create(model, {executionProviders: ['cpu']});
  const feeds = {};
  for (const arg of inputs) {
    const eq = arg.indexOf('=');
    feeds[arg.slice(0, eq)] = readNpy(arg.slice(eq + 1));
  }
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, {recursive: true});
  for (const [name, tensor] of Object.entries(results)) {
    writeNpy(path.join(outDir, name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy'), tensor);
  }
})().catch(e => { console.error('run_model.js:', e.message || e); process.exit(1); });
