// The browser tests (run headless by tests/web/run.mjs, or open /tests/web/ from tests/web/serve.mjs):
//  (a) a subset of ONNX's node conformance tests (conformance_subset.txt), outputs within
//      |got - want| <= 1e-5 + 1e-4 |want| for floats and exact for integers, as the native wgi_conformance;
//  (b) the small models of tests/data/models against their PyTorch .npy references, relative L2 error <= 1e-4
//      per output, as the native tests/gpu/test_models.cpp.
//  (c), (d) Florence-2 end to end and issue 19's q4 / fp16 variant files: pipeline_tests.mjs (?heavy=1: its slow cases).
// Results: window.wgiTestResults = {done, passed, failed, lines, adapter}; each line is also logged.
import * as wgi from '../../web/wgi.mjs';
import {decodeTensorProto, decodeNpy, compare, relativeL2} from './tensors.mjs';
import {runPipelineTests} from './pipeline_tests.mjs';

const results = {done: false, passed: 0, failed: 0, lines: [], adapter: ''};
window.wgiTestResults = results;
const params = new URLSearchParams(location.search);
const logEl = document.getElementById('log');

function report(ok, name, detail = '') {
  const line = `${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`;
  results.lines.push(line);
  if (ok) ++results.passed; else ++results.failed;
  console.log('wgi-test ' + line);
  const span = document.createElement('span');
  span.className = ok ? 'pass' : 'fail';
  span.textContent = line + '\n';
  logEl.append(span);
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function runConformance(name) {
  const base = `/onnx-testdata/node/${name}/`;
  const session = await wgi.Session.create(await fetchBytes(base + 'model.onnx'));
  try {
    results.adapter = session.adapter;
    const feeds = {}, expected = [];
    for (let i = 0; i < session.inputs.length; ++i) {
      const t = decodeTensorProto(await fetchBytes(`${base}test_data_set_0/input_${i}.pb`));
      feeds[t.name || session.inputs[i].name] = {data: t.data, dims: t.dims, dtype: t.dtype};
    }
    for (let i = 0; i < session.outputs.length; ++i) {
      const t = decodeTensorProto(await fetchBytes(`${base}test_data_set_0/output_${i}.pb`));
      expected.push({...t, name: t.name || session.outputs[i].name});
    }
    const got = await session.run(feeds);
    const problems = [];
    for (const want of expected) {
      if (!got[want.name]) { problems.push(`no output ${want.name}`); continue; }
      const problem = compare(got[want.name], want);
      if (problem) problems.push(`${want.name}: ${problem}`);
    }
    return problems.join('; ');
  } finally {
    await session.free();
  }
}

// Model folders of tests/data/models with their inputs and PyTorch reference outputs.
const MODEL_CASES = [
  {model: 'gemm_chain', inputs: {x: 'input_x.npy'}, outputs: {y: 'expected_y.npy'}},
  {model: 'conv_bn_relu', inputs: {image: 'input_image.npy'}, outputs: {probabilities: 'expected_probabilities.npy'}},
  {model: 'conv_bn_relu', inputs: {image: 'input_batch1_image.npy'},
   outputs: {probabilities: 'expected_batch1_probabilities.npy'}},
  {model: 'small_cnn_opset13', inputs: {x: 'input_x.npy'}, outputs: {y: 'expected_y.npy'}},
  {model: 'small_cnn_opset17', inputs: {x: 'input_x.npy'}, outputs: {y: 'expected_y.npy'}},
  {model: 'tiny_transformer_opset17', inputs: {x: 'input_x.npy'}, outputs: {y: 'expected_y.npy'}},
  {model: 'siglip_vision_tiny_opset17', inputs: {pixel_values: 'input_pixel_values.npy'},
   outputs: {last_hidden_state: 'expected_last_hidden_state.npy', pooler_output: 'expected_pooler_output.npy'}},
];

async function runModel(c) {
  const base = `/tests/data/models/${c.model}/`;
  const session = await wgi.Session.create(await fetchBytes(base + 'model.onnx'));
  try {
    const feeds = {};
    for (const [name, file] of Object.entries(c.inputs)) feeds[name] = decodeNpy(await fetchBytes(base + file));
    // Twice: the second run replays the recorded plan, which must give the same answer.
    for (const pass of ['first run', 'replay']) {
      const got = await session.run(feeds);
      for (const [name, file] of Object.entries(c.outputs)) {
        const want = decodeNpy(await fetchBytes(base + file));
        if (!got[name]) return `${pass}: no output ${name}`;
        const error = relativeL2(got[name], want);
        if (!(error <= 1e-4)) {
          return `${pass}: ${name} relative L2 error ${error} > 1e-4 (shape [${got[name].dims}] vs [${want.dims}])`;
        }
      }
    }
    return '';
  } finally {
    await session.free();
  }
}

// Two sessions of one model on one wgi.Environment: the same bytes as a session with a device of its own,
// within the float64 reference, the second compiling no pipeline; the environment handle freed first.
async function runSharedEnvironment() {
  const base = '/tests/data/models/conv_bn_relu/';
  const bytes = await fetchBytes(base + 'model.onnx');
  const feeds = {image: decodeNpy(await fetchBytes(base + 'input_image.npy'))};
  const want = decodeNpy(await fetchBytes(base + 'expected_probabilities.npy'));
  const alone = await wgi.Session.create(bytes);
  const env = await wgi.Environment.create();
  const first = await wgi.Session.create(bytes, {environment: env});
  const second = await wgi.Session.create(bytes, {environment: env});
  await env.free();  // the sessions keep the device
  try {
    const reference = (await alone.run(feeds)).probabilities;
    const error = relativeL2(reference, want);
    if (!(error <= 1e-4)) return `relative L2 error ${error} > 1e-4`;
    const same = (a, b) => a.data.length === b.data.length && a.data.every((v, i) => Object.is(v, b.data[i]));
    for (const [label, session] of [['first', first], ['second', second]]) {
      const got = (await session.run(feeds)).probabilities;
      if (!same(got, reference)) return `${label} shared session: not bit-identical to a separate session's`;
    }
    const compiled = second.stats().pipelines_compiled;
    if (compiled !== 0) return `the second session compiled ${compiled} pipelines (0 expected)`;
    if (!(first.stats().pipelines_compiled > 0)) return 'the first session compiled no pipeline';
    return '';
  } finally {
    await first.free();
    await second.free();
    await alone.free();
  }
}

async function main() {
  const status = document.getElementById('status');
  if (!wgi.webgpuAvailable()) {
    report(false, 'webgpu', 'navigator.gpu is undefined: this browser exposes no WebGPU');
    return;
  }
  const only = params.get('filter') || '';
  const list = (await (await fetch('conformance_subset.txt')).text())
                   .split('\n').map((s) => s.trim()).filter((s) => s && !s.startsWith('#') && s.includes(only));
  for (const name of list) {
    const start = performance.now();
    try {
      const problem = await runConformance(name);
      report(!problem, 'conformance/' + name, problem || `${(performance.now() - start).toFixed(0)} ms`);
    } catch (e) {
      report(false, 'conformance/' + name, String(e && e.stack || e));
    }
  }
  for (const c of MODEL_CASES) {
    const label = `model/${c.model}/${Object.values(c.inputs).join(',')}`;
    if (!label.includes(only)) continue;
    const start = performance.now();
    try {
      const problem = await runModel(c);
      report(!problem, label, problem || `${(performance.now() - start).toFixed(0)} ms`);
    } catch (e) {
      report(false, label, String(e && e.message || e));
    }
  }
  if ('environment/shared-sessions'.includes(only)) {
    try {
      const problem = await runSharedEnvironment();
      report(!problem, 'environment/shared-sessions', problem || 'ok');
    } catch (e) {
      report(false, 'environment/shared-sessions', String(e && e.message || e));
    }
  }
  await runPipelineTests(report, only, !!params.get('heavy'));
  status.textContent = `${results.passed} passed, ${results.failed} failed on ${results.adapter}`;
}

main().catch((e) => report(false, 'harness', String(e && e.stack || e))).finally(() => { results.done = true; });
