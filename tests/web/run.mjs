// Runs the browser tests in Debian's headless Chromium (/usr/bin/chromium, WebGPU on SwiftShader through
// --enable-unsafe-webgpu) against pages served from 127.0.0.1, and checks the demo page.
//   node tests/web/run.mjs [--filter SUBSTRING] [--no-demo] [--no-ocr-demo] [--heavy] [--screenshot FILE]
// Needs scripts/build-web (build/web/wgi.{js,wasm}) and scripts/setup (playwright-core in third_party/web-test).
// Exits 1 if any test fails or the demo does not show the expected text, 2 if the harness itself breaks.
import {createRequire} from 'node:module';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import {fileURLToPath} from 'node:url';
import {startServer} from './serve.mjs';
import {writeOrtReferences} from './ort_references.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const filter = option('--filter', '');
const screenshot = option('--screenshot', path.join(repo, 'build/web/demo.png'));
const withDemo = !args.includes('--no-demo');
const heavy = args.includes('--heavy');  // also the slow pipeline cases (pipeline_tests.mjs)
const withOcrDemo = withDemo && !args.includes('--no-ocr-demo');  // the long one (minutes on SwiftShader)
const timeoutMs = Number(option('--timeout', 900)) * 1000;

if (Number(process.versions.node.split('.')[0]) < 20) {
  console.error(`run.mjs: Node.js ${process.versions.node}; playwright-core 1.65 needs Node.js >= 20`);
  process.exit(2);
}
for (const f of ['build/web/wgi.js', 'build/web/wgi.wasm']) {
  if (!fs.existsSync(path.join(repo, f))) {
    console.error(`run.mjs: ${f} missing: run scripts/build-web first`);
    process.exit(2);
  }
}
const require = createRequire(path.join(repo, 'third_party/web-test/package.json'));
const {chromium} = require('playwright-core');

