// The SigLIP demo page (siglip.html): a model folder (URL or picked), an image (scaled to the model's size by
// the browser's canvas), labels and a template; runs wgi.Siglip on the page's GPU and lists the labels by
// score. window.wgiSiglipDemo exposes the outcome: ?autorun=1 runs the default (tiny) folder on its
// image_a.png.
import * as wgi from './wgi.mjs';
import { folderModel } from './folder_model.mjs';

const $ = (id) => document.getElementById(id);
const state = {done: false, result: null, error: ''};
window.wgiSiglipDemo = state;
const params = new URLSearchParams(location.search);

function status(text) { $('status').textContent = text; }

const model = folderModel(wgi.Siglip, status);

function showScores(output) {
  const table = $('scores');
  table.textContent = '';
  for (const {label, score} of output) {
    const row = table.insertRow();
    row.insertCell().textContent = label;
    const value = row.insertCell();
    value.className = 'score';
    value.textContent = score.toFixed(6);
    const bar = document.createElement('div');
    bar.className = 'bar';
    bar.style.width = `${Math.round(score * 200)}px`;
    row.insertCell().appendChild(bar);
  }
}

async function run(imageBlob) {
  state.done = false;
  state.error = '';
  state.result = null;
  $('scores').textContent = '';
  try {
    const blob = imageBlob || $('image').files[0];
    if (!blob) throw new Error('pick an image first');
    const labels = $('labels').value.split(',').map((s) => s.trim()).filter((s) => s);
    const loadStart = performance.now();
    const m = await model();
    const loadMs = performance.now() - loadStart;
    const image = await wgi.rgbImage(blob, m.imageWidth, m.imageHeight);
    const canvas = $('canvas');
    const ctx = canvas.getContext('2d');
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(await createImageBitmap(blob), 0, 0, canvas.width, canvas.height);
    status(`scoring ${labels.length} label(s) ...`);
    const start = performance.now();
    const result = await m.classify(image, labels, {hypothesisTemplate: $('template').value});
    const runMs = performance.now() - start;
    state.result = result;
    showScores(result.output);
    $('timings').textContent = `model load ${loadMs.toFixed(0)} ms (0 if already loaded), scoring ${runMs.toFixed(0)} ms`;
    status(`best: ${result.output[0].label}`);
  } catch (e) {
    state.error = String(e && e.message || e);
    status('');
    const error = document.createElement('span');
    error.className = 'error';
    error.textContent = 'Error: ' + state.error;
    $('timings').textContent = '';
    $('timings').appendChild(error);
  } finally {
    state.done = true;
  }
}

if (!wgi.webgpuAvailable()) {
  $('webgpu-missing').style.display = 'block';
  state.error = 'WebGPU is not available in this browser';
  state.done = true;
} else {
  $('run').addEventListener('click', () => run(null));
  if (params.get('autorun')) {
    // ?labels=a,b&template=...: the page's fields for the run (tests/web/run.mjs compares with a reference).
    if (params.get('labels')) $('labels').value = params.get('labels');
    if (params.get('template')) $('template').value = params.get('template');
    const url = new URL('image_a.png', new URL($('model-url').value, location.href));
    fetch(url).then((r) => r.blob()).then(run);
  } else {
    status('Pick an image and labels, then Run.');
  }
}
