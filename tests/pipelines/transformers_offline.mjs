// transformers.js (npm @huggingface/transformers) set up to load a model folder from disk only, as the
// references and the peer benchmark use it: no remote models, no caches.
//   const { t, id } = await loadTransformersOffline(nodeModules, folder);
//   const model = await t.AutoModel.from_pretrained(id);
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export async function loadTransformersOffline(nodeModules, folder) {
  const entry = path.join(nodeModules, '@huggingface', 'transformers', 'dist', 'transformers.node.mjs');
  const t = await import(pathToFileURL(entry).href);
  t.env.allowRemoteModels = false;
  t.env.allowLocalModels = true;
  t.env.useBrowserCache = false;
  t.env.useFSCache = false;
  const resolved = path.resolve(folder);
  t.env.localModelPath = path.dirname(resolved) + path.sep;
  return { t, id: path.basename(resolved) };
}
