// The browser tests of the pipelines and of issue 19's variant files (called by browser_tests.mjs):
//  (c) Florence-2 end to end (wgi.Florence2, web/wgi_web_pipelines.cpp) on tests/data/pipelines/florence2_tiny:
//      the prompt ids, the generated ids and text must equal transformers.js 4.3.1's answers in its
//      expected_<task>.json (the files the native tests/gpu/test_florence2.cpp reads), the parsed boxes within
//      1e-6 px (the reference's trip through JSON text; a location bin is 0.064 px here), with the merged
//      decoder and with the split decoder files;
//  (d) the tiny q4 and fp16 variants against onnxruntime-node on the same files (variant_cases.mjs for the
//      cases and their tolerances; run.mjs computes the references into build/web/ort_reference.json).
//  (e) SigLIP end to end (wgi.Siglip, its tokenizer from tokenizer.json) on tests/data/pipelines/siglip_tiny:
//      the texts' ids must equal transformers.js 4.3.1's in its expected_scores_*.json (the files the native
//      tests/gpu/test_siglip.cpp reads) and each score be within 1e-4 (float32 cosines a few ulps apart move
//      sigmoid(100 cos + 36) by less).
import * as wgi from '../../web/wgi.mjs';
import {decodeNpy, relativeL2} from './tensors.mjs';
import {VARIANT_CASES, ORT_REFERENCE_FILE} from './variant_cases.mjs';

const FLORENCE2_TINY = '/tests/data/pipelines/florence2_tiny/';
const SIGLIP_TINY = '/tests/data/pipelines/siglip_tiny/';

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// '' when `attempt` throws an error whose message includes `part`; else what went wrong (`what` names the
// attempt when it succeeded).
async function refusal(what, attempt, part) {
  try {
    await attempt();
  } catch (e) {
    return String(e.message).includes(part) ? '' : `"${e.message}" lacks "${part}"`;
  }
  return `no error for ${what}`;
}

// A pipeline created, then freed: an attempt for refusal().
const created = (Pipeline, source, options) => async () => (await Pipeline.create(source, options)).free();

// Differences between a Florence2.generate result and transformers.js's expected_<task>.json, '' if none.
function florence2Problems(got, want, task) {
  const problems = [];
  if (!(want.generated_ids.length > 3)) problems.push('the reference generated nothing to compare');
  for (const key of ['input_ids', 'generated_ids', 'generated_text']) {
    if (!same(got[key], want[key])) problems.push(`${key} ${JSON.stringify(got[key])} != ${JSON.stringify(want[key])}`);
  }
  const g = got.parsed && got.parsed[task], w = want.parsed[task];
  if (typeof w === 'string') {
    if (g !== w) problems.push(`parsed ${JSON.stringify(g)} != ${JSON.stringify(w)}`);
  } else {
    const key = w.quad_boxes ? 'quad_boxes' : 'bboxes';
    if (!g || !same(g.labels, w.labels)) problems.push(`labels ${JSON.stringify(g && g.labels)} != ${JSON.stringify(w.labels)}`);
    if (!g || !Array.isArray(g[key]) || g[key].length !== w[key].length || w[key].length === 0) {
      problems.push(`${key} ${JSON.stringify(g && g[key])} != ${JSON.stringify(w[key])}`);
    } else {
      w[key].forEach((box, b) => box.forEach((v, k) => {
        if (g[key][b].length !== box.length || !(Math.abs(g[key][b][k] - v) <= 1e-6)) {
          problems.push(`${key}[${b}][${k}] ${g[key][b][k]} != ${v}`);
        }
      }));
    }
  }
  return problems.join('; ');
}

