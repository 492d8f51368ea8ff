// The onnxruntime-node 1.30 CPU outputs that the browser's variant tests (variant_cases.mjs) compare with,
// computed in Node on the same files and inputs before the page opens (run.mjs), written as JSON:
//   {case name: {output name: {dims, data: [numbers]}}}
// float32 values travel as JSON numbers (exact: every float32 is a double whose shortest form reads back).
//   node tests/web/ort_references.mjs   (writes build/web/ort_reference.json; run.mjs calls writeOrtReferences)
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {fileURLToPath} from 'node:url';
import {decodeNpy} from './tensors.mjs';
import {VARIANT_CASES, ORT_REFERENCE_FILE} from './variant_cases.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export async function writeOrtReferences() {
  const ortDir = process.env.WGI_ORT_DIR || path.join(repo, 'third_party', 'ort');
  const require = createRequire(path.join(ortDir, 'package.json'));
  const ort = require('onnxruntime-node');
  const out = {};
  for (const c of VARIANT_CASES) {
    const dir = path.join(repo, c.dir);
    const session = await ort.InferenceSession.create(path.join(dir, c.model), {executionProviders: ['cpu']});
    const feeds = {};
    for (const name of session.inputNames) {
      const t = decodeNpy(new Uint8Array(fs.readFileSync(path.join(dir, `input_${name}.npy`))));
      feeds[name] = new ort.Tensor(t.dtype, t.data, t.dims);
    }
    const results = await session.run(feeds);
    out[c.name] = {};
    for (const [name, tensor] of Object.entries(results)) {
      if (tensor.type !== 'float32') throw new Error(`${c.name}: output ${name} is ${tensor.type}, float32 expected`);
      out[c.name][name] = {dims: tensor.dims.map(Number), data: Array.from(tensor.data)};
    }
    await session.release();
  }
  const file = path.join(repo, ORT_REFERENCE_FILE);
  fs.mkdirSync(path.dirname(file), {recursive: true});
  fs.writeFileSync(file, JSON.stringify(out));
  return file;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log('wrote ' + path.relative(repo, await writeOrtReferences()));
}
