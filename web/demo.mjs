// The demo page: pick an image (or use the sample), read its text with PP-OCRv4 on wgi, draw the boxes, show
// the text and timings. window.wgiDemo exposes the outcome to tests/web/run.mjs (?autorun=1 reads the sample).
import * as wgi from './wgi.mjs';
import {Reader} from './ocr.mjs';

const MODELS = new URL('../third_party/ocr-models/', import.meta.url).toString();
const SAMPLE = new URL('../examples/ocr/sample.png', import.meta.url).toString();
// What the sample image says (examples/ocr/sample.png, made by examples/ocr/render_text_image.cpp).
const SAMPLE_TEXT = 'wgi reads this line\nWebGPU on any GPU: 2026-11-29\nPP-OCRv4 detection + recognition';

const $ = (id) => document.getElementById(id);
const state = {done: false, text: '', expected: '', error: '', summary: {}};
window.wgiDemo = state;
let readerPromise = null;

function status(text) { $('status').textContent = text; }

async function decodeImage(blob) {
  const bitmap = await createImageBitmap(blob);
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const ctx = canvas.getContext('2d');
  ctx.drawImage(bitmap, 0, 0);
  const rgba = ctx.getImageData(0, 0, bitmap.width, bitmap.height).data;
  const rgb = new Uint8Array(bitmap.width * bitmap.height * 3);
  for (let i = 0, j = 0; i < rgba.length; i += 4, j += 3) {
    // Transparent pixels over white, as an image viewer shows them.
    const a = rgba[i + 3] / 255;
    for (let c = 0; c < 3; ++c) rgb[j + c] = Math.round(rgba[i + c] * a + 255 * (1 - a));
  }
  return {bitmap, image: {width: bitmap.width, height: bitmap.height, rgb}};
}

function draw(bitmap, lines) {
  const canvas = $('canvas');
  canvas.width = bitmap.width;
  canvas.height = bitmap.height;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(bitmap, 0, 0);
  ctx.strokeStyle = '#e00';
  ctx.lineWidth = 2;
  for (const line of lines) {
    ctx.beginPath();
    line.box.forEach((p, i) => (i ? ctx.lineTo(p.x, p.y) : ctx.moveTo(p.x, p.y)));
    ctx.closePath();
    ctx.stroke();
  }
}

function showTimings(rows) {
  $('timings').replaceChildren(...rows.map(([name, ms]) => {
    const tr = document.createElement('tr');
    tr.innerHTML = `<td></td><td>${ms.toFixed(0)} ms</td>`;
    tr.firstChild.textContent = name;
    return tr;
  }));
}

async function read(blob, expected) {
  state.done = false;
  state.expected = expected;
  $('result-text').textContent = '';
  try {
    const {bitmap, image} = await decodeImage(blob);
    draw(bitmap, []);
    const loadStart = performance.now();
    const first = !readerPromise;
    if (first) readerPromise = Reader.create(MODELS, status);
    const reader = await readerPromise;
    const loadMs = performance.now() - loadStart;
    $('adapter').textContent = 'GPU adapter: ' + reader.det.adapter;
    const {lines, timings} = await reader.read(image, status);
    draw(bitmap, lines);
    state.text = lines.map((l) => l.text).join('\n');
    $('result-text').textContent = state.text || '(no text found)';
    const rows = [];
    if (first) rows.push(['loading the 3 models (download, import, weight upload)', loadMs]);
    rows.push(['detection (first run of a new image size includes planning)', timings.detection_ms],
              ['orientation (all lines)', timings.classification_ms],
              ['recognition (all lines)', timings.recognition_ms], ['total read', timings.total_ms]);
    showTimings(rows);
    state.summary = {lines: lines.length, ...Object.fromEntries(rows.map(([k, v]) => [k, Math.round(v)]))};
    status(`${lines.length} line(s) read in ${(timings.total_ms / 1000).toFixed(1)} s`);
  } catch (e) {
    state.error = String(e && e.message || e);
    status('');
    if (state.error.includes('no usable WebGPU adapter')) {
      // navigator.gpu exists but gives no adapter (e.g. Chromium on Linux without --enable-unsafe-webgpu).
      $('webgpu-missing').textContent = 'WebGPU is present in this browser but gave no GPU adapter, so wgi ' +
          'cannot run here (the GPU may be blocklisted; in Chromium try --enable-unsafe-webgpu).';
      $('webgpu-missing').style.display = 'block';
    }
    $('result-text').innerHTML = '<span class="error"></span>';
    $('result-text').firstChild.textContent = 'Error: ' + state.error;
  } finally {
    state.done = true;
  }
}

async function readSample() {
  const response = await fetch(SAMPLE);
  await read(await response.blob(), SAMPLE_TEXT);
}

if (!wgi.webgpuAvailable()) {
  $('webgpu-missing').style.display = 'block';
  state.error = 'WebGPU is not available in this browser';
  state.done = true;
} else {
  $('file').addEventListener('change', () => { if ($('file').files[0]) read($('file').files[0], ''); });
  $('run-sample').addEventListener('click', readSample);
  if (new URLSearchParams(location.search).get('autorun')) readSample();
  else status('Pick an image, or read the sample.');
}
