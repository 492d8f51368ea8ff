// A static file server for the browser tests and the demo, on 127.0.0.1 only.
//   /                -> the repository (web/, build/web/, tests/, third_party/ocr-models/, examples/)
//   /onnx-testdata/  -> Debian's libonnx-testdata (/usr/share/libonnx-testdata/data/)
// Usage: node tests/web/serve.mjs [PORT]   (default 8765; 0 picks a free port)
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const mounts = [['/onnx-testdata/', '/usr/share/libonnx-testdata/data/'], ['/', repo + '/']];
const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm', '.json': 'application/json', '.css': 'text/css', '.png': 'image/png',
  '.jpg': 'image/jpeg', '.txt': 'text/plain; charset=utf-8', '.md': 'text/plain; charset=utf-8',
};

export function startServer(port = 8765) {
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    let file = null;
    for (const [prefix, dir] of mounts) {
      if (url.startsWith(prefix)) {
        const candidate = path.resolve(dir, '.' + url.slice(prefix.length - 1));
        if (candidate.startsWith(path.resolve(dir))) file = candidate;  // no escaping the mount with ..
        break;
      }
    }
    if (file && fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!file || !fs.existsSync(file)) {
      res.writeHead(404, {'content-type': 'text/plain'});
      res.end('not found: ' + url);
      return;
    }
    res.writeHead(200, {
      'content-type': types[path.extname(file)] || 'application/octet-stream',
      'cache-control': 'no-store',
    });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = await startServer(Number(process.argv[2] ?? 8765));
  console.log(`serving ${repo} on http://127.0.0.1:${server.address().port}/ (demo: /web/)`);
}