async function florence2Tests(check, heavy) {
  const image = await fetchBytes(FLORENCE2_TINY + 'image.png');
  const tasks = [['<CAPTION>', 'caption'], ['<OD>', 'od'], ['<OCR_WITH_REGION>', 'ocr_with_region']];
  // CI's browser budget: <OD> (the <loc_> boxes) by default, every task with --heavy; the native suite
  // (tests/gpu/test_florence2.cpp) runs all three.
  const run = heavy ? tasks : tasks.filter(([task]) => task === '<OD>');
  const expected = {};
  for (const [, file] of tasks) expected[file] = await (await fetch(`${FLORENCE2_TINY}expected_${file}.json`)).json();

  const merged = await check('florence2/load merged decoder', async () => {
    const model = await wgi.Florence2.create(FLORENCE2_TINY);
    return model.decoderFiles === 'decoder_model_merged.onnx' ? model : `decoder files ${model.decoderFiles}`;
  });
  if (merged) {
    try {
      for (const [task, file] of run) {
        await check(`florence2/${file} (merged decoder)`, async () => florence2Problems(
            await merged.generate(image, {task, maxNewTokens: expected[file].max_new_tokens, numBeams: 1}),
            expected[file], task));
      }
      await check('florence2/errors name the problem', async () => {
        const problems = [];
        for (const [image2, options, part] of [
          [image, {task: '<NOT_A_TASK>'}, '<NOT_A_TASK>'],
          [image, {task: '<OD>', maxNewTokens: 0}, 'max_new_tokens must be at least 1'],
          [new Uint8Array([1, 2, 3]), {task: '<OD>'}, 'cannot read image'],
        ]) {
          problems.push(await refusal(JSON.stringify(options), () => merged.generate(image2, options), part));
        }
        return problems.filter(Boolean).join('; ');
      });
    } finally {
      await merged.free();
    }
  }
  // options.precision reaches every session: a value wgi does not have is refused, and so is f16 on an adapter
  // without shader-f16 (SwiftShader here; with it, tests/web/node_f16.mjs runs Florence-2 in f16 on the H200).
  await check('florence2/precision is checked', async () => {
    const adapter = await navigator.gpu.requestAdapter();
    const cases = [['f8', "'f8' is not one wgi has"]];
    if (!adapter.features.has('shader-f16')) cases.push(['f16', 'precision f16 needs']);
    const problems = [];
    for (const [precision, part] of cases) {
      problems.push(await refusal(`precision ${precision}`, created(wgi.Florence2, FLORENCE2_TINY, {precision}), part));
    }
    return problems.filter(Boolean).join('; ');
  });
  // options.dtype picks transformers.js's suffixed files (the C++ names them, as for `wgi florence2 --dtype`):
  // a folder whose only vision encoder and merged decoder are "_fp16" / "_q4" files (copies of the fp32 ones)
  // loads with those dtypes, and without them (or with an unknown dtype) fails naming what is wrong.
  await check('florence2/dtype picks the suffixed files', async () => {
    const files = {};
    for (const name of ['config.json', 'generation_config.json', 'preprocessor_config.json', 'tokenizer.json',
                        'tokenizer_config.json', 'onnx/embed_tokens.onnx', 'onnx/encoder_model.onnx']) {
      files[name] = await fetchBytes(FLORENCE2_TINY + name);
    }
    files['onnx/vision_encoder_fp16.onnx'] = await fetchBytes(FLORENCE2_TINY + 'onnx/vision_encoder.onnx');
    files['onnx/decoder_model_merged_q4.onnx'] = await fetchBytes(FLORENCE2_TINY + 'onnx/decoder_model_merged.onnx');
    const problems = [];
    // wgi's string form and transformers.js's object form.
    for (const dtype of ['embed_tokens=fp32,vision_encoder=fp16,decoder_model_merged=q4',
                         {vision_encoder: 'fp16', decoder_model_merged: 'q4'}]) {
      const model = await wgi.Florence2.create(files, {dtype});
      if (model.decoderFiles !== 'decoder_model_merged_q4.onnx') problems.push(`decoder files ${model.decoderFiles}`);
      await model.free();
    }
    for (const [dtype, part] of [['fp32', 'onnx/vision_encoder.onnx'], ['q3', "unknown dtype 'q3'"]]) {
      problems.push(await refusal(`dtype ${dtype}`, created(wgi.Florence2, files, {dtype}), part));
    }
    return problems.filter(Boolean).join('; ');
  });
  // The split decoder files from an in-memory folder (what a folder picker gives), on the page's own decoding
  // of the PNG (the demo's path: raw RGB; the same pixels as stb_image's). Short, to keep CI's time: 6 new
  // tokens at most, so the reference's first 6 ids, then the forced EOS at max_length - 1 (as the native
  // MaxNewTokensForcesEosAtTheLastPosition test). Only with run.mjs --heavy: five fresh sessions compile their
  // pipelines again (about 2 minutes on a loaded 2-core machine), more than CI's browser budget allows.
  if (!heavy) return;
  await check('florence2/od, 6 tokens (split decoder, files from memory, rgbImage)', async () => {
    const names = ['config.json', 'generation_config.json', 'preprocessor_config.json', 'tokenizer.json',
                   'tokenizer_config.json', 'onnx/embed_tokens.onnx', 'onnx/vision_encoder.onnx',
                   'onnx/encoder_model.onnx', 'onnx/decoder_model.onnx', 'onnx/decoder_with_past_model.onnx'];
    const files = {};
    for (const name of names) files[name] = await fetchBytes(FLORENCE2_TINY + name);
    const rgb = await wgi.rgbImage(new Blob([image], {type: 'image/png'}));
    const r = await wgi.florence2(files, rgb, {task: '<OD>', maxNewTokens: 6, numBeams: 1, decoder: 'split'});
    const want = [...expected.od.generated_ids.slice(0, 6), 2];  // 2: forced_eos_token_id
    if (!same(r.input_ids, expected.od.input_ids)) return `input_ids ${JSON.stringify(r.input_ids)}`;
    return same(r.generated_ids, want) ? '' : `generated_ids ${JSON.stringify(r.generated_ids)} != ${JSON.stringify(want)}`;
  });
}

