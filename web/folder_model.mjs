// The demo pages' model: a pipeline (wgi.Florence2, wgi.Siglip) for the folder picked in #model-folder (if
// any) or the URL in #model-url, loaded once per choice and freed when the choice changes.
export function folderModel(Pipeline, onProgress) {
  let loaded = {key: null, model: null};
  return async () => {
    const folder = document.getElementById('model-folder').files;
    const key = folder && folder.length ? folder : document.getElementById('model-url').value;
    if (loaded.key !== key) {
      if (loaded.model) await loaded.model.free();
      loaded = {key: null, model: null};
      loaded.model = await Pipeline.create(key, {onProgress});
      loaded.key = key;
    }
    return loaded.model;
  };
}
