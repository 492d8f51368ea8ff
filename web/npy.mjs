// NumPy .npy files for web/cli.mjs: little-endian, C order, the dtypes wgi's sessions take and give.
// Errors name the file and what was wrong, so `node web/cli.mjs run --input x=bad.npy` says why.

const DESCR_TO_DTYPE = {
  '<f4': 'float32', '<f2': 'float16', '<i8': 'int64', '<i4': 'int32', '|i1': 'int8', '|u1': 'uint8', '|b1': 'bool',
};
const DTYPE_TO_DESCR = Object.fromEntries(Object.entries(DESCR_TO_DTYPE).map(([d, t]) => [t, d]));
const ARRAYS = {
  float32: Float32Array, float16: Uint16Array, int64: BigInt64Array, int32: Int32Array, int8: Int8Array,
  uint8: Uint8Array, bool: Uint8Array,
};

// Decodes .npy bytes into {dtype, dims, data}; `what` names the file in errors.
export function parseNpy(bytes, what = '.npy') {
  const fail = (why) => { throw new Error(`${what}: ${why}`); };
  if (bytes.length < 10 || bytes[0] !== 0x93 || String.fromCharCode(...bytes.subarray(1, 6)) !== 'NUMPY') {
    fail('not a .npy file (no \\x93NUMPY magic)');
  }
  const major = bytes[6];
  if (major < 1 || major > 3) fail(`unsupported .npy format version ${major}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const start = major === 1 ? 10 : 12;
  if (bytes.length < start) fail('truncated header');
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  if (start + headerLen > bytes.length) fail(`header of ${headerLen} bytes runs past the end of the file`);
  const header = new TextDecoder().decode(bytes.subarray(start, start + headerLen));
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const order = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !order || !shape) fail(`malformed header ${JSON.stringify(header.trim())}`);
  const dtype = DESCR_TO_DTYPE[descr[1]];
  if (!dtype) {
    fail(`dtype '${descr[1]}' is not one wgi takes (${Object.keys(DESCR_TO_DTYPE).join(' ')}; ` +
         'big-endian and float64 files need converting)');
  }
  if (order[1] === 'True') fail('Fortran order is not supported (save it C-contiguous)');
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map((s) => {
    if (!/^\d+$/.test(s)) fail(`bad dim '${s}' in the shape`);
    return Number(s);
  });
  const Type = ARRAYS[dtype];
  const count = dims.reduce((a, b) => a * b, 1);
  const payload = bytes.length - start - headerLen;
  if (payload !== count * Type.BYTES_PER_ELEMENT) {
    fail(`shape (${dims.join(', ')}) of ${dtype} needs ${count * Type.BYTES_PER_ELEMENT} data bytes, the file ` +
         `has ${payload}`);
  }
  const copy = bytes.slice(start + headerLen);  // aligned for the typed array
  return {dtype, dims, data: new Type(copy.buffer, 0, count)};
}

// Encodes {dtype, dims, data} as .npy (version 1.0) bytes.
export function formatNpy(tensor) {
  const descr = DTYPE_TO_DESCR[tensor.dtype];
  if (!descr) throw new Error(`.npy: cannot write dtype '${tensor.dtype}'`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in \n.
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const head = new TextEncoder().encode(header);
  const data = new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  const out = new Uint8Array(10 + head.length + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, head.length & 0xff, head.length >> 8]);
  out.set(head, 10);
  out.set(data, 10 + head.length);
  return out;
}
