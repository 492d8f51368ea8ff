// transformers.js (npm @huggingface/transformers, on onnxruntime-node, offline) as the reference for wgi's
// Florence-2 pipeline: loads a Florence-2 model folder (tests/models/florence2_folder.py writes them) and
// prints what it answers, as one JSON object.
//
//   node florence2_transformersjs.mjs FOLDER IMAGE TASK [MAX_NEW_TOKENS]
//       {task, image, max_new_tokens, generation, input_ids, generated_ids, generated_text, parsed, versions}
//       AutoProcessor + Florence2ForConditionalGeneration.generate, greedy (num_beams 1, no sampling) with the
//       folder's generation_config otherwise (forced BOS/EOS, no_repeat_ngram_size). IMAGE must already be at
//       the processor's size (the resize is then skipped: transformers.js resizes with sharp, not as PIL does).
//       generated_text keeps the special tokens; parsed is post_process_generation(text, task, [width, height]).
//   node florence2_transformersjs.mjs --prompt-ids FOLDER TASK...
//       {TASK: prompt ids} as the processor tokenizes the tasks' prompts.
//   node florence2_transformersjs.mjs --compare-decoders FOLDER
//       Runs onnx/decoder_model_merged.onnx against onnx/decoder_model.onnx (use_cache_branch false) and
//       onnx/decoder_with_past_model.onnx (true) with onnxruntime-node on the same seeded inputs (batch 2);
//       exits 1 unless every output the split model has is bitwise identical in the merged one.
//
// The node_modules holding @huggingface/transformers (and its onnxruntime-node): a leading
// `--node-modules DIR`, else $WGI_NODE_MODULES, else third_party/pipelines/node_modules of this checkout.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadTransformersOffline } from './transformers_offline.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const modules = args[0] === '--node-modules' ? args.splice(0, 2)[1]
  : process.env.WGI_NODE_MODULES ?? path.join(here, '..', '..', 'third_party', 'pipelines', 'node_modules');
const packageDir = (name) => path.join(modules, ...name.split('/'));
const importPackage = async (name, entry) => import(pathToFileURL(path.join(packageDir(name), entry)).href);
const versionOf = (name) => JSON.parse(fs.readFileSync(path.join(packageDir(name), 'package.json'), 'utf8')).version;

function usage() {
  console.error('usage: node florence2_transformersjs.mjs [--node-modules DIR] FOLDER IMAGE TASK [MAX_NEW_TOKENS]\n' +
                '       node florence2_transformersjs.mjs --prompt-ids FOLDER TASK...\n' +
                '       node florence2_transformersjs.mjs --compare-decoders FOLDER');
  process.exit(2);
}

const loadTransformers = (folder) => loadTransformersOffline(modules, folder);

async function promptIds(folder, tasks) {
  const { t, id } = await loadTransformers(folder);
  const processor = await t.AutoProcessor.from_pretrained(id);
  const out = {};
  for (const task of tasks) {
    const prompt = processor.construct_prompts(task);
    out[task] = processor.tokenizer(prompt).input_ids.tolist()[0].map(Number);
  }
  return out;
}

async function generate(folder, imagePath, task, maxNewTokens) {
  const { t, id } = await loadTransformers(folder);
  const processor = await t.AutoProcessor.from_pretrained(id);
  const model = await t.Florence2ForConditionalGeneration.from_pretrained(id, { dtype: 'fp32', device: 'cpu' });
  const image = await t.RawImage.read(path.resolve(imagePath));
  const size = processor.image_processor.config.size;
  if (image.width !== size.width || image.height !== size.height) {
    throw new Error(`${imagePath} is ${image.width}x${image.height}; give an image at the processor's size ` +
                    `${size.width}x${size.height} (transformers.js's resize is not PIL's)`);
  }
  const prompts = processor.construct_prompts(task);
  const inputs = await processor(image, prompts);
  const generation = { max_new_tokens: maxNewTokens, num_beams: 1, do_sample: false };
  const generated = await model.generate({ ...inputs, ...generation });
  const generatedIds = generated.tolist()[0].map(Number);
  const text = processor.batch_decode(generated, { skip_special_tokens: false })[0];
  return {
    task,
    image: path.basename(imagePath),
    max_new_tokens: maxNewTokens,
    generation,
    input_ids: inputs.input_ids.tolist()[0].map(Number),
    generated_ids: generatedIds,
    generated_text: text,
    parsed: processor.post_process_generation(text, task, [image.width, image.height]),
    versions: { '@huggingface/transformers': versionOf('@huggingface/transformers'),
                'onnxruntime-node': versionOf('onnxruntime-node') },
  };
}

