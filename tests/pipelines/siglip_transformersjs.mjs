// transformers.js (npm @huggingface/transformers, on onnxruntime-node, offline) as the reference for wgi's
// SigLIP pipeline: loads a SigLIP model folder (tests/models/siglip_folder.py writes them) and prints what it
// answers, as one JSON object.
//
//   node siglip_transformersjs.mjs FOLDER IMAGE LABELS_JSON [TEMPLATE]
//       {image, labels, hypothesis_template, texts, input_ids, scores, output, versions}
//       pipeline('zero-shot-image-classification') with dtype fp32 on the CPU: `output` is its answer as it
//       is (sorted by score), `scores` the same scores in the order of `labels`; `input_ids` the texts as the
//       pipeline tokenizes them (padding 'max_length', truncation). TEMPLATE: the pipeline's default
//       ('This is a photo of {}') when absent. IMAGE must already be at the processor's size (transformers.js
//       resizes with sharp, not as PIL does).
//   node siglip_transformersjs.mjs --ids FOLDER STRINGS_JSON_FILE
//       {strings, input_ids}: each string tokenized as the pipeline does (padding 'max_length', truncation).
//   node siglip_transformersjs.mjs --encode FOLDER STRINGS_JSON_FILE
//       {strings, ids, decoded, decoded_skip}: tokenizer.encode(s) (special tokens, no padding or
//       truncation) and tokenizer.decode of those ids as they are and with skip_special_tokens ("" for no
//       ids, which transformers.js refuses to decode).
//
// The node_modules holding @huggingface/transformers (and its onnxruntime-node): a leading
// `--node-modules DIR`, else $WGI_NODE_MODULES, else third_party/pipelines/node_modules of this checkout.
import fs from 'node:fs';
import zlib from 'node:zlib';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTransformersOffline } from './transformers_offline.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const modules = args[0] === '--node-modules' ? args.splice(0, 2)[1]
  : process.env.WGI_NODE_MODULES ?? path.join(here, '..', '..', 'third_party', 'pipelines', 'node_modules');
const packageDir = (name) => path.join(modules, ...name.split('/'));
const versionOf = (name) => JSON.parse(fs.readFileSync(path.join(packageDir(name), 'package.json'), 'utf8')).version;

function usage() {
  console.error('usage: node siglip_transformersjs.mjs [--node-modules DIR] FOLDER IMAGE LABELS_JSON [TEMPLATE]\n' +
                '       node siglip_transformersjs.mjs --ids|--encode FOLDER STRINGS_JSON_FILE');
  process.exit(2);
}

const loadTransformers = (folder) => loadTransformersOffline(modules, folder);

const tokenize = (tokenizer, texts) =>
  tokenizer(texts, { padding: 'max_length', truncation: true }).input_ids.tolist().map((row) => row.map(Number));

async function ids(folder, stringsFile) {
  const { t, id } = await loadTransformers(folder);
  const tokenizer = await t.AutoTokenizer.from_pretrained(id);
  const strings = JSON.parse(fs.readFileSync(stringsFile, 'utf8'));
  return { strings, input_ids: strings.map((s) => tokenize(tokenizer, [s])[0]) };
}

async function encode(folder, stringsFile) {
  const { t, id } = await loadTransformers(folder);
  const tokenizer = await t.AutoTokenizer.from_pretrained(id);
  const strings = JSON.parse(fs.readFileSync(stringsFile, 'utf8'));
  const ids = strings.map((s) => tokenizer.encode(s).map(Number));
  const decode = (row, options) => (row.length ? tokenizer.decode(row, options) : '');
  return { strings, ids, decoded: ids.map((row) => decode(row, {})),
           decoded_skip: ids.map((row) => decode(row, { skip_special_tokens: true })) };
}

// The image through transformers.js (sharp decodes it); where sharp is only a stub (the GPU machine's copy,
// bench/h200_campaign.sh), an 8-bit RGB PNG whose rows are unfiltered (what tests/models' write_png writes)
// is decoded here with node's zlib instead; any other PNG is an error.
async function readImage(t, imagePath) {
  try {
    return await t.RawImage.read(path.resolve(imagePath));
  } catch (error) {
    const png = fs.readFileSync(imagePath);
    const width = png.readUInt32BE(16), height = png.readUInt32BE(20);
    if (png.toString('latin1', 12, 16) !== 'IHDR' || png[24] !== 8 || png[25] !== 2 || png[28] !== 0) throw error;
    const idat = [];
    for (let at = 8; at < png.length;) {
      const length = png.readUInt32BE(at), type = png.toString('latin1', at + 4, at + 8);
      if (type === 'IDAT') idat.push(png.subarray(at + 8, at + 8 + length));
      at += 12 + length;
    }
    const raw = zlib.inflateSync(Buffer.concat(idat));
    const rgb = new Uint8ClampedArray(width * height * 3);
    for (let y = 0; y < height; ++y) {
      if (raw[y * (width * 3 + 1)] !== 0) throw new Error(`${imagePath}: row ${y} is filtered; only sharp reads it`);
      rgb.set(raw.subarray(y * (width * 3 + 1) + 1, (y + 1) * (width * 3 + 1)), y * width * 3);
    }
    return new t.RawImage(rgb, width, height, 3);
  }
}

async function classify(folder, imagePath, labels, template) {
  const { t, id } = await loadTransformers(folder);
  const classifier = await t.pipeline('zero-shot-image-classification', id, { dtype: 'fp32', device: 'cpu' });
  const image = await readImage(t, imagePath);
  const size = classifier.processor.image_processor.config.size;
  if (image.width !== size.width || image.height !== size.height) {
    throw new Error(`${imagePath} is ${image.width}x${image.height}; give an image at the processor's size ` +
                    `${size.width}x${size.height} (transformers.js's resize is not PIL's)`);
  }
  const options = template === undefined ? {} : { hypothesis_template: template };
  const output = await classifier(image, labels, options);
  const used = template ?? 'This is a photo of {}';
  const texts = labels.map((x) => used.replace('{}', x));
  return {
    image: path.basename(imagePath),
    labels,
    hypothesis_template: used,
    texts,
    input_ids: tokenize(classifier.tokenizer, texts),
    scores: labels.map((label) => output.find((o) => o.label === label).score),
    output,
    versions: { '@huggingface/transformers': versionOf('@huggingface/transformers'),
                'onnxruntime-node': versionOf('onnxruntime-node') },
  };
}

let result;
if (args[0] === '--ids') {
  if (args.length !== 3) usage();
  result = await ids(args[1], args[2]);
} else if (args[0] === '--encode') {
  if (args.length !== 3) usage();
  result = await encode(args[1], args[2]);
} else {
  if (args.length < 3 || args.length > 4) usage();
  result = await classify(args[0], args[1], JSON.parse(args[2]), args[3]);
}
process.stdout.write(JSON.stringify(result, null, 1) + '\n');
