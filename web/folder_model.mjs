// The demo pages' model: a pipeline (wgi.Florence2, wgi.Siglip) for the folder picked in #model-folder (if
// any) or the URL in #model-url, with the page's #model-dtype (Florence-2's files) and #model-precision
// where it has them, loaded once per choice and freed when the choice changes.
export function folderModel(Pipeline, onProgress) {
  let loaded = {key: null, model: null};
  const value = (id) => (document.getElementById(id) ? document.getElementById(id).value.trim() : '');
  return async () => {
    const folder = document.getElementById('model-folder').files;
    const source = folder && folder.length ? folder : document.getElementById('model-url').value;
    const options = {onProgress};
    if (value('model-dtype')) options.dtype = value('model-dtype');
    if (value('model-precision')) options.precision = value('model-precision');
    const key = [source, options.dtype, options.precision];
    if (!loaded.key || loaded.key.some((part, i) => part !== key[i])) {
      if (loaded.model) await loaded.model.free();
      loaded = {key: null, model: null};
      loaded.model = await Pipeline.create(source, options);
      loaded.key = key;
    }
    return loaded.model;
  };
}