// Seeded uniform values in [-1, 1): xorshift32, so the comparison needs no package.
function randomFloats(count, state) {
  const out = new Float32Array(count);
  for (let i = 0; i < count; ++i) {
    state.s ^= state.s << 13; state.s >>>= 0;
    state.s ^= state.s >>> 17;
    state.s ^= state.s << 5; state.s >>>= 0;
    out[i] = state.s / 2 ** 31 - 1;
  }
  return out;
}

async function compareDecoders(folder) {
  const ort = await importPackage('onnxruntime-node', 'dist/index.js');
  const config = JSON.parse(fs.readFileSync(path.join(folder, 'config.json'), 'utf8')).text_config;
  const open = (name) => ort.InferenceSession.create(path.join(folder, 'onnx', name));
  const merged = await open('decoder_model_merged.onnx');
  const split = { false: await open('decoder_model.onnx'), true: await open('decoder_with_past_model.onnx') };
  const batch = 2, srcLen = 9, pastLen = 6, heads = config.decoder_attention_heads, d = config.d_model;
  const headDim = d / heads;
  const state = { s: 20261203 };
  const f32 = (dims) => new ort.Tensor('float32', randomFloats(dims.reduce((a, b) => a * b, 1), state), dims);
  const mask = new BigInt64Array(batch * srcLen).fill(1n);
  mask.fill(0n, 2 * srcLen - 3);  // the second row pads its last 3 positions
  let failures = 0;
  for (const useCache of [false, true]) {
    const feeds = {
      encoder_attention_mask: new ort.Tensor('int64', mask, [batch, srcLen]),
      encoder_hidden_states: f32([batch, srcLen, d]),
      inputs_embeds: f32([batch, useCache ? 1 : 4, d]),
      use_cache_branch: new ort.Tensor('bool', [useCache], [1]),
    };
    for (const name of merged.inputNames.filter((n) => n.startsWith('past_key_values.'))) {
      // The no-past branch ignores the past inputs: give it random ones of length 1 to show that.
      const len = name.includes('.encoder.') ? srcLen : (useCache ? pastLen : 1);
      feeds[name] = f32([batch, heads, len, headDim]);
    }
    const pick = (session) => Object.fromEntries(session.inputNames.map((n) => [n, feeds[n]]));
    const a = await merged.run(pick(merged));
    const b = await split[useCache].run(pick(split[useCache]));
    for (const name of split[useCache].outputNames) {
      const x = a[name].data, y = b[name].data;
      const sameDims = a[name].dims.join() === b[name].dims.join();
      let maxDiff = 0;
      for (let i = 0; i < Math.min(x.length, y.length); ++i) maxDiff = Math.max(maxDiff, Math.abs(x[i] - y[i]));
      const ok = sameDims && maxDiff === 0;
      failures += ok ? 0 : 1;
      console.log(`use_cache_branch=${useCache} ${name} [${a[name].dims}] vs [${b[name].dims}]: ` +
                  `max |diff| ${maxDiff}${ok ? '' : '  MISMATCH'}`);
    }
  }
  console.log(failures ? `${failures} outputs differ` : 'merged decoder == split decoders (bitwise)');
  return failures;
}

if (args[0] === '--prompt-ids') {
  if (args.length < 3) usage();
  console.log(JSON.stringify(await promptIds(args[1], args.slice(2))));
} else if (args[0] === '--compare-decoders') {
  if (args.length !== 2) usage();
  process.exit((await compareDecoders(args[1])) ? 1 : 0);
} else {
  if (args.length < 3 || args.length > 4) usage();
  const maxNewTokens = args[3] ? Number(args[3]) : 40;
  console.log(JSON.stringify(await generate(args[0], args[1], args[2], maxNewTokens), null, 1));
}