async function siglipTests(check) {
  const model = await check('siglip/load (tokenizer.json)', async () => {
    const m = await wgi.Siglip.create(SIGLIP_TINY);
    return m.imageWidth === 40 && m.imageHeight === 40 && m.maxLength === 64 ? m :
        `size ${m.imageWidth}x${m.imageHeight}, max_length ${m.maxLength}`;
  });
  if (!model) return;
  try {
    for (const file of ['expected_scores_a.json', 'expected_scores_b.json', 'expected_scores_c.json']) {
      await check(`siglip/${file}`, async () => {
        const want = await (await fetch(SIGLIP_TINY + file)).json();
        const image = await fetchBytes(SIGLIP_TINY + want.image);
        const got = await model.classify(image, want.labels, {hypothesisTemplate: want.hypothesis_template});
        const problems = [];
        if (!(want.scores.length > 0)) problems.push('the reference has no scores to compare');
        if (!same(got.input_ids, want.input_ids)) problems.push(`input_ids ${JSON.stringify(got.input_ids)} differ`);
        let worst = 0;
        want.scores.forEach((score, i) => {
          const error = Math.abs(got.scores[i] - score);
          worst = Math.max(worst, error);
          if (!(error <= 1e-4)) problems.push(`${want.labels[i]}: score ${got.scores[i]} != ${score}`);
        });
        return problems.length ? problems.join('; ') : {detail: `max score error ${worst.toExponential(1)}`};
      });
    }
    await check('siglip/errors name the problem', async () => {
      const image = await fetchBytes(SIGLIP_TINY + 'image_a.png');
      const problems = [];
      for (const [labels, options, part] of [
        [[], {}, 'no candidate labels'],
        [['cat'], {hypothesisTemplate: 'a photo'}, 'has no {} to put the label in'],
      ]) {
        problems.push(await refusal(JSON.stringify([labels, options]), () => model.classify(image, labels, options),
                                    part));
      }
      problems.push(await refusal('precision f8', created(wgi.Siglip, SIGLIP_TINY, {precision: 'f8'}),
                                  "'f8' is not one wgi has"));
      return problems.filter(Boolean).join('; ');
    });
    // options.dtype names the joint model's file (the C++ does: SiglipOptions::file): a folder whose only model
    // is model_fp16.onnx (a copy of the fp32 one) loads with dtype fp16 and scores as the reference; an unknown
    // dtype, or a dtype and a model file together, are refused.
    await check('siglip/dtype names the model file', async () => {
      const want = await (await fetch(SIGLIP_TINY + 'expected_scores_a.json')).json();
      const files = {};
      for (const name of ['config.json', 'preprocessor_config.json', 'tokenizer.json', 'tokenizer_config.json',
                          'special_tokens_map.json']) {
        files[name] = await fetchBytes(SIGLIP_TINY + name);
      }
      files['onnx/model_fp16.onnx'] = await fetchBytes(SIGLIP_TINY + 'onnx/model.onnx');
      const problems = [];
      const fp16 = await wgi.Siglip.create(files, {dtype: 'fp16'});
      try {
        const got = await fp16.classify(await fetchBytes(SIGLIP_TINY + want.image), want.labels,
                                        {hypothesisTemplate: want.hypothesis_template});
        want.scores.forEach((score, i) => {
          if (!(Math.abs(got.scores[i] - score) <= 1e-4)) problems.push(`${want.labels[i]}: ${got.scores[i]} != ${score}`);
        });
      } finally {
        await fp16.free();
      }
      for (const [options, part] of [[{dtype: 'q3'}, "unknown dtype 'q3'"],
                                     [{dtype: 'fp16', modelFile: 'model_fp16.onnx'}, 'not both']]) {
        problems.push(await refusal(JSON.stringify(options), created(wgi.Siglip, files, options), part));
      }
      return problems.filter(Boolean).join('; ');
    });
  } finally {
    await model.free();
  }
}

