// The peer for `wgi florence2 --runs`: transformers.js (npm @huggingface/transformers on onnxruntime-node)
// running the same Florence-2 folder end to end (image file -> processor -> generate -> decoded text), timed
// over several runs after one warm-up, on the device asked for (webgpu: ONNX Runtime's WebGPU EP; cpu).
//
//   node bench/florence2_peer_bench.mjs FOLDER IMAGE TASK DEVICE [--runs N] [--num-beams N] [--max-new-tokens N]
//                                       [--dtype D | --dtype session=D,...] [--rgb-size WxH] [--node-modules DIR]
// --rgb-size: IMAGE is raw RGB bytes of that size (read without sharp, e.g. where only a stub of it is installed).
// Prints one JSON line: {device, task, num_beams, generated_tokens, first_ms, median_ms, min_ms, runs,
// generated_ids}. transformers.js 4.3.1 keeps only the first beam of a beam search (docs/beam_search.md), so
// its num_beams > 1 answers are not Hugging Face's; they are timed as it runs them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTransformersOffline } from '../tests/pipelines/transformers_offline.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const positional = [];
const options = { runs: 5, 'num-beams': 1, 'max-new-tokens': 64, dtype: 'fp32', 'rgb-size': '',
                  'node-modules': process.env.WGI_NODE_MODULES ??
                                  path.join(here, '..', 'third_party', 'pipelines', 'node_modules') };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; ++i) {
  if (argv[i].startsWith('--')) {
    const key = argv[i].slice(2);
    if (!(key in options) || i + 1 >= argv.length) {
      console.error(`unknown option or missing value: ${argv[i]}`);
      process.exit(2);
    }
    options[key] = argv[++i];
  } else {
    positional.push(argv[i]);
  }
}
if (positional.length !== 4) {
  console.error('usage: node bench/florence2_peer_bench.mjs FOLDER IMAGE TASK DEVICE [--runs N] ' +
                '[--num-beams N] [--max-new-tokens N] [--dtype D|session=D,...] [--node-modules DIR]');
  process.exit(2);
}
const [folder, imagePath, task, device] = positional;
const entry = path.join(options['node-modules'], '@huggingface', 'transformers', 'dist', 'transformers.node.mjs');
if (!fs.existsSync(entry)) {
  console.error(`transformers.js not found at ${entry} (scripts/setup installs it; or give --node-modules)`);
  process.exit(2);
}
const { t, id } = await loadTransformersOffline(options['node-modules'], folder);

const processor = await t.AutoProcessor.from_pretrained(id);
// --dtype q4, or per session: --dtype embed_tokens=fp32,vision_encoder=fp32,encoder_model=q4,decoder_model_merged=q4
const dtype = options.dtype.includes('=')
  ? Object.fromEntries(options.dtype.split(',').map((kv) => kv.split('=')))
  : options.dtype;
const model = await t.Florence2ForConditionalGeneration.from_pretrained(id, { dtype, device });
const rgbSize = options['rgb-size'] ? options['rgb-size'].split('x').map(Number) : null;
const generation = { max_new_tokens: Number(options['max-new-tokens']), num_beams: Number(options['num-beams']),
                     do_sample: false };
async function once() {
  const image = rgbSize
    ? new t.RawImage(new Uint8ClampedArray(fs.readFileSync(imagePath)), rgbSize[0], rgbSize[1], 3)
    : await t.RawImage.read(path.resolve(imagePath));
  const inputs = await processor(image, processor.construct_prompts(task));
  const generated = await model.generate({ ...inputs, ...generation });
  const text = processor.batch_decode(generated, { skip_special_tokens: false })[0];
  processor.post_process_generation(text, task, [image.width, image.height]);
  return generated.tolist()[0].map(Number);
}
const times = [];
let ids = [];
const runs = Number(options.runs);
for (let i = 0; i <= runs; ++i) {
  const start = performance.now();
  ids = await once();
  times.push(performance.now() - start);
}
const first = times.shift();
times.sort((a, b) => a - b);
console.log(JSON.stringify({ device, dtype, task, num_beams: generation.num_beams, generated_tokens: ids.length,
                             first_ms: +first.toFixed(2), median_ms: +times[times.length >> 1].toFixed(2),
                             min_ms: +times[0].toFixed(2), runs, generated_ids: ids }));
