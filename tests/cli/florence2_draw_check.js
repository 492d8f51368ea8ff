// Checks `wgi florence2 --draw`'s PNG against the input image (cli_test.sh):
//   node florence2_draw_check.js ORIGINAL.png DRAWN.png ANSWER.json
// Both PNGs are decoded here (8-bit RGB / RGBA, every PNG row filter; Node's zlib), independently of wgi.
// The drawn image must have the original's size; every changed pixel must be an outline color
// (src/pipelines/image_draw.cpp's palette); and the corner pixels of every box / first vertex of every
// quadrilateral of the answer (ANSWER.json is `--json`'s output) must be changed.
const fs = require("fs");
const zlib = require("zlib");

function decodePng(file) {
  const buf = fs.readFileSync(file);
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error(`${file}: not a PNG`);
  let at = 8, width = 0, height = 0, channels = 0;
  const idat = [];
  while (at < buf.length) {
    const length = buf.readUInt32BE(at), type = buf.toString("latin1", at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error(`${file}: only 8-bit non-interlaced PNGs`);
      channels = { 2: 3, 6: 4 }[data[9]];
      if (!channels) throw new Error(`${file}: color type ${data[9]} (RGB or RGBA expected)`);
    } else if (type === "IDAT") {
      idat.push(data);
    }
    at += 12 + length;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels, out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; ++y) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; ++x) {
      const v = raw[y * (stride + 1) + 1 + x];
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      let p;
      if (filter === 0) p = 0;
      else if (filter === 1) p = a;
      else if (filter === 2) p = b;
      else if (filter === 3) p = (a + b) >> 1;
      else if (filter === 4) {
        const e = a + b - c, pa = Math.abs(e - a), pb = Math.abs(e - b), pc = Math.abs(e - c);
        p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else throw new Error(`${file}: row filter ${filter}`);
      out[y * stride + x] = (v + p) & 255;
    }
  }
  const rgb = (x, y) => [0, 1, 2].map((k) => out[(y * width + x) * channels + k]);
  return { width, height, rgb };
}

const palette = ["255,0,0", "0,200,0", "0,80,255", "255,160,0", "200,0,255", "0,220,220", "255,0,140", "140,220,0"];
const [original, drawn] = [process.argv[2], process.argv[3]].map(decodePng);
const answer = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
const fail = (message) => { console.log(message); process.exit(1); };
if (original.width !== drawn.width || original.height !== drawn.height) fail("the drawn image has another size");
let changed = 0;
for (let y = 0; y < drawn.height; ++y)
  for (let x = 0; x < drawn.width; ++x) {
    const d = drawn.rgb(x, y).join(","), o = original.rgb(x, y).join(",");
    if (d === o) continue;
    ++changed;
    if (!palette.includes(d)) fail(`pixel ${x},${y} changed to ${d}, not an outline color`);
  }
const parsed = Object.values(answer.parsed)[0];
const points = [];
for (const b of parsed.bboxes || []) points.push([b[0], b[1]], [b[2], b[3]]);
for (const q of parsed.quad_boxes || []) points.push([q[0], q[1]]);
if (points.length === 0) fail("the answer has no boxes: nothing was checked");
for (const [px, py] of points) {
  const x = Math.min(Math.max(Math.floor(px), 0), drawn.width - 1), y = Math.min(Math.max(Math.floor(py), 0), drawn.height - 1);
  if (!palette.includes(drawn.rgb(x, y).join(","))) fail(`no outline at ${x},${y}`);
}
console.log(`${changed} pixels outlined, ${points.length} corners checked`);
