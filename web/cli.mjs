#!/usr/bin/env node
// wgi's command line on Node.js: the WebAssembly build on dawn.node (web/node.mjs), with the native `wgi`'s
// option names where the two overlap (tools/wgi/). See docs/node.md.
//   node web/cli.mjs info [--json]
//   node web/cli.mjs run MODEL.onnx [--input NAME=FILE.npy]... [--random-inputs SEED] [--dim NAME=VALUE]...
//                        [--output-dir DIR] [--precision f32|f16]
//   node web/cli.mjs bench MODEL.onnx [--runs N] [--warmup N] [--profile] [--json] (and run's input options)
//   node web/cli.mjs florence2 MODEL_DIR IMAGE --task TASK [--text T] [--max-new-tokens N] [--num-beams N]
//                        [--dtype D|session=D,...] [--precision f32|f16] [--runs N] [--json]
//   node web/cli.mjs siglip MODEL_DIR IMAGE --labels a,b,c [--template T] [--model-file F | --dtype D]
//                        [--precision P] [--json]
// Every command also takes the dawn.node options: --toggles, --disable-toggles, --backend, --adapter, --dawn-flag.
import fs from 'node:fs';
import path from 'node:path';
import {performance} from 'node:perf_hooks';
import * as wgi from './node.mjs';
import {parseNpy, formatNpy} from './npy.mjs';

class UsageError extends Error {}

const DAWN_OPTIONS = {
  '--toggles': {value: 'A,B', help: 'Dawn toggles to enable (default: WGI_DAWN_TOGGLES), e.g. allow_unsafe_apis'},
  '--disable-toggles': {value: 'A,B', help: 'Dawn toggles to disable (default: WGI_DAWN_DISABLE_TOGGLES); timestamp_quantization is disabled unless --toggles names it'},
  '--backend': {value: 'NAME', help: 'vulkan or swiftshader (default: WGI_BACKEND, else vulkan)'},
  '--adapter': {value: 'NAME', help: "dawn.node's adapter= choice: the adapter name (default: WGI_ADAPTER)"},
  '--dawn-flag': {value: 'FLAG', repeat: true, help: 'Any other dawn.node create() flag, e.g. validate=1 (repeatable)'},
};
const INPUT_OPTIONS = {
  '--input': {value: 'NAME=FILE.npy', repeat: true, help: 'An input from a .npy file (repeatable)'},
  '--random-inputs': {value: 'SEED',
                      help: 'Fill inputs not given with --input from this seed (floats uniform in [-1, 1), integers 0)'},
  '--dim': {value: 'NAME=VALUE', repeat: true, help: 'A symbolic input dim, for --random-inputs (repeatable)'},
  '--precision': {value: 'f32|f16',
                  help: 'f16: constant-weight GEMMs, large convs and attention on subgroup matrices (needs shader-f16 and those)'},
};
const COMMANDS = {
  info: {
    summary: 'Show the adapter dawn.node gives wgi: name, features, subgroup matrices, limits',
    positional: [],
    options: {'--json': {help: 'Print as JSON'}, ...DAWN_OPTIONS},
  },
  run: {
    summary: 'Run a model once; print each output, and write it to DIR/<output name>.npy with --output-dir',
    positional: ['MODEL.onnx'],
    options: {...INPUT_OPTIONS, '--output-dir': {value: 'DIR', help: 'Where to write the outputs as .npy'},
              ...DAWN_OPTIONS},
  },
  bench: {
    summary: 'Time a model: load, first run, median / p90 / min run time, memory (random inputs by default)',
    positional: ['MODEL.onnx'],
    options: {
      '--runs': {value: 'N', help: 'Timed runs (default 20)'},
      '--warmup': {value: 'N', help: 'Untimed runs after the first (default 3)'},
      '--warmup-ms': {value: 'MS', help: 'Untimed runs go on until this much time has passed too (default 500)'},
      '--profile': {help: 'GPU time from timestamp queries (when the adapter has them), by op type, by kernel and the slowest nodes'},
      '--device-inputs': {help: 'Upload the inputs once and keep the outputs on the device: time GPU work, not transfers (as the native wgi bench)'},
      '--json': {help: 'Print the results as one JSON object'},
      ...INPUT_OPTIONS, ...DAWN_OPTIONS,
    },
  },
  florence2: {
    summary: 'Florence-2 on a folder in onnx-community\'s layout: a task on an image (as the native `wgi florence2`)',
    positional: ['MODEL_DIR', 'IMAGE'],
    options: {
      '--task': {value: 'TASK', help: "The task token, e.g. '<CAPTION>', '<OD>', '<OCR_WITH_REGION>' (required)"},
      '--text': {value: 'TEXT', help: 'The text input of the tasks that take one (e.g. a caption to ground)'},
      '--max-new-tokens': {value: 'N', help: "New tokens at most (default: generation_config.json's max_length)"},
      '--num-beams': {value: 'N', help: "Beams (default: generation_config.json's num_beams; 1 = greedy)"},
      '--dtype': {value: 'D|session=D,...',
                  help: "Which file of each session (fp32, fp16, q8, int8, uint8, q4, q4f16, bnb4), as wgi florence2's"},
      '--precision': INPUT_OPTIONS['--precision'],
      '--runs': {value: 'N', help: 'Run the task N times after loading (default 1); each run\'s time and stages go to stderr'},
      '--json': {help: 'Print one JSON object (the native --json fields, with decode_steps and stages)'},
      ...DAWN_OPTIONS,
    },
  },
  siglip: {
    summary: 'SigLIP zero-shot classification on a folder in Xenova\'s layout (as the native `wgi siglip`)',
    positional: ['MODEL_DIR', 'IMAGE'],
    options: {
      '--labels': {value: 'A,B,...', help: 'The candidate labels, comma-separated (required)'},
      '--template': {value: 'T', help: "The hypothesis template; its first {} becomes each label (default: 'This is a photo of {}.')"},
      '--model-file': {value: 'F', help: "The joint model's file under onnx/ (default model.onnx)"},
      '--dtype': {value: 'D', help: "Or transformers.js's dtype, which names the file (fp16: onnx/model_fp16.onnx)"},
      '--precision': INPUT_OPTIONS['--precision'],
      '--json': {help: "Print one JSON object (the native --json's: labels, texts, input_ids, logits, scores, output)"},
      ...DAWN_OPTIONS,
    },
  },
};

