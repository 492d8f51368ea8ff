// The WebAssembly build on Node.js through dawn.node (web/node.mjs, web/cli.mjs) on SwiftShader: a subset of
// the browser tests' checks, with the same references and tolerances (tests/web/browser_tests.mjs):
//  (a) a few ONNX node conformance tests (Debian's input_N.pb / output_N.pb, decoded by tensors.mjs),
//      |got - want| <= 1e-5 + 1e-4 |want| for floats, exact for integers;
//  (b) small models of tests/data/models against their PyTorch .npy references, relative L2 error <= 1e-4,
//      first run and replay; one of them saved by python3-onnx with its weights in an external data file;
//  (c) the CLI: info (the toggles reach dawn.node), run (outputs written as .npy, read back by tensors.mjs
//      against the reference), bench, and its errors for bad input (exit 2 and a message naming the problem).
//   node tests/web/node_run.mjs [--filter SUBSTRING]
// Needs scripts/build-web and scripts/setup (third_party/dawn-node). Exits 1 if any check fails.
import {execFileSync, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import * as wgi from '../../web/node.mjs';
import {decodeTensorProto, decodeNpy, compare, relativeL2} from './tensors.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const filter = args.includes('--filter') ? args[args.indexOf('--filter') + 1] : '';
const nodeTests = '/usr/share/libonnx-testdata/data/node';
const models = path.join(repo, 'tests/data/models');
const cli = path.join(repo, 'web/cli.mjs');
// SwiftShader, as the browser tests; the CLI child processes get the same through WGI_BACKEND.
const env = {...process.env, WGI_BACKEND: 'swiftshader', WGI_ADAPTER: '', WGI_DAWN_TOGGLES: ''};

// One test per op family that the conformance subset covers, kept short for CI (the browser runs them all).
const CONFORMANCE = [
  'test_add_bcast', 'test_conv_with_strides_padding', 'test_matmul_3d', 'test_softmax_axis_1',
  'test_reduce_sum_keepdims_random', 'test_transpose_all_permutations_3', 'test_layer_normalization_4d_axis1',
  'test_argmax_default_axis_example', 'test_gather_0', 'test_slice',
];
let passed = 0, failed = 0;
const started = Date.now();
function report(ok, name, detail = '') {
  if (ok) ++passed; else ++failed;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
}
async function check(name, fn) {
  if (!name.includes(filter)) return;
  const t0 = Date.now();
  try {
    const problem = await fn();
    report(!problem, name, problem || `${Date.now() - t0} ms`);
  } catch (e) {
    report(false, name, String(e && e.stack || e));
  }
}
const read = (file) => new Uint8Array(fs.readFileSync(file));

async function conformance(name) {
  const base = path.join(nodeTests, name);
  const session = await wgi.Session.create(read(path.join(base, 'model.onnx')));
  try {
    const feeds = {}, problems = [];
    session.inputs.forEach((info, i) => {
      const t = decodeTensorProto(read(path.join(base, `test_data_set_0/input_${i}.pb`)));
      feeds[t.name || info.name] = {data: t.data, dims: t.dims, dtype: t.dtype};
    });
    const got = await session.run(feeds);
    session.outputs.forEach((info, i) => {
      const want = decodeTensorProto(read(path.join(base, `test_data_set_0/output_${i}.pb`)));
      const name = want.name || info.name;
      const problem = got[name] ? compare(got[name], want) : 'missing';
      if (problem) problems.push(`${name}: ${problem}`);
    });
    return problems.join('; ') || (session.outputs.length ? '' : 'the model has no outputs: nothing compared');
  } finally {
    await session.free();
  }
}

// Runs `dir`'s model on its input files twice (first run, replay) against the expected_*.npy references.
async function modelCase(dir, inputs, outputs, createOptions = {}) {
  const session = await wgi.Session.create(read(path.join(dir, 'model.onnx')), createOptions);
  try {
    const feeds = {};
    for (const [name, file] of Object.entries(inputs)) feeds[name] = decodeNpy(read(path.join(models, file)));
    for (const pass of ['first run', 'replay']) {
      const got = await session.run(feeds);
      for (const [name, file] of Object.entries(outputs)) {
        const want = decodeNpy(read(path.join(models, file)));
        if (!got[name]) return `${pass}: no output ${name}`;
        const error = relativeL2(got[name], want);
        if (!(error <= 1e-4)) return `${pass}: ${name} relative L2 error ${error} > 1e-4`;
      }
    }
    return '';
  } finally {
    await session.free();
  }
}

function runCli(cliArgs) {
  const r = spawnSync(process.execPath, [cli, ...cliArgs], {env, encoding: 'utf8', timeout: 120000});
  return {code: r.status, out: r.stdout || '', err: r.stderr || ''};
}

// '' when the CLI ends with exit code `code` (2: bad input; 1: an error inside wgi) and a stderr `message`
// matches; else what it did.
function cliRefusal(cliArgs, code, message) {
  const r = runCli(cliArgs);
  return r.code === code && message.test(r.err) ? '' : `${cliArgs.join(' ')}: exit ${r.code}, stderr ${JSON.stringify(r.err)}`;
}

await wgi.setup({backend: 'swiftshader'});
const adapter = await wgi.adapterInfo();
const adapterName = [adapter.vendor, adapter.device, adapter.description].join(' ');
await check('adapter is SwiftShader through dawn.node', async () =>
  /swiftshader/i.test(adapterName) ? '' : `got '${adapterName}'`);

for (const name of CONFORMANCE) await check('conformance/' + name, () => conformance(name));

const convBnRelu = path.join(models, 'conv_bn_relu');
await check('model/conv_bn_relu batch 2', () => modelCase(convBnRelu, {image: 'conv_bn_relu/input_image.npy'},
  {probabilities: 'conv_bn_relu/expected_probabilities.npy'}));

// The same model with its weights moved to an external data file by python3-onnx (not by wgi's code).
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wgi-node-test-'));
await check('model/conv_bn_relu with external data', async () => {
  const dir = path.join(tmp, 'external');
  fs.mkdirSync(path.join(dir, "weights"), {recursive: true});
  execFileSync('/usr/bin/python3', ['-c', `
import onnx, sys
m = onnx.load(sys.argv[1])
onnx.save_model(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True,
                location="weights/conv.bin", size_threshold=0)`,
  path.join(convBnRelu, 'model.onnx'), path.join(dir, 'model.onnx')]);
  if (!fs.existsSync(path.join(dir, 'weights/conv.bin'))) return 'python3-onnx wrote no external data file';
  const {bytes, externalData} = wgi.readModelFiles(path.join(dir, 'model.onnx'));
  if (Object.keys(externalData).join() !== 'weights/conv.bin') {
    return `external data found: ${JSON.stringify(Object.keys(externalData))}, expected weights/conv.bin`;
  }
  const problem = await modelCase(dir, {image: 'conv_bn_relu/input_image.npy'},
                                  {probabilities: 'conv_bn_relu/expected_probabilities.npy'}, {externalData});
  if (problem) return problem;
  // Without the data file the importer must refuse, naming it.
  try {
    const s = await wgi.Session.create(bytes);
    await s.free();
    return 'a model whose external data was not given loaded anyway';
  } catch (e) {
    return /conv\.bin/.test(e.message) ? '' : `unexpected error without the data file: ${e.message}`;
  }
});

await check('cli/info --json', async () => {
  const r = runCli(['info', '--json', '--toggles', 'allow_unsafe_apis']);
  if (r.code !== 0) return `exit ${r.code}: ${r.err}`;
  const info = JSON.parse(r.out);
  if (!info.flags.includes('enable-dawn-features=allow_unsafe_apis')) return `flags ${info.flags}`;
  if (!info.features.length || !info.limits.maxStorageBufferBindingSize) return 'no features or limits';
  return '';
});

await check('cli/run --input --output-dir (conv_bn_relu, batch 1)', async () => {
  const out = path.join(tmp, 'run');
  const dir = convBnRelu;
  const r = runCli(['run', path.join(dir, 'model.onnx'), '--input',
                    `image=${path.join(dir, 'input_batch1_image.npy')}`, '--output-dir', out]);
  if (r.code !== 0) return `exit ${r.code}: ${r.err}`;
  const got = decodeNpy(read(path.join(out, 'probabilities.npy')));
  const want = decodeNpy(read(path.join(dir, 'expected_batch1_probabilities.npy')));
  const error = relativeL2(got, want);
  return error <= 1e-4 ? '' : `relative L2 error ${error} > 1e-4`;
});

await check('cli/run --random-inputs --dim', async () => {
  const r = runCli(['run', path.join(convBnRelu, 'model.onnx'), '--random-inputs', '3', '--dim', 'N=3']);
  if (r.code !== 0) return `exit ${r.code}: ${r.err}`;
  return /^probabilities: float32 \[3, /m.test(r.out) ? '' : `unexpected output: ${r.out}`;
});

await check('cli/bench --json', async () => {
  const r = runCli(['bench', path.join(convBnRelu, 'model.onnx'), '--dim', 'N=2', '--runs', '3', '--warmup', '0',
                    '--json']);
  if (r.code !== 0) return `exit ${r.code}: ${r.err}`;
  const b = JSON.parse(r.out);
  return b.times_ms.length === 3 && b.median_ms > 0 && b.min_ms <= b.median_ms && b.median_ms <= b.p90_ms
      ? '' : `inconsistent results ${r.out}`;
});

await check('cli/bench --profile', async () => {
  const r = runCli(['bench', path.join(convBnRelu, 'model.onnx'), '--dim', 'N=1', '--runs', '2', '--warmup', '0',
                    '--profile']);
  if (r.code !== 0) return `exit ${r.code}: ${r.err}`;
  // Without timestamp queries the profile says why; with them, by op type, by kernel, the slowest nodes.
  if (/^profile: /m.test(r.out)) return '';
  const sections = ['GPU time by op type', 'GPU time by kernel', 'slowest nodes:'];
  const missing = sections.filter((t) => !r.out.includes(t));
  if (missing.length) return `missing ${missing.join(', ')}: ${r.out}`;
  return /^ +[0-9.]+ ms {2}x[0-9]+ {2}[a-z]/m.test(r.out) ? '' : `no kernel rows: ${r.out}`;
});

// Dawn's timestamp quantisation (65.536 us steps) is off by default under Node (web/node.mjs), as natively:
// with it on, every node's time of two runs is a multiple of 32.768 us. Unless the toggle is enabled on
// purpose, which keeps it.
await check('cli/bench --profile: timestamps not quantised', async () => {
  const args = ['bench', path.join(convBnRelu, 'model.onnx'), '--dim', 'N=1', '--runs', '2', '--warmup', '0',
                '--profile', '--json'];
  const stepMs = 0.065536 / 2;
  const onSteps = (profile) =>
    profile.every((n) => Math.abs(n.gpu_ms / stepMs - Math.round(n.gpu_ms / stepMs)) < 1e-6);
  // Each run's profile, or why there is none (an empty one would make either answer vacuous).
  const profileOf = (r, what) => {
    if (r.code !== 0) return {problem: `${what}: exit ${r.code}: ${r.err}`};
    const profile = JSON.parse(r.out).profile;
    return profile && profile.length ? {profile} : {problem: `${what}: no profile: ${r.out}`};
  };
  const plain = profileOf(runCli(args), 'by default');
  if (plain.problem) return plain.problem;
  if (onSteps(plain.profile))
    return `every node's time is a multiple of ${stepMs} ms: ${JSON.stringify(plain.profile)}`;
  const kept = profileOf(runCli([...args, '--toggles', 'timestamp_quantization']), 'with the toggle enabled');
  if (kept.problem) return kept.problem;
  return onSteps(kept.profile)
      ? '' : `enabling timestamp_quantization did not quantise: ${JSON.stringify(kept.profile)}`;
});

// --device-inputs: the inputs uploaded once, the outputs left on the device (Session.runOnDevice); the same
// session's ordinary run afterwards still returns the right outputs, and runOnDevice with no inputs ever given
// is refused naming the input.
await check('cli/bench --device-inputs', async () => {
  const r = runCli(['bench', path.join(convBnRelu, 'model.onnx'), '--dim', 'N=2', '--runs', '3', '--warmup', '0',
                    '--device-inputs', '--json']);
  if (r.code !== 0) return `exit ${r.code}: ${r.err}`;
  const b = JSON.parse(r.out);
  return b.device_inputs === true && b.times_ms.length === 3 && b.median_ms > 0 ? '' : `unexpected ${r.out}`;
});

await check('api/runOnDevice', async () => {
  const dir = path.join(models, 'gemm_chain');
  const session = await wgi.Session.create(read(path.join(dir, 'model.onnx')));
  try {
    let refusal = '';
    try {
      await session.runOnDevice();
    } catch (e) {
      refusal = String(e.message || e);
    }
    if (!/input 'x' is missing/.test(refusal)) return `runOnDevice without inputs: '${refusal}', expected a refusal naming x`;
    const x = decodeNpy(read(path.join(dir, 'input_x.npy')));
    await session.runOnDevice({x: {data: x.data, dims: x.dims}});
    await session.runOnDevice();
    const got = await session.run({x: {data: x.data, dims: x.dims}});
    const want = decodeNpy(read(path.join(dir, 'expected_y.npy')));
    const error = relativeL2(got.y, want);
    return error <= 1e-4 ? '' : `relative L2 ${error} after runs on the device`;
  } finally {
    await session.free();
  }
});

await check('cli/bad inputs are refused with a message', async () => {
  const bad = path.join(tmp, 'bad.npy');
  fs.writeFileSync(bad, 'not numpy');
  const model = path.join(models, 'gemm_chain/model.onnx');
  const cases = [
    [['run', path.join(tmp, 'missing.onnx'), '--random-inputs', '1'], /model '.*missing\.onnx' not found/],
    [['run', model, '--input', `x=${bad}`], /not a \.npy file/],
    [['run', model, '--input', 'nope=x.npy'], /has no input 'nope'/],
    [['run', model], /no value for input\(s\) x/],
    [['bench', model, '--runs', '0'], /--runs must be an integer of at least 1/],
    [['run', model, '--frobnicate'], /unknown option '--frobnicate'/],
    [['run', model, '--random-inputs', '1', '--backend', 'gles'], /backend 'gles' is not available/],
  ];
  return cases.map(([cliArgs, message]) => cliRefusal(cliArgs, 2, message)).filter(Boolean).join('; ');
});

// Florence-2's pipeline through the Node CLI (web/wgi.mjs Florence2 reading only the files it needs from
// disk): the tiny folder's <OD>, greedy, 6 new tokens: transformers.js's first 6 ids, then the forced EOS (as
// the browser's split-decoder case and the native MaxNewTokensForcesEosAtTheLastPosition).
await check('cli/florence2 <OD> on the tiny folder (--json)', async () => {
  const folder = path.join(repo, 'tests/data/pipelines/florence2_tiny');
  const want = JSON.parse(fs.readFileSync(path.join(folder, 'expected_od.json'), 'utf8'));
  const r = runCli(['florence2', folder, path.join(folder, 'image.png'), '--task', '<OD>', '--num-beams', '1',
                    '--max-new-tokens', '6', '--json']);
  if (r.code !== 0) return `exit ${r.code}: ${r.err}`;
  const got = JSON.parse(r.out);
  const ids = [...want.generated_ids.slice(0, 6), 2];  // 2: forced_eos_token_id
  if (JSON.stringify(got.input_ids) !== JSON.stringify(want.input_ids)) return `input_ids ${JSON.stringify(got.input_ids)}`;
  if (JSON.stringify(got.generated_ids) !== JSON.stringify(ids)) return `generated_ids ${JSON.stringify(got.generated_ids)}`;
  if (!(got.decode_steps > 0 && got.stages.decode_ms > 0)) return `no decode steps or stages in ${r.out}`;
  const problems = [];
  for (const [cliArgs, code, message] of [
    [['florence2', folder, path.join(folder, 'image.png')], 2, /florence2 needs --task/],
    [['florence2', folder, path.join(tmp, 'missing.png'), '--task', '<OD>'], 2, /image '.*missing\.png' not found/],
    [['florence2', folder, path.join(folder, 'image.png'), '--task', '<OD>', '--dtype', 'q3'], 1, /unknown dtype 'q3'/],
  ]) {
    problems.push(cliRefusal(cliArgs, code, message));
  }
  return problems.filter(Boolean).join('; ');
});

// SigLIP through the Node CLI: the tiny folder's scores against transformers.js's (within 1e-4, as in the
// browser), and its bad-input messages.
await check('cli/siglip on the tiny folder (--json)', async () => {
  const folder = path.join(repo, 'tests/data/pipelines/siglip_tiny');
  const want = JSON.parse(fs.readFileSync(path.join(folder, 'expected_scores_a.json'), 'utf8'));
  const r = runCli(['siglip', folder, path.join(folder, want.image), '--labels', want.labels.join(','),
                    '--template', want.hypothesis_template, '--json']);
  if (r.code !== 0) return `exit ${r.code}: ${r.err}`;
  const got = JSON.parse(r.out);
  if (!(want.scores.length > 0)) return 'the reference has no scores';
  const problems = [];
  want.scores.forEach((score, i) => {
    if (!(Math.abs(got.scores[i] - score) <= 1e-4)) problems.push(`${want.labels[i]}: ${got.scores[i]} != ${score}`);
  });
  for (const [cliArgs, message] of [
    [['siglip', folder, path.join(folder, want.image)], /siglip needs --labels/],
    [['siglip', folder, path.join(folder, want.image), '--labels', 'cat', '--template', 'a photo'], /has no \{\}/],
    [['siglip', path.join(tmp, 'nowhere'), path.join(folder, want.image), '--labels', 'cat'], /model folder .* not found/],
  ]) {
    problems.push(cliRefusal(cliArgs, 2, message));
  }
  return problems.filter(Boolean).join('; ');
});

await check('cli/--help lists every option the parser takes', async () => {
  for (const command of ['run', 'bench', 'info', 'florence2', 'siglip']) {
    const r = runCli([command, '--help']);
    if (r.code !== 0) return `${command} --help: exit ${r.code}`;
    for (const option of ['--toggles', '--backend', '--adapter']) {
      if (!r.out.includes(option)) return `${command} --help lacks ${option}`;
    }
  }
  return '';
});

fs.rmSync(tmp, {recursive: true, force: true});
console.log(`node tests: ${passed} passed, ${failed} failed on ${adapterName.trim()} through dawn.node ` +
            `(${((Date.now() - started) / 1000).toFixed(1)} s)`);
wgi.shutdown();
process.exit(failed > 0 || passed === 0 ? 1 : 0);