// The flags Debian's chromium needs to expose WebGPU headless as root (SwiftShader adapter); a fresh profile.
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wgi-chromium-'));
const launchArgs = [
  '--enable-unsafe-webgpu', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// The Florence-2 demo page on the tiny folder's image (<OD>, 6 new tokens at most: the full answers are the
// pipeline tests' work): its ids must be transformers.js's first 6 (expected_od.json) and the forced EOS, the
// page must show the text and draw every box of the answer on its canvas.
async function checkFlorence2Demo(context) {
  const want = JSON.parse(fs.readFileSync(path.join(repo, 'tests/data/pipelines/florence2_tiny/expected_od.json')));
  const demo = await context.newPage();
  demo.on('console', (m) => { if (m.type() === 'error') console.log('florence2 demo: ' + m.text()); });
  demo.on('pageerror', (e) => console.log('florence2 demo page error: ' + e.message));
  await demo.goto(`${origin}/web/florence2.html?autorun=1&task=${encodeURIComponent('<OD>')}&max=6&beams=1`);
  await demo.waitForFunction(() => window.wgiFlorence2Demo && window.wgiFlorence2Demo.done, null, {timeout: timeoutMs});
  const state = await demo.evaluate(() => window.wgiFlorence2Demo);
  const file = path.join(path.dirname(screenshot), 'florence2_demo.png');
  await demo.screenshot({path: file, fullPage: true});
  const shown = await demo.locator('#result-text').innerText();
  const ids = [...want.generated_ids.slice(0, 6), 2];  // 2: forced_eos_token_id
  const r = state.result;
  const boxes = r ? r.parsed['<OD>'].bboxes.length : 0;
  const ok = !state.error && JSON.stringify(r.generated_ids) === JSON.stringify(ids) &&
             want.generated_text.startsWith(shown.slice(0, -4)) && shown === r.generated_text &&
             state.boxesDrawn === boxes && boxes > 0;
  console.log(`${ok ? 'PASS' : 'FAIL'} florence2 demo: ${state.error || `ids ${JSON.stringify(r.generated_ids)}, ` +
              `shows ${JSON.stringify(shown)}, drew ${state.boxesDrawn} of ${boxes} boxes`} ` +
              `${JSON.stringify(state.summary)}; screenshot ` +
              path.relative(repo, file));
  await demo.close();
  return ok ? 0 : 1;
}

// The SigLIP demo page on the tiny folder's image_a.png with expected_scores_a.json's labels and template: its
// scores must be transformers.js's (within 1e-4, as in pipeline_tests.mjs) and the page must list them all.
async function checkSiglipDemo(context) {
  const want = JSON.parse(fs.readFileSync(path.join(repo, 'tests/data/pipelines/siglip_tiny/expected_scores_a.json')));
  const demo = await context.newPage();
  demo.on('pageerror', (e) => console.log('siglip demo page error: ' + e.message));
  await demo.goto(`${origin}/web/siglip.html?autorun=1&labels=${encodeURIComponent(want.labels.join(','))}` +
                  `&template=${encodeURIComponent(want.hypothesis_template)}`);
  await demo.waitForFunction(() => window.wgiSiglipDemo && window.wgiSiglipDemo.done, null, {timeout: timeoutMs});
  const state = await demo.evaluate(() => window.wgiSiglipDemo);
  const rows = await demo.locator('#scores tr').count();
  const scores = state.result ? state.result.scores : [];
  const worst = Math.max(...want.scores.map((score, i) => Math.abs((scores[i] ?? Infinity) - score)));
  const ok = !state.error && want.scores.length > 0 && worst <= 1e-4 && rows === want.labels.length;
  console.log(`${ok ? 'PASS' : 'FAIL'} siglip demo: ${state.error || `max score error ${worst.toExponential(1)}, ` +
              `${rows} rows shown`}`);
  await demo.close();
  return ok ? 0 : 1;
}

const started = Date.now();
const server = await startServer(0);
const origin = `http://127.0.0.1:${server.address().port}`;
let context;
let exitCode = 0;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true, args: launchArgs, viewport: {width: 1100, height: 900},
  });
  const page = await context.newPage();
  page.on('console', (m) => {
    const text = m.text();
    if (text.startsWith('wgi-test ') || m.type() === 'error') console.log(text.replace(/^wgi-test /, ''));
  });
  page.on('pageerror', (e) => console.log('page error: ' + e.message));

  // The onnxruntime-node references of the variant tests (pipeline_tests.mjs), computed here in Node.
  await writeOrtReferences();
  await page.goto(`${origin}/tests/web/?filter=${encodeURIComponent(filter)}${heavy ? '&heavy=1' : ''}`);
  await page.waitForFunction(() => window.wgiTestResults && window.wgiTestResults.done, null, {timeout: timeoutMs});
  const results = await page.evaluate(() => window.wgiTestResults);
  console.log(`browser tests: ${results.passed} passed, ${results.failed} failed on ${results.adapter} ` +
              `(${((Date.now() - started) / 1000).toFixed(1)} s)`);
  if (results.failed > 0 || results.passed === 0) exitCode = 1;

  if (withDemo) exitCode = Math.max(exitCode, await checkFlorence2Demo(context));
  if (withDemo) exitCode = Math.max(exitCode, await checkSiglipDemo(context));
  if (withOcrDemo) {
    const demo = await context.newPage();
    demo.on('console', (m) => { if (m.type() === 'error') console.log('demo: ' + m.text()); });
    demo.on('pageerror', (e) => console.log('demo page error: ' + e.message));
    await demo.goto(`${origin}/web/?autorun=1`);
    await demo.waitForFunction(() => window.wgiDemo && window.wgiDemo.done, null, {timeout: timeoutMs});
    const state = await demo.evaluate(() => window.wgiDemo);
    await demo.screenshot({path: screenshot, fullPage: true});
    console.log(`demo: ${JSON.stringify(state.summary)}; screenshot ${path.relative(repo, screenshot)}`);
    if (state.error) {
      console.log('FAIL demo: ' + state.error);
      exitCode = 1;
    } else if (!state.expected || state.text !== state.expected) {
      console.log(`FAIL demo: read ${JSON.stringify(state.text)}, expected ${JSON.stringify(state.expected)}`);
      exitCode = 1;
    } else {
      // The shown result must be in the rendered page, not only in a variable: check the text the screenshot
      // was taken of, and that the screenshot is a real, non-uniform image.
      const shown = await demo.locator('#result-text').innerText();
      const png = fs.readFileSync(screenshot);
      const ok = shown.includes(state.expected) && png.length > 10000 && png.subarray(1, 4).toString() === 'PNG';
      console.log(`${ok ? 'PASS' : 'FAIL'} demo shows ${JSON.stringify(shown)} (screenshot ${png.length} bytes)`);
      if (!ok) exitCode = 1;
    }
  }
  if (withDemo) {
    // Without --enable-unsafe-webgpu this Chromium has no WebGPU adapter: the demo must say so plainly.
    const plainProfile = fs.mkdtempSync(path.join(os.tmpdir(), 'wgi-chromium-plain-'));
    const plain = await chromium.launchPersistentContext(plainProfile, {
      executablePath: '/usr/bin/chromium', headless: true,
      args: launchArgs.filter((a) => a !== '--enable-unsafe-webgpu'),
    });
    try {
      const page = await plain.newPage();
      await page.goto(`${origin}/web/?autorun=1`);
      await page.waitForFunction(() => window.wgiDemo && window.wgiDemo.done, null, {timeout: timeoutMs});
      const notice = page.locator('#webgpu-missing');
      const ok = await notice.isVisible() && /WebGPU/.test(await notice.innerText());
      console.log(`${ok ? 'PASS' : 'FAIL'} demo without WebGPU shows: ${JSON.stringify(await notice.innerText())}`);
      if (!ok) exitCode = 1;
    } finally {
      await plain.close();
      fs.rmSync(plainProfile, {recursive: true, force: true});
    }
  }
} catch (e) {
  console.error('run.mjs: ' + (e && e.stack || e));
  exitCode = 2;
} finally {
  if (context) await context.close();
  server.close();
  fs.rmSync(profile, {recursive: true, force: true});
}
console.log(`browser step: ${((Date.now() - started) / 1000).toFixed(1)} s, exit ${exitCode}`);
process.exit(exitCode);