function usage(command) {
  if (!command) {
    return 'wgi on Node.js (the WebAssembly build on dawn.node)\n' +
           'usage: node web/cli.mjs COMMAND [options]   (node web/cli.mjs COMMAND --help for its options)\n' +
           Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(9)} ${c.summary}`).join('\n') + '\n';
  }
  const c = COMMANDS[command];
  const lines = [`usage: node web/cli.mjs ${command} ${c.positional.join(' ')} [options]`, c.summary, 'options:'];
  for (const [name, o] of Object.entries(c.options)) {
    lines.push(`  ${(name + (o.value ? ' ' + o.value : '')).padEnd(28)} ${o.help}`);
  }
  return lines.join('\n') + '\n';
}

// Parses argv after the command against its option table: {positional: [], options: {name: value|[values]|true}}.
function parseArgs(command, argv) {
  const c = COMMANDS[command];
  const out = {positional: [], options: {}};
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    if (!arg.startsWith('--')) {
      out.positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const spec = c.options[name];
    if (!spec) throw new UsageError(`unknown option '${name}' for '${command}' (node web/cli.mjs ${command} --help)`);
    let value = true;
    if (spec.value) {
      if (eq > 0) {
        value = arg.slice(eq + 1);
      } else {
        if (i + 1 >= argv.length || argv[i + 1].startsWith('--')) {
          throw new UsageError(`${name} needs a value (${spec.value})`);
        }
        value = argv[++i];
      }
    } else if (eq > 0) {
      throw new UsageError(`${name} takes no value`);
    }
    if (spec.repeat) {
      (out.options[name] ||= []).push(value);
    } else {
      if (name in out.options) throw new UsageError(`${name} is given twice`);
      out.options[name] = value;
    }
  }
  if (out.positional.length !== c.positional.length) {
    throw new UsageError(c.positional.length
        ? `'${command}' needs ${c.positional.join(' ')}` +
          (out.positional.length > 1 ? `; got ${out.positional.length} arguments: ${out.positional.join(' ')}` : '')
        : `'${command}' takes no arguments; got ${out.positional.join(' ')}`);
  }
  return out;
}

function integerOption(options, name, fallback, min) {
  if (!(name in options)) return fallback;
  const text = options[name];
  if (!/^\d+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text))) {
    throw new UsageError(`${name} must be an integer of at least ${min}, not '${text}'`);
  }
  return Number(text);
}

function precisionOption(options) {
  const p = options['--precision'] ?? 'f32';
  if (p !== 'f32' && p !== 'f16') throw new UsageError(`--precision ${p}: expected f32 or f16`);
  return p;
}

function dawnOptions(options) {
  const o = {};
  if ('--toggles' in options) o.toggles = options['--toggles'];
  if ('--disable-toggles' in options) o.disableToggles = options['--disable-toggles'];
  if ('--backend' in options) o.backend = options['--backend'];
  if ('--adapter' in options) o.adapter = options['--adapter'];
  if ('--dawn-flag' in options) o.dawnFlags = options['--dawn-flag'];
  try {
    wgi.resolveOptions(o);  // a bad --backend (or WGI_BACKEND) is a usage error
  } catch (e) {
    throw new UsageError(e.message);
  }
  return o;
}

function parseDims(list = []) {
  const dims = new Map();
  for (const d of list) {
    const eq = d.indexOf('=');
    if (eq <= 0) throw new UsageError(`--dim '${d}': expected NAME=VALUE`);
    const value = d.slice(eq + 1);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
      throw new UsageError(`--dim '${d}': VALUE must be a non-negative integer`);
    }
    if (dims.has(d.slice(0, eq))) throw new UsageError(`--dim ${d.slice(0, eq)} is given twice`);
    dims.set(d.slice(0, eq), Number(value));
  }
  return dims;
}

// A seeded generator of 32-bit values (mulberry32): the same seed gives the same inputs on every run.
function generator(seed) {
  let s = Number(BigInt.asUintN(32, BigInt(seed) ^ (BigInt(seed) >> 32n))) || 0x9e3779b9;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

// The float16 bits of k / 2048 for an integer k in [-2048, 2048): every such value is exact in float16.
function halfOfMultiple(k) {
  if (k === 0) return 0;
  let m = Math.abs(k), exponent = -11;  // |k| / 2048 = m * 2^exponent, m brought into [1024, 2048)
  while (m < 1024) { m *= 2; --exponent; }
  while (m >= 2048) { m /= 2; ++exponent; }
  return (k < 0 ? 0x8000 : 0) | ((exponent + 10 + 15) << 10) | (m - 1024);
}

const TYPED = {
  float32: Float32Array, float16: Uint16Array, int64: BigInt64Array, int32: Int32Array, int8: Int8Array,
  uint8: Uint8Array, bool: Uint8Array,
};

// Every model input: from its --input file, else random with --random-inputs; an error lists the rest.
function makeInputs(session, options) {
  const inputs = session.inputs;
  const names = inputs.map((i) => `'${i.name}'`).join(', ');
  const feeds = {};
  for (const spec of options['--input'] || []) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new UsageError(`--input '${spec}': expected NAME=FILE.npy`);
    const name = spec.slice(0, eq), file = spec.slice(eq + 1);
    if (!inputs.some((i) => i.name === name)) {
      throw new UsageError(`--input '${spec}': the model has no input '${name}' (its inputs: ${names})`);
    }
    if (name in feeds) throw new UsageError(`--input ${name} is given twice`);
    if (!fs.existsSync(file)) throw new UsageError(`--input ${name}: file '${file}' not found`);
    try {
      feeds[name] = parseNpy(new Uint8Array(fs.readFileSync(file)), `--input ${name}: '${file}'`);
    } catch (e) {
      throw new UsageError(e.message);
    }
  }
  const dims = parseDims(options['--dim']);
  const known = new Set(inputs.flatMap((i) => i.dim_names || []).filter((n) => n));
  for (const name of dims.keys()) {
    if (!known.has(name)) {
      console.error(`wgi: warning: --dim ${name}: no input of the model has a dim named '${name}' (` +
                    (known.size ? `its dims: ${[...known].join(', ')}` : 'its inputs have no named dims') + '); ignored');
    }
  }
  const seedGiven = '--random-inputs' in options;
  const seed = seedGiven ? integerOption(options, '--random-inputs', 0, 0) : 0;
  const next = generator(seed);
  const missing = [];
  for (const info of inputs) {
    if (info.name in feeds) continue;
    if (!seedGiven) {
      missing.push(info.name);
      continue;
    }
    if (info.rank_known === false) {
      throw new UsageError(`input '${info.name}' has no declared shape (not even a rank), so --random-inputs ` +
                           `cannot make it: give it with --input ${info.name}=FILE.npy`);
    }
    const problems = [];
    const shape = info.dims.map((d, k) => {
      if (d >= 0) return d;
      const dimName = (info.dim_names || [])[k] || '';
      if (dimName && dims.has(dimName)) return dims.get(dimName);
      problems.push(dimName ? `dim ${k} is '${dimName}': give --dim ${dimName}=VALUE`
                            : `dim ${k} is unknown and has no name, so no --dim can size it`);
      return 0;
    });
    if (problems.length) {
      throw new UsageError(`input '${info.name}' ${problems.join('; ')} (or give the input with --input)`);
    }
    const Type = TYPED[info.dtype];
    if (!Type) throw new UsageError(`input '${info.name}' is ${info.dtype}, which --random-inputs cannot make`);
    const count = shape.reduce((a, b) => a * b, 1);
    const bytes = count * Type.BYTES_PER_ELEMENT;
    if (session.maxBufferSize && bytes > session.maxBufferSize) {
      throw new UsageError(`input '${info.name}' [${shape.join(', ')}] ${info.dtype} needs ${bytes} bytes on the ` +
                           `device, more than one GPU buffer may hold (maxBufferSize ${session.maxBufferSize})`);
    }
    const data = new Type(count);  // integers and bool: 0, as the native CLI
    if (info.dtype === 'float32') {
      for (let i = 0; i < count; ++i) data[i] = next() / 2147483648 - 1;
    } else if (info.dtype === 'float16') {
      for (let i = 0; i < count; ++i) data[i] = halfOfMultiple((next() >>> 20) - 2048);
    }
    feeds[info.name] = {data, dims: shape, dtype: info.dtype};
  }
  if (missing.length) {
    throw new UsageError(`no value for input(s) ${missing.join(', ')}: give --input NAME=FILE.npy or ` +
                         '--random-inputs SEED');
  }
  return feeds;
}

function halfToNumber(h) {
  const e = (h >> 10) & 0x1f, m = h & 0x3ff, s = h & 0x8000 ? -1 : 1;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

// "float32 [1, 3], min -0.5, max 0.9, mean 0.1", as the native `wgi run` prints.
function summarize(t) {
  let s = `${t.dtype} [${t.dims.join(', ')}]`;
  if (!t.data.length) return s;
  let lo = Infinity, hi = -Infinity, sum = 0;
  for (let i = 0; i < t.data.length; ++i) {
    const v = t.dtype === 'float16' ? halfToNumber(t.data[i]) : Number(t.data[i]);
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
    sum += v;
  }
  const f = (v) => Number(v.toPrecision(6));
  return `${s}, min ${f(lo)}, max ${f(hi)}, mean ${f(sum / t.data.length)}`;
}

// The native CLI's file names: characters outside [A-Za-z0-9._-] become '_', repeats get _2, _3...
function outputFileNames(outputs) {
  const taken = new Set();
  return outputs.map((o) => {
    let stem = o.name.replace(/[^A-Za-z0-9._-]/g, '_');
    if (stem === '' || stem === '.' || stem === '..') stem = '_' + stem;
    let name = stem + '.npy';
    for (let k = 2; taken.has(name); ++k) name = `${stem}_${k}.npy`;
    taken.add(name);
    return name;
  });
}

function readModel(file) {
  if (!fs.existsSync(file)) throw new UsageError(`model '${file}' not found`);
  if (fs.statSync(file).isDirectory()) throw new UsageError(`model '${file}' is a directory, not an .onnx file`);
  return wgi.readModelFiles(file);
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

async function info(args) {
  await wgi.setup(dawnOptions(args.options));
  const a = await wgi.adapterInfo();
  if (args.options['--json']) {
    console.log(JSON.stringify(a, null, 2));
    return 0;
  }
  console.log(`adapter:    ${[a.vendor, a.architecture, a.device, a.description].filter((s) => s).join(' / ')}`);
  console.log(`dawn.node:  ${a.flags.join(' ')}`);
  console.log(`subgroups:  ${a.subgroupMinSize}..${a.subgroupMaxSize}`);
  console.log(`features:   ${a.features.join(' ')}`);
  console.log(`subgroup matrices: ${a.subgroupMatrixConfigs.length ? a.subgroupMatrixConfigs.join(', ') : 'none'}`);
  console.log('limits:');
  for (const [k, v] of Object.entries(a.limits)) console.log(`  ${k.padEnd(44)} ${v}`);
  return 0;
}

async function run(args) {
  const [model] = args.positional;
  const outDir = args.options['--output-dir'];
  if (outDir !== undefined) {
    if (fs.existsSync(outDir) && !fs.statSync(outDir).isDirectory()) {
      throw new UsageError(`--output-dir '${outDir}' exists and is not a directory`);
    }
    fs.mkdirSync(outDir, {recursive: true});
  }
  const {bytes, externalData} = readModel(model);
  await wgi.setup(dawnOptions(args.options));
  const t0 = performance.now();
  const session = await wgi.Session.create(bytes, {externalData, precision: precisionOption(args.options)});
  try {
    const feeds = makeInputs(session, args.options);
    const t1 = performance.now();
    const outputs = await session.run(feeds);
    const t2 = performance.now();
    const files = outputFileNames(session.outputs);
    session.outputs.forEach((o, k) => {
      const t = outputs[o.name];
      let line = `${o.name}: ${summarize(t)}`;
      if (outDir !== undefined) {
        const file = path.join(outDir, files[k]);
        fs.writeFileSync(file, formatNpy(t));
        line += ` -> ${file}`;
      }
      console.log(line);
    });
    console.log(`adapter: ${session.adapter}\nload ${(t1 - t0).toFixed(3)} ms, run ${(t2 - t1).toFixed(3)} ms ` +
                `(first run: includes planning ${session.stats().last_plan_ms.toFixed(3)} ms)`);
  } finally {
    await session.free();
  }
  return 0;
}

async function bench(args) {
  const [model] = args.positional;
  const runs = integerOption(args.options, '--runs', 20, 1);
  const warmup = integerOption(args.options, '--warmup', 3, 0);
  const options = {...args.options};
  if (!options['--input'] && !('--random-inputs' in options)) options['--random-inputs'] = '0';
  const {bytes, externalData} = readModel(model);
  await wgi.setup(dawnOptions(args.options));
  const t0 = performance.now();
  const session = await wgi.Session.create(bytes, {profiling: !!options['--profile'], externalData,
                                                   precision: precisionOption(options)});
  try {
    const feeds = makeInputs(session, options);
    const onDevice = '--device-inputs' in options;
    // --device-inputs: the first run uploads the inputs, every run leaves its outputs on the device.
    const runOnce = onDevice ? (first) => session.runOnDevice(first ? feeds : null) : () => session.run(feeds);
    const loadMs = performance.now() - t0;
    const t2 = performance.now();
    await runOnce(true);
    const firstMs = performance.now() - t2;
    const planMs = session.stats().last_plan_ms;
    // An idle GPU's clocks take a few hundred ms of load to come back up (docs/performance.md).
    const warmEnd = performance.now() + integerOption(args.options, '--warmup-ms', 500, 0);
    for (let i = 0; i < warmup || performance.now() < warmEnd; ++i) await runOnce(false);
    const times = [];
    for (let i = 0; i < runs; ++i) {
      const a = performance.now();
      await runOnce(false);
      times.push(performance.now() - a);
    }
    const sorted = [...times].sort((x, y) => x - y);
    const st = session.stats();
    const result = {
      model, adapter: session.adapter, flags: wgi.dawnFlags(wgi.resolveOptions(dawnOptions(args.options))),
      device_inputs: onDevice, load_ms: loadMs, first_run_ms: firstMs, planning_ms: planMs, runs, warmup,
      median_ms: percentile(sorted, 0.5), p90_ms: percentile(sorted, 0.9), min_ms: sorted[0],
      max_ms: sorted[sorted.length - 1], times_ms: times,
      activation_bytes: st.peak_activation_bytes, weight_bytes: st.weight_bytes, nodes: st.nodes,
      dispatches: st.dispatches, pipelines: st.pipelines,
    };
    if (options['--profile']) result.profile = st.profile;
    if (options['--json']) {
      console.log(JSON.stringify(result));
      return 0;
    }
    const f = (v) => v.toFixed(3);
    const mib = (v) => (v / 1048576).toFixed(3);
    console.log(`model:      ${model}\nadapter:    ${session.adapter}\nload:       ${f(loadMs)} ms\n` +
                `first run:  ${f(firstMs)} ms (planning ${f(planMs)} ms)\n` +
                `run:        median ${f(result.median_ms)} ms, p90 ${f(result.p90_ms)} ms, min ${f(result.min_ms)} ms ` +
                `over ${runs} runs (${onDevice ? 'inputs already on the device, outputs kept there: GPU + encoding'
                                               : 'upload inputs + GPU + download outputs'})\n` +
                `memory:     activations ${mib(st.peak_activation_bytes)} MiB, weights ${mib(st.weight_bytes)} MiB\n` +
                `graph:      ${st.nodes} nodes, ${st.dispatches} dispatches per run, ${st.pipelines} pipelines`);
    if (options['--profile']) {
      if (!st.profile.length) {
        console.log(`profile:    ${st.profiling_note}`);
      } else {
        // GPU ms and node count per op type and per kernel (one op type can run on several), the largest first.
        const sumBy = (key) => {
          const sums = new Map();
          for (const n of st.profile) {
            const e = sums.get(n[key]) || [0, 0];
            sums.set(n[key], [e[0] + n.gpu_ms, e[1] + 1]);
          }
          return [...sums].sort((a, b) => b[1][0] - a[1][0]);
        };
        const total = st.profile.reduce((sum, n) => sum + n.gpu_ms, 0);
        console.log(`GPU time by op type (sum ${f(total)} ms):`);
        for (const [op, [ms, count]] of sumBy('op')) {
          console.log(`  ${op.padEnd(24)} ${f(ms).padStart(10)} ms  ${(100 * ms / total).toFixed(1).padStart(5)}%  x${count}`);
        }
        // As `wgi bench --profile`: by kernel, then the slowest nodes.
        console.log('GPU time by kernel (the 12 largest):');
        for (const [kernel, [ms, count]] of sumBy('kernel').slice(0, 12)) {
          console.log(`  ${f(ms).padStart(10)} ms  x${count}  ${kernel}`);
        }
        console.log('slowest nodes:');
        for (const n of [...st.profile].sort((a, b) => b.gpu_ms - a.gpu_ms).slice(0, 10)) {
          console.log(`  ${f(n.gpu_ms).padStart(10)} ms  ${n.op} '${n.node}' (${n.kernel})`);
        }
      }
    }
  } finally {
    await session.free();
  }
  return 0;
}

async function florence2(args) {
  const [folder, imageFile] = args.positional;
  const task = args.options['--task'];
  if (!task) throw new UsageError("florence2 needs --task, e.g. --task '<OD>'");
  const runs = integerOption(args.options, '--runs', 1, 1);
  const maxNewTokens = '--max-new-tokens' in args.options ? integerOption(args.options, '--max-new-tokens', 0, 1)
                                                          : undefined;
  const numBeams = '--num-beams' in args.options ? integerOption(args.options, '--num-beams', 0, 1) : undefined;
  const readFile = folderReader(folder);  // only the files the pipeline asks for (a folder may hold every dtype's)
  const image = readImage(imageFile);
  await wgi.setup(dawnOptions(args.options));
  const {Florence2} = await import('./wgi.mjs');
  const t0 = performance.now();
  const model = await Florence2.create(readFile, {dtype: args.options['--dtype'],
                                                  precision: precisionOption(args.options)});
  const loadMs = performance.now() - t0;
  try {
    const options = {task, text: args.options['--text'], maxNewTokens, numBeams};
    let result = null;
    const times = [];
    for (let i = 0; i < runs; ++i) {
      const start = performance.now();
      result = await model.generate(image, options);
      times.push(performance.now() - start);
      const st = result.stages;
      console.error(`run ${i + 1}: ${times[i].toFixed(1)} ms, ${result.decode_steps} decoder steps (preprocess ` +
                    `${st.preprocess_ms.toFixed(1)}, vision ${st.vision_ms.toFixed(1)}, encoder ` +
                    `${st.encoder_ms.toFixed(1)}, decode ${st.decode_ms.toFixed(1)}, postprocess ` +
                    `${st.postprocess_ms.toFixed(1)} ms)`);
    }
    console.error(`load: ${loadMs.toFixed(1)} ms (${model.decoderFiles})`);
    if (runs > 2) {
      const later = times.slice(1).sort((a, b) => a - b);
      console.error(`median of runs 2..: ${later[Math.floor(later.length / 2)].toFixed(1)} ms end to end`);
    }
    if (args.options['--json']) {
      console.log(JSON.stringify(result));
    } else {
      console.log(result.generated_text);
      console.log(JSON.stringify(result.parsed));
    }
  } finally {
    await model.free();
  }
  return 0;
}

// A folder on disk as web/wgi.mjs's pipelines read it: a function from a relative path to its bytes (null when
// absent), so only the files a pipeline asks for are read.
function folderReader(folder) {
  if (!fs.existsSync(folder) || !fs.statSync(folder).isDirectory()) throw new UsageError(`model folder '${folder}' not found`);
  return (name) => {
    const file = path.join(folder, name);
    return fs.existsSync(file) ? new Uint8Array(fs.readFileSync(file)) : null;
  };
}

function readImage(file) {
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) throw new UsageError(`image '${file}' not found`);
  return new Uint8Array(fs.readFileSync(file));
}

async function siglip(args) {
  const [folder, imageFile] = args.positional;
  if (!args.options['--labels']) throw new UsageError('siglip needs --labels, e.g. --labels cat,dog');
  const labels = args.options['--labels'].split(',');
  const template = args.options['--template'];
  if (template !== undefined && !template.includes('{}')) {
    throw new UsageError(`--template '${template}' has no {} to put the label in`);
  }
  const files = folderReader(folder);
  const image = readImage(imageFile);
  await wgi.setup(dawnOptions(args.options));
  const {Siglip} = await import('./wgi.mjs');
  const model = await Siglip.create(files, {modelFile: args.options['--model-file'], dtype: args.options['--dtype'],
                                            precision: precisionOption(args.options)});
  try {
    const r = await model.classify(image, labels, {hypothesisTemplate: template});
    if (args.options['--json']) {
      console.log(JSON.stringify(r));
    } else {
      for (const {score, label} of r.output) console.log(`${score.toFixed(6)}  ${label}`);
    }
  } finally {
    await model.free();
  }
  return 0;
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(usage());
    return command ? 0 : 2;
  }
  if (!COMMANDS[command]) {
    throw new UsageError(`unknown command '${command}': expected ${Object.keys(COMMANDS).join(', ')}`);
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(usage(command));
    return 0;
  }
  const args = parseArgs(command, rest);
  return {info, run, bench, florence2, siglip}[command](args);
}

let code = 1;
try {
  code = await main(process.argv.slice(2));
} catch (e) {
  console.error(`wgi: ${e instanceof UsageError ? '' : 'error: '}${e && e.message || e}`);
  code = e instanceof UsageError ? 2 : 1;
}
wgi.shutdown();
// dawn.node may hold the event loop open with its own handles; the work is done.
process.exit(code);