async function variantTests(check) {
  let references = null;
  await check('variants/onnxruntime references', async () => {
    const response = await fetch('/' + ORT_REFERENCE_FILE);
    if (!response.ok) return `/${ORT_REFERENCE_FILE}: HTTP ${response.status} (tests/web/run.mjs writes it)`;
    references = await response.json();
    return '';
  });
  if (!references) return;
  for (const c of VARIANT_CASES) {
    await check(`variant/${c.name}`, async () => {
      const base = `/${c.dir}/`;
      const session = await wgi.Session.create(await fetchBytes(base + c.model));
      try {
        const feeds = {};
        for (const input of session.inputs) feeds[input.name] = decodeNpy(await fetchBytes(`${base}input_${input.name}.npy`));
        const got = await session.run(feeds);
        const want = references[c.name] || {};
        const problems = [], errors = [];
        for (const [name, ref] of Object.entries(want)) {
          if (!got[name]) { problems.push(`no output ${name}`); continue; }
          const error = relativeL2(got[name], {dims: ref.dims, data: ref.data});
          errors.push(`${name} ${error.toExponential(1)}`);
          if (!(error <= c.vsOrt)) problems.push(`${name}: relative L2 error vs onnxruntime ${error} > ${c.vsOrt}`);
          if (c.vsFloat64) {
            const expected = decodeNpy(await fetchBytes(`${base}expected_${name}.npy`));
            const e64 = relativeL2(got[name], expected);
            errors.push(`vs float64 ${e64.toExponential(1)}`);
            if (!(e64 <= c.vsFloat64)) problems.push(`${name}: relative L2 error vs float64 ${e64} > ${c.vsFloat64}`);
          }
        }
        if (Object.keys(want).length === 0) problems.push('no onnxruntime outputs to compare');
        return problems.length ? problems.join('; ') : {detail: errors.join(', ')};
      } finally {
        await session.free();
      }
    });
  }
}

// report(ok, name, detail) as in browser_tests.mjs; `only` filters by name.
// heavy: also the slow cases (run.mjs --heavy).
export async function runPipelineTests(report, only = '', heavy = false) {
  // Runs one test: fn returns '' or {detail} (pass), a message (fail), or a value to hand back (pass).
  const check = async (name, fn) => {
    if (!name.includes(only)) return null;
    const start = performance.now();
    try {
      const result = await fn();
      const ms = `${(performance.now() - start).toFixed(0)} ms`;
      if (typeof result === 'string' && result) report(false, name, result);
      else report(true, name, result && result.detail ? `${result.detail}; ${ms}` : ms);
      return typeof result === 'string' ? null : result;
    } catch (e) {
      report(false, name, String(e && e.message || e));
      return null;
    }
  };
  await florence2Tests(check, heavy);
  await siglipTests(check);
  await variantTests(check);
}
