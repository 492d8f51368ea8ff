// The Florence-2 demo page (florence2.html): a model folder (URL or picked), an image, a task; runs
// wgi.Florence2 on the page's GPU, shows the generated text and the parsed answer, draws the boxes
// (bboxes as rectangles, OCR's quad_boxes as quadrilaterals) over the image.
// window.wgiFlorence2Demo exposes the outcome to tests/web/run.mjs: ?autorun=1[&task=<OD>][&max=40][&beams=1] runs the
// default (tiny) folder on its image.png.
import * as wgi from './wgi.mjs';
import { folderModel } from './folder_model.mjs';

const $ = (id) => document.getElementById(id);
const state = {done: false, result: null, error: '', boxesDrawn: 0, summary: {}};
window.wgiFlorence2Demo = state;
const params = new URLSearchParams(location.search);

function status(text) { $('status').textContent = text; }

const model = folderModel(wgi.Florence2, status);

const COLORS = ['#e00', '#07c', '#0a0', '#c0c', '#e80', '#088'];

// Draws the image and the answer's boxes; boxes are in the model's input pixels, scaled by (sx, sy).
function draw(bitmap, result, sx, sy) {
  const canvas = $('canvas');
  const zoom = Math.max(1, Math.floor(480 / Math.max(bitmap.width, bitmap.height)));  // tiny images larger
  canvas.width = bitmap.width * zoom;
  canvas.height = bitmap.height * zoom;
  const ctx = canvas.getContext('2d');
  ctx.imageSmoothingEnabled = zoom === 1;
  ctx.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  state.boxesDrawn = 0;
  const answer = result && result.parsed[result.task];
  if (!answer || typeof answer === 'string') return;
  const x = (v) => v * sx * zoom, y = (v) => v * sy * zoom;
  ctx.lineWidth = 2;
  ctx.font = '13px system-ui, sans-serif';
  const shapes = answer.quad_boxes || answer.bboxes || [];
  shapes.forEach((b, i) => {
    const points = b.length === 4 ? [[b[0], b[1]], [b[2], b[1]], [b[2], b[3]], [b[0], b[3]]] :
                                    [[b[0], b[1]], [b[2], b[3]], [b[4], b[5]], [b[6], b[7]]];
    ctx.strokeStyle = ctx.fillStyle = COLORS[i % COLORS.length];
    ctx.beginPath();
    points.forEach(([px, py], k) => (k ? ctx.lineTo(x(px), y(py)) : ctx.moveTo(x(px), y(py))));
    ctx.closePath();
    ctx.stroke();
    const label = answer.labels[i] || '';
    if (label) ctx.fillText(label, x(Math.min(...points.map((p) => p[0]))) + 2,
                            Math.max(12, y(Math.min(...points.map((p) => p[1]))) - 3));
    ++state.boxesDrawn;
  });
}

async function run(imageBlob) {
  state.done = false;
  state.error = '';
  state.result = null;
  $('result-text').textContent = '';
  $('parsed').textContent = '';
  try {
    const blob = imageBlob || $('image').files[0];
    if (!blob) throw new Error('pick an image first');
    const bitmap = await createImageBitmap(blob);
    draw(bitmap, null, 1, 1);
    const loadStart = performance.now();
    const m = await model();
    const loadMs = performance.now() - loadStart;
    // The image goes in as its file: decoded by stb_image and resized as PIL does (the processor's resample
    // mode), as natively, so the answers equal the CLI's; the boxes come back in the image's own pixels.
    const image = new Uint8Array(await blob.arrayBuffer());
    const maxNewTokens = Number($('max-new-tokens').value) || undefined;
    status(`running ${$('task').value} ...`);
    const start = performance.now();
    const numBeams = Number($('num-beams').value) || undefined;  // unset: the folder's generation_config.json
    const result = await m.generate(image, {task: $('task').value, text: $('text').value, maxNewTokens, numBeams});
    const runMs = performance.now() - start;
    state.result = result;
    $('result-text').textContent = result.generated_text;
    $('parsed').textContent = JSON.stringify(result.parsed, null, 1);
    draw(bitmap, result, 1, 1);
    state.summary = {load_ms: Math.round(loadMs), generate_ms: Math.round(runMs),
                     tokens: result.generated_ids.length, boxes: state.boxesDrawn};
    $('timings').textContent = `model load ${loadMs.toFixed(0)} ms (0 if already loaded), generation ` +
        `${runMs.toFixed(0)} ms for ${result.generated_ids.length} tokens; ${m.decoderFiles}`;
    status(`${result.task}: ${state.boxesDrawn} box(es)`);
  } catch (e) {
    state.error = String(e && e.message || e);
    status('');
    if (state.error.includes('no usable WebGPU adapter')) {
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

if (!wgi.webgpuAvailable()) {
  $('webgpu-missing').style.display = 'block';
  state.error = 'WebGPU is not available in this browser';
  state.done = true;
} else {
  $('run').addEventListener('click', () => run(null));
  if (params.get('task')) $('task').value = params.get('task');
  if (params.get('max')) $('max-new-tokens').value = params.get('max');
  if (params.get('beams')) $('num-beams').value = params.get('beams');
  if (params.get('autorun')) {
    const url = new URL('image.png', new URL($('model-url').value, location.href));
    fetch(url).then((r) => r.blob()).then(run);
  } else {
    status('Pick an image and a task, then Run.');
  }
}
