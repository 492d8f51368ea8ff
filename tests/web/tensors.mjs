// Reading reference data in the browser, independently of wgi's C++ decoders: ONNX TensorProto files (the
// conformance tests' input_N.pb / output_N.pb) and NumPy .npy files (tests/data/models). Plain ES module.

const PROTO_TYPES = {1: 'float32', 2: 'uint8', 3: 'int8', 6: 'int32', 7: 'int64', 9: 'bool', 10: 'float16', 11: 'float64'};
const ARRAYS = {float32: Float32Array, uint8: Uint8Array, int8: Int8Array, int32: Int32Array, int64: BigInt64Array,
                bool: Uint8Array, float16: Uint16Array, float64: Float64Array};

class Reader {
  constructor(bytes) { this.b = bytes; this.p = 0; }
  done() { return this.p >= this.b.length; }
  varint() {  // as BigInt: int64 dims and values can exceed 2^53
    let result = 0n, shift = 0n;
    for (;;) {
      const byte = this.b[this.p++];
      result |= BigInt(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return result;
      shift += 7n;
    }
  }
  bytes(n) { const out = this.b.subarray(this.p, this.p + n); this.p += n; return out; }
  view(n) { const v = new DataView(this.b.buffer, this.b.byteOffset + this.p, n); this.p += n; return v; }
}

// Decodes a TensorProto: {name, dtype, dims, data (typed array)}.
export function decodeTensorProto(bytes) {
  const r = new Reader(bytes);
  const t = {name: '', dims: [], type: 0, floats: [], ints: [], int64s: [], doubles: [], raw: null};
  while (!r.done()) {
    const key = Number(r.varint());
    const field = key >>> 3, wire = key & 7;
    const packed = wire === 2;
    const chunk = packed ? new Reader(r.bytes(Number(r.varint()))) : null;
    const each = (read) => {
      if (packed) { while (!chunk.done()) read(chunk); } else { read(r); }
    };
    switch (field) {
      case 1: each((x) => t.dims.push(Number(BigInt.asIntN(64, x.varint())))); break;
      case 2: t.type = Number(r.varint()); break;
      case 4: each((x) => { t.floats.push(x.view(4).getFloat32(0, true)); }); break;
      case 5: each((x) => t.ints.push(Number(BigInt.asIntN(32, x.varint())))); break;
      case 7: each((x) => t.int64s.push(BigInt.asIntN(64, x.varint()))); break;
      case 8: t.name = new TextDecoder().decode(chunk.b); break;
      case 9: t.raw = chunk.b.slice(); break;
      case 10: each((x) => { t.doubles.push(x.view(8).getFloat64(0, true)); }); break;
      default:  // a field these tests do not need: skip it by wire type
        if (wire === 0) r.varint(); else if (wire === 1) r.p += 8; else if (wire === 5) r.p += 4;
        else if (wire !== 2) throw new Error('TensorProto: unsupported wire type ' + wire);
    }
  }
  const dtype = PROTO_TYPES[t.type];
  if (!dtype) throw new Error('TensorProto: unsupported data_type ' + t.type);
  const Type = ARRAYS[dtype];
  let data;
  if (t.raw) {
    data = new Type(t.raw.buffer, t.raw.byteOffset, t.raw.byteLength / Type.BYTES_PER_ELEMENT);
  } else if (dtype === 'float32') {
    data = Float32Array.from(t.floats);
  } else if (dtype === 'float64') {
    data = Float64Array.from(t.doubles);
  } else if (dtype === 'int64') {
    data = BigInt64Array.from(t.int64s);
  } else {
    data = Type.from(t.ints);  // int32, int8, uint8, bool, float16 (bits) travel in int32_data
  }
  return {name: t.name, dtype, dims: t.dims, data};
}

// Decodes a little-endian C-order .npy file: {dtype, dims, data}.
export function decodeNpy(bytes) {
  const magic = String.fromCharCode(...bytes.subarray(0, 6));
  if (magic !== '\x93NUMPY') throw new Error('not a .npy file');
  const major = bytes[6];
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder().decode(bytes.subarray(start, start + headerLen));
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error('.npy: Fortran order is not supported');
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const dtype = {'<f4': 'float32', '<f8': 'float64', '<i8': 'int64', '<i4': 'int32', '|i1': 'int8', '|u1': 'uint8', '|b1': 'bool'}[descr];
  if (!dtype) throw new Error('.npy: unsupported dtype ' + descr);
  const Type = ARRAYS[dtype];
  const payload = bytes.slice(start + headerLen);
  return {dtype, dims: shape, data: new Type(payload.buffer, 0, payload.byteLength / Type.BYTES_PER_ELEMENT)};
}

// Compares got with want: floats within |got - want| <= atol + rtol |want| (NaN matches NaN), integers exactly.
// Returns null when they agree, else a message naming the first mismatch and the largest error.
export function compare(got, want, {rtol = 1e-4, atol = 1e-5} = {}) {
  if (got.dims.join(',') !== want.dims.join(',')) return `shape [${got.dims}] != expected [${want.dims}]`;
  if (got.data.length !== want.data.length) return `${got.data.length} elements != expected ${want.data.length}`;
  const floats = want.dtype === 'float32' || want.dtype === 'float64';
  let first = null, worst = 0;
  for (let i = 0; i < want.data.length; ++i) {
    const g = got.data[i], w = want.data[i];
    let ok;
    if (floats) {
      const gn = Number(g), wn = Number(w);
      ok = (Number.isNaN(gn) && Number.isNaN(wn)) || gn === wn || Math.abs(gn - wn) <= atol + rtol * Math.abs(wn);
      if (!Number.isNaN(gn - wn)) worst = Math.max(worst, Math.abs(gn - wn));
    } else {
      ok = BigInt(g) === BigInt(w);
    }
    if (!ok && first === null) first = `element ${i}: got ${g}, expected ${w}`;
  }
  return first === null ? null : `${first} (largest abs error ${worst})`;
}

// Relative L2 error ||got - want|| / ||want||, the metric of the native model tests (tests/gpu/test_models.cpp).
export function relativeL2(got, want) {
  if (got.dims.join(',') !== want.dims.join(',')) return Infinity;
  let num = 0, den = 0;
  for (let i = 0; i < want.data.length; ++i) {
    const d = Number(got.data[i]) - Number(want.data[i]);
    num += d * d;
    den += Number(want.data[i]) ** 2;
  }
  return Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-30);
}
