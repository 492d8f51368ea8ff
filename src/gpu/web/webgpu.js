// webgpu.h for the browser build: the subset of the WebGPU C API that src/gpu/ calls, implemented on the
// page's navigator.gpu. An Emscripten --js-library (web/CMakeLists.txt).
//
// Why not Emscripten's own -sUSE_WEBGPU: Debian's Emscripten 3.1.6 implements the early-2022 webgpu.h
// (const char* labels, old callbacks, other enum numbers), which src/gpu/ is not written against.
//
// How it reads C structs: every field offset and enum value comes from wgi_web_layout()
// (src/gpu/web/webgpu_layout.cpp), computed by the compiler from the same webgpu.h the engine includes. Nothing
// here hard-codes an offset or an enum number. Feature numbers follow gpu/webgpu_abi.h, as in the native build.
//
// How asynchronous calls complete: a promise's result is queued; wgpuInstanceProcessEvents runs the queued C
// callbacks; src/gpu/'s blocking waits call wgi_web_wait() between ProcessEvents calls, which suspends the wasm
// stack through Asyncify until the next promise settles (ASYNCIFY_IMPORTS lists it). C callbacks never run
// while the stack is suspended.
//
// The functions below are the ones src/gpu/ calls, no more. A wgpu* function src/gpu/ starts to call without
// adding it here fails the link (Emscripten's ERROR_ON_UNDEFINED_SYMBOLS), so nothing is silently stubbed;
// a descriptor field or enum value outside what wgi uses throws a JavaScript error naming it.

var LibraryWgiWebGPU = {
  $WGI__deps: ['malloc', 'free'],
  // Emscripten copies library objects into the output as source text, which turns a Map into {}: the
  // containers are created when the module starts instead.
  $WGI__postset: 'WGI.handles = new Map(); WGI.ready = [];',
  $WGI: {
    layout: null,    // Map: "Struct.field" -> {offset, size}, enum or feature name -> value
    handles: null,   // Map: id -> {kind, object, refs, ...}
    nextId: 1,
    ready: null,     // C callbacks ready to run in wgpuInstanceProcessEvents
    waiter: null,    // Asyncify wakeUp of a suspended wgi_web_wait()

    L: function(name) {
      if (!WGI.layout) {
        WGI.layout = new Map();
        var text = UTF8ToString(_wgi_web_layout());
        text.split(';').forEach(function(entry) {
          if (!entry) return;
          var eq = entry.indexOf('=');
          var v = entry.slice(eq + 1).split(':');
          WGI.layout.set(entry.slice(0, eq), v.length === 2 ? {offset: +v[0], size: +v[1]} : +v[0]);
        });
      }
      var v = WGI.layout.get(name);
      if (v === undefined) throw new Error('wgi webgpu.js: "' + name + '" is not in wgi_web_layout()');
      return v;
    },
    off: function(name) { return WGI.L(name).offset; },
    u32: function(p, name) { return HEAPU32[(p + WGI.off(name)) >> 2]; },
    ptr: function(p, name) { return HEAPU32[(p + WGI.off(name)) >> 2]; },
    u64: function(p, name) {
      var a = (p + WGI.off(name)) >> 2;
      return HEAPU32[a] + HEAPU32[a + 1] * 4294967296;
    },
    f64: function(p, name) { return HEAPF64[(p + WGI.off(name)) >> 3]; },
    // A WGPUStringView at byte address p (null data: empty; WGPU_STRLEN: NUL-terminated).
    viewAt: function(p) {
      var data = HEAPU32[(p + WGI.off('WGPUStringView.data')) >> 2];
      var length = HEAPU32[(p + WGI.off('WGPUStringView.length')) >> 2];
      if (!data) return '';
      if (length === 0xFFFFFFFF) return UTF8ToString(data);
      return UTF8ToString(data, length);
    },
    str: function(p, name) { return WGI.viewAt(p + WGI.off(name)); },
    setU32: function(p, name, v) { HEAPU32[(p + WGI.off(name)) >> 2] = v; },
    setU64: function(p, name, v) {
      var a = (p + WGI.off(name)) >> 2;
      HEAPU32[a] = v % 4294967296;
      HEAPU32[a + 1] = Math.floor(v / 4294967296);
    },
    // Writes a malloc'ed copy of s as a WGPUStringView at p (the caller frees the data later).
    setView: function(p, s) {
      var bytes = lengthBytesUTF8(s);
      var data = _malloc(bytes + 1);
      stringToUTF8(s, data, bytes + 1);
      HEAPU32[(p + WGI.off('WGPUStringView.data')) >> 2] = data;
      HEAPU32[(p + WGI.off('WGPUStringView.length')) >> 2] = bytes;
      return data;
    },
    // Calls fn(viewPtr) with a temporary WGPUStringView holding s (callbacks copy what they keep).
    withView: function(s, fn) {
      var view = _malloc(WGI.L('sizeof.WGPUStringView'));
      var data = WGI.setView(view, s || '');
      try {
        fn(view);
      } finally {
        _free(data);
        _free(view);
      }
    },

    add: function(kind, object, extra) {
      var id = WGI.nextId++;
      var h = extra || {};
      h.kind = kind;
      h.object = object;
      h.refs = 1;
      WGI.handles.set(id, h);
      return id;
    },
    get: function(id, kind) {
      var h = WGI.handles.get(id);
      if (!h || (kind && h.kind !== kind)) {
        throw new Error('wgi webgpu.js: ' + id + ' is not a live ' + (kind || 'WebGPU') + ' handle');
      }
      return h;
    },
    obj: function(id, kind) { return WGI.get(id, kind).object; },
    release: function(id) {
      var h = WGI.handles.get(id);
      if (h && --h.refs === 0) {
        if (h.onRelease) h.onRelease();
        WGI.handles.delete(id);
      }
    },

    // A callback info struct (by pointer) -> function(...args) invoking the C callback with both userdata.
    callback: function(info, struct) {
      var fn = WGI.ptr(info, struct + '.callback');
      var u1 = WGI.ptr(info, struct + '.userdata1');
      var u2 = WGI.ptr(info, struct + '.userdata2');
      return function() {
        if (!fn) return;
        var args = Array.prototype.slice.call(arguments);
        args.push(u1, u2);
        wasmTable.get(fn).apply(null, args);
      };
    },
    // Queues work for the next wgpuInstanceProcessEvents and wakes a suspended wait.
    enqueue: function(fn) {
      WGI.ready.push(fn);
      if (WGI.waiter) {
        var wake = WGI.waiter;
        WGI.waiter = null;
        wake();
      }
    },
    label: function(p, name) { return p ? WGI.str(p, name) : ''; },
    message: function(e) { return e && e.message ? e.message : String(e); },
    errorType: function(error) {
      if (!error) return WGI.L('WGPUErrorType_NoError');
      if (typeof GPUValidationError !== 'undefined' && error instanceof GPUValidationError) {
        return WGI.L('WGPUErrorType_Validation');
      }
      if (typeof GPUOutOfMemoryError !== 'undefined' && error instanceof GPUOutOfMemoryError) {
        return WGI.L('WGPUErrorType_OutOfMemory');
      }
      if (typeof GPUInternalError !== 'undefined' && error instanceof GPUInternalError) {
        return WGI.L('WGPUErrorType_Internal');
      }
      return WGI.L('WGPUErrorType_Unknown');
    },
    featureName: function(value) {
      var found = null;
      WGI.L('sizeof.WGPUStringView');  // makes sure the table is parsed
      WGI.layout.forEach(function(v, k) {
        if (found === null && k.indexOf('feature.') === 0 && v === value) found = k.slice(8);
      });
      return found;
    },
    bufferUsage: function(flags) {
      var out = 0;
      [['MapRead', 'MAP_READ'], ['MapWrite', 'MAP_WRITE'], ['CopySrc', 'COPY_SRC'], ['CopyDst', 'COPY_DST'],
       ['Uniform', 'UNIFORM'], ['Storage', 'STORAGE'], ['QueryResolve', 'QUERY_RESOLVE']].forEach(function(m) {
        var bit = WGI.L('WGPUBufferUsage_' + m[0]);
        if (Math.floor(flags / bit) % 2 === 1) {
          out |= GPUBufferUsage[m[1]];
          flags -= bit;
        }
      });
      if (flags !== 0) throw new Error('wgi webgpu.js: unsupported buffer usage bits ' + flags);
      return out;
    },
  },

  // Suspends the wasm stack (Asyncify) until a WebGPU promise has settled; src/gpu/'s waits call it.
  wgi_web_wait__deps: ['$WGI'],
  wgi_web_wait: function() {
    return Asyncify.handleSleep(function(wakeUp) {
      if (WGI.ready.length) {
        wakeUp();
      } else {
        WGI.waiter = wakeUp;
      }
    });
  },

  wgpuCreateInstance__deps: ['$WGI'],
  wgpuCreateInstance: function(desc) { return WGI.add('instance', {}); },
  wgpuInstanceRelease: function(id) { WGI.release(id); },
  wgpuInstanceProcessEvents: function(id) {
    // Callbacks queued while these run wait for the next call, as with Dawn.
    var batch = WGI.ready;
    WGI.ready = [];
    batch.forEach(function(fn) { fn(); });
  },

  wgpuInstanceRequestAdapter: function(instance, options, info) {
    var cb = WGI.callback(info, 'WGPURequestAdapterCallbackInfo');
    var fail = function(status, text) {
      WGI.enqueue(function() {
        WGI.withView(text, function(view) { cb(WGI.L(status), 0, view); });
      });
    };
    if (typeof navigator === 'undefined' || !navigator.gpu) {
      fail('WGPURequestAdapterStatus_Unavailable',
           'this browser exposes no WebGPU (navigator.gpu is undefined): use a browser with WebGPU enabled, ' +
           'served from https or localhost');
      return BigInt(0);  // WGPUFuture (i64); Emscripten 3.1.6 drops BigInt literals
    }
    var request = {};
    if (options) {
      var power = WGI.u32(options, 'WGPURequestAdapterOptions.powerPreference');
      if (power === WGI.L('WGPUPowerPreference_HighPerformance')) request.powerPreference = 'high-performance';
      if (power === WGI.L('WGPUPowerPreference_LowPower')) request.powerPreference = 'low-power';
      var level = WGI.u32(options, 'WGPURequestAdapterOptions.featureLevel');
      if (level === WGI.L('WGPUFeatureLevel_Compatibility')) request.featureLevel = 'compatibility';
      if (WGI.u32(options, 'WGPURequestAdapterOptions.forceFallbackAdapter')) {
        request.forceFallbackAdapter = true;
      }
    }
    navigator.gpu.requestAdapter(request).then(function(adapter) {
      if (!adapter) {
        fail('WGPURequestAdapterStatus_Unavailable', 'navigator.gpu.requestAdapter() returned no adapter');
        return;
      }
      WGI.enqueue(function() {
        var id = WGI.add('adapter', adapter, {level: request.featureLevel || 'core'});
        WGI.withView('', function(view) { cb(WGI.L('WGPURequestAdapterStatus_Success'), id, view); });
      });
    }, function(e) {
      fail('WGPURequestAdapterStatus_Error', 'navigator.gpu.requestAdapter() failed: ' + WGI.message(e));
    });
    return BigInt(0);  // WGPUFuture (i64); Emscripten 3.1.6 drops BigInt literals
  },

  wgpuAdapterRelease: function(id) { WGI.release(id); },
  wgpuAdapterGetInfo: function(id, out) {
    var adapter = WGI.obj(id, 'adapter');
    var info = adapter.info || {};
    WGI.setView(out + WGI.off('WGPUAdapterInfo.vendor'), info.vendor || '');
    WGI.setView(out + WGI.off('WGPUAdapterInfo.architecture'), info.architecture || '');
    // Browsers often withhold the device name (SwiftShader: vendor "google", architecture "swiftshader");
    // src/gpu/ names adapters by `device`, so fall back to what the browser does tell.
    var name = info.device || info.description || [info.vendor, info.architecture].filter(Boolean).join(' ');
    WGI.setView(out + WGI.off('WGPUAdapterInfo.device'), name);
    WGI.setView(out + WGI.off('WGPUAdapterInfo.description'), info.description || '');
    WGI.setU32(out, 'WGPUAdapterInfo.backendType', WGI.L('WGPUBackendType_WebGPU'));
    WGI.setU32(out, 'WGPUAdapterInfo.adapterType',
               info.isFallbackAdapter ? WGI.L('WGPUAdapterType_CPU') : WGI.L('WGPUAdapterType_Unknown'));
    WGI.setU32(out, 'WGPUAdapterInfo.vendorID', 0);
    WGI.setU32(out, 'WGPUAdapterInfo.deviceID', 0);
    WGI.setU32(out, 'WGPUAdapterInfo.subgroupMinSize', info.subgroupMinSize || 0);
    WGI.setU32(out, 'WGPUAdapterInfo.subgroupMaxSize', info.subgroupMaxSize || 0);
    return WGI.L('WGPUStatus_Success');
  },
  // By value: the wasm32 C ABI passes the struct as a pointer to a copy.
  wgpuAdapterInfoFreeMembers: function(info) {
    ['vendor', 'architecture', 'device', 'description'].forEach(function(f) {
      _free(HEAPU32[(info + WGI.off('WGPUAdapterInfo.' + f) + WGI.off('WGPUStringView.data')) >> 2]);
    });
  },
  wgpuAdapterGetLimits: function(id, out) {
    var limits = WGI.obj(id, 'adapter').limits;
    WGI.L('sizeof.WGPUStringView');
    WGI.layout.forEach(function(v, k) {
      if (k.indexOf('WGPULimits.') !== 0) return;
      var name = k.slice(11);
      if (!(name in limits)) return;  // a limit this browser does not report keeps its "undefined" value
      if (v.size === 8) {
        WGI.setU64(out, k, limits[name]);
      } else {
        WGI.setU32(out, k, limits[name]);
      }
    });
    return WGI.L('WGPUStatus_Success');
  },
  wgpuAdapterHasFeature: function(id, feature) {
    var name = WGI.featureName(feature);
    var adapter = WGI.obj(id, 'adapter');
    if (name === 'chromium-experimental-subgroup-matrix') {
      // Only with the configuration linear/gemm_matrix_f16.wgsl uses: f16 x f16 -> f32, 16x16x16.
      var configs = (adapter.info && adapter.info.subgroupMatrixConfigs) || [];
      var f16 = Array.from(configs).some(function(c) {
        return c.componentType === 'f16' && c.resultComponentType === 'f32' && c.M === 16 && c.N === 16 &&
               c.K === 16;
      });
      if (!f16) return 0;
    }
    return name !== null && adapter.features.has(name) ? 1 : 0;
  },

  wgpuAdapterRequestDevice: function(id, desc, info) {
    var adapter = WGI.obj(id, 'adapter');
    var cb = WGI.callback(info, 'WGPURequestDeviceCallbackInfo');
    var request = {requiredFeatures: [], requiredLimits: {}};
    var lost = null, uncaptured = null;
    if (desc) {
      request.label = WGI.str(desc, 'WGPUDeviceDescriptor.label');
      var count = WGI.u32(desc, 'WGPUDeviceDescriptor.requiredFeatureCount');
      var features = WGI.ptr(desc, 'WGPUDeviceDescriptor.requiredFeatures');
      for (var i = 0; i < count; ++i) {
        var name = WGI.featureName(HEAPU32[(features >> 2) + i]);
        if (name === null) throw new Error('wgi webgpu.js: unknown feature ' + HEAPU32[(features >> 2) + i]);
        request.requiredFeatures.push(name);
      }
      var limits = WGI.ptr(desc, 'WGPUDeviceDescriptor.requiredLimits');
      if (limits) {
        WGI.layout.forEach(function(v, k) {
          if (k.indexOf('WGPULimits.') !== 0) return;
          var name = k.slice(11);
          if (!(name in adapter.limits)) return;
          var value = v.size === 8 ? WGI.u64(limits, k) : WGI.u32(limits, k);
          // WGPU_LIMIT_U32_UNDEFINED / WGPU_LIMIT_U64_UNDEFINED: not requested.
          if (value === 0xFFFFFFFF || value >= 18446744073709549568) return;
          request.requiredLimits[name] = value;
        });
      }
      lost = WGI.callback(desc + WGI.off('WGPUDeviceDescriptor.deviceLostCallbackInfo'),
                          'WGPUDeviceLostCallbackInfo');
      uncaptured = WGI.callback(desc + WGI.off('WGPUDeviceDescriptor.uncapturedErrorCallbackInfo'),
                                'WGPUUncapturedErrorCallbackInfo');
    }
    adapter.requestDevice(request).then(function(device) {
      WGI.enqueue(function() {
        // The C callbacks take `WGPUDevice const*`: a cell in wasm memory holding the handle.
        var cell = _malloc(4);
        var h = {cell: cell, destroyed: false, level: WGI.get(id).level};
        h.onRelease = function() { _free(cell); };
        var deviceId = WGI.add('device', device, h);
        HEAPU32[cell >> 2] = deviceId;
        device.lost.then(function(reason) {
          if (h.destroyed || !lost) return;  // wgpuDeviceDestroy: src/gpu/ ignores that reason anyway
          WGI.enqueue(function() {
            var r = reason.reason === 'destroyed' ? 'WGPUDeviceLostReason_Destroyed'
                                                  : 'WGPUDeviceLostReason_Unknown';
            WGI.withView(reason.message, function(view) { lost(cell, WGI.L(r), view); });
          });
        });
        device.addEventListener('uncapturederror', function(event) {
          if (h.destroyed || !uncaptured) return;
          var type = WGI.errorType(event.error);
          var text = WGI.message(event.error);
          WGI.enqueue(function() {
            if (h.destroyed) return;
            WGI.withView(text, function(view) { uncaptured(cell, type, view); });
          });
        });
        WGI.withView('', function(view) { cb(WGI.L('WGPURequestDeviceStatus_Success'), deviceId, view); });
      });
    }, function(e) {
      WGI.enqueue(function() {
        WGI.withView('adapter.requestDevice() failed: ' + WGI.message(e), function(view) {
          cb(WGI.L('WGPURequestDeviceStatus_Error'), 0, view);
        });
      });
    });
    return BigInt(0);  // WGPUFuture (i64); Emscripten 3.1.6 drops BigInt literals
  },

  wgpuDeviceRelease: function(id) { WGI.release(id); },
  wgpuDeviceDestroy: function(id) {
    var h = WGI.get(id, 'device');
    h.destroyed = true;
    h.object.destroy();
  },
  wgpuDeviceGetQueue: function(id) { return WGI.add('queue', WGI.obj(id, 'device').queue); },
  wgpuDeviceGetLimits: function(id, out) {
    var limits = WGI.obj(id, 'device').limits;
    WGI.L('sizeof.WGPUStringView');
    WGI.layout.forEach(function(v, k) {
      if (k.indexOf('WGPULimits.') !== 0) return;
      var name = k.slice(11);
      if (!(name in limits)) return;
      if (v.size === 8) {
        WGI.setU64(out, k, limits[name]);
      } else {
        WGI.setU32(out, k, limits[name]);
      }
    });
    return WGI.L('WGPUStatus_Success');
  },
  // The one WGSL language feature wgi asks about (gpu/webgpu_abi.h), from navigator.gpu.wgslLanguageFeatures.
  wgpuInstanceHasWGSLLanguageFeature: function(instance, feature) {
    var known = navigator.gpu.wgslLanguageFeatures;
    return feature === WGI.L('WGPUWGSLLanguageFeatureName_Packed4x8IntegerDotProduct') && known &&
                   known.has('packed_4x8_integer_dot_product') ? 1 : 0;
  },
  wgpuDeviceHasFeature: function(id, feature) {
    var name = WGI.featureName(feature);
    return name !== null && WGI.obj(id, 'device').features.has(name) ? 1 : 0;
  },
  // Features the browser granted that gpu/webgpu_abi.h has no number for are left out.
  wgpuDeviceGetFeatures: function(id, out) {
    var values = [];
    // Array.from: dawn.node's GPUSupportedFeatures is iterable but has no forEach (browsers have both).
    Array.from(WGI.obj(id, 'device').features).forEach(function(name) {
      var v = WGI.layout.get('feature.' + name);
      if (v !== undefined) values.push(v);
    });
    var array = _malloc(4 * Math.max(1, values.length));
    values.forEach(function(v, i) { HEAPU32[(array >> 2) + i] = v; });
    WGI.setU32(out, 'WGPUSupportedFeatures.featureCount', values.length);
    WGI.setU32(out, 'WGPUSupportedFeatures.features', array);
  },
  wgpuSupportedFeaturesFreeMembers: function(features) {
    _free(WGI.ptr(features, 'WGPUSupportedFeatures.features'));
  },

  wgpuDevicePushErrorScope: function(id, filter) {
    var name = filter === WGI.L('WGPUErrorFilter_Validation')    ? 'validation'
               : filter === WGI.L('WGPUErrorFilter_OutOfMemory') ? 'out-of-memory'
                                                                  : 'internal';
    WGI.obj(id, 'device').pushErrorScope(name);
  },
  wgpuDevicePopErrorScope: function(id, info) {
    var cb = WGI.callback(info, 'WGPUPopErrorScopeCallbackInfo');
    WGI.obj(id, 'device').popErrorScope().then(function(error) {
      var type = WGI.errorType(error);
      var text = error ? error.message : '';
      WGI.enqueue(function() {
        WGI.withView(text, function(view) { cb(WGI.L('WGPUPopErrorScopeStatus_Success'), type, view); });
      });
    }, function(e) {
      WGI.enqueue(function() {
        WGI.withView(WGI.message(e), function(view) {
          cb(WGI.L('WGPUPopErrorScopeStatus_Error'), WGI.L('WGPUErrorType_Unknown'), view);
        });
      });
    });
    return BigInt(0);  // WGPUFuture (i64); Emscripten 3.1.6 drops BigInt literals
  },

  wgpuDeviceCreateBuffer: function(id, desc) {
    var buffer = WGI.obj(id, 'device').createBuffer({
      label: WGI.str(desc, 'WGPUBufferDescriptor.label'),
      size: WGI.u64(desc, 'WGPUBufferDescriptor.size'),
      usage: WGI.bufferUsage(WGI.u64(desc, 'WGPUBufferDescriptor.usage')),
      mappedAtCreation: WGI.u32(desc, 'WGPUBufferDescriptor.mappedAtCreation') !== 0,
    });
    var h = {mapped: []};
    h.onRelease = function() {
      h.mapped.forEach(function(p) { _free(p); });
      buffer.destroy();
    };
    return WGI.add('buffer', buffer, h);
  },
  wgpuBufferRelease: function(id) { WGI.release(id); },
  wgpuBufferMapAsync: function(id, mode, offset, size, info) {
    var cb = WGI.callback(info, 'WGPUBufferMapCallbackInfo');
    if (Number(mode) !== WGI.L('WGPUMapMode_Read')) throw new Error('wgi webgpu.js: only MapMode Read');
    WGI.obj(id, 'buffer').mapAsync(GPUMapMode.READ, offset, size).then(function() {
      WGI.enqueue(function() {
        WGI.withView('', function(view) { cb(WGI.L('WGPUMapAsyncStatus_Success'), view); });
      });
    }, function(e) {
      WGI.enqueue(function() {
        WGI.withView('mapAsync failed: ' + WGI.message(e), function(view) {
          cb(WGI.L('WGPUMapAsyncStatus_Error'), view);
        });
      });
    });
    return BigInt(0);  // WGPUFuture (i64); Emscripten 3.1.6 drops BigInt literals
  },
  // A copy of the mapped bytes in wasm memory, valid until wgpuBufferUnmap.
  wgpuBufferGetConstMappedRange: function(id, offset, size) {
    var h = WGI.get(id, 'buffer');
    var bytes = new Uint8Array(h.object.getMappedRange(offset, size));
    var p = _malloc(Math.max(1, size));
    HEAPU8.set(bytes, p);
    h.mapped.push(p);
    return p;
  },
  wgpuBufferUnmap: function(id) {
    var h = WGI.get(id, 'buffer');
    h.mapped.forEach(function(p) { _free(p); });
    h.mapped = [];
    h.object.unmap();
  },

  wgpuDeviceCreateShaderModule: function(id, desc) {
    var chain = WGI.ptr(desc, 'WGPUShaderModuleDescriptor.nextInChain');
    if (!chain || WGI.u32(chain, 'WGPUChainedStruct.sType') !== WGI.L('WGPUSType_ShaderSourceWGSL')) {
      throw new Error('wgi webgpu.js: only WGSL shader modules (WGPUShaderSourceWGSL) are implemented');
    }
    var module = WGI.obj(id, 'device').createShaderModule({
      label: WGI.str(desc, 'WGPUShaderModuleDescriptor.label'),
      code: WGI.str(chain, 'WGPUShaderSourceWGSL.code'),
    });
    return WGI.add('shader module', module);
  },
  wgpuShaderModuleRelease: function(id) { WGI.release(id); },
  wgpuShaderModuleGetCompilationInfo: function(id, info) {
    var cb = WGI.callback(info, 'WGPUCompilationInfoCallbackInfo');
    WGI.obj(id, 'shader module').getCompilationInfo().then(function(result) {
      WGI.enqueue(function() {
        var messages = result.messages || [];
        var size = WGI.L('sizeof.WGPUCompilationMessage');
        var array = _malloc(Math.max(1, messages.length) * size);
        HEAPU8.fill(0, array, array + Math.max(1, messages.length) * size);
        var strings = [];
        messages.forEach(function(m, i) {
          var p = array + i * size;
          strings.push(WGI.setView(p + WGI.off('WGPUCompilationMessage.message'), m.message));
          var type = m.type === 'error' ? 'WGPUCompilationMessageType_Error'
                     : m.type === 'warning' ? 'WGPUCompilationMessageType_Warning'
                                            : 'WGPUCompilationMessageType_Info';
          WGI.setU32(p, 'WGPUCompilationMessage.type', WGI.L(type));
          WGI.setU64(p, 'WGPUCompilationMessage.lineNum', m.lineNum);
          WGI.setU64(p, 'WGPUCompilationMessage.linePos', m.linePos);
          WGI.setU64(p, 'WGPUCompilationMessage.offset', m.offset);
          WGI.setU64(p, 'WGPUCompilationMessage.length', m.length);
        });
        var infoSize = WGI.L('sizeof.WGPUCompilationInfo');
        var ci = _malloc(infoSize);
        HEAPU8.fill(0, ci, ci + infoSize);
        WGI.setU32(ci, 'WGPUCompilationInfo.messageCount', messages.length);
        WGI.setU32(ci, 'WGPUCompilationInfo.messages', array);
        try {
          cb(WGI.L('WGPUCompilationInfoRequestStatus_Success'), ci);
        } finally {
          strings.forEach(function(p) { _free(p); });
          _free(array);
          _free(ci);
        }
      });
    });
    return BigInt(0);  // WGPUFuture (i64); Emscripten 3.1.6 drops BigInt literals
  },

  wgpuDeviceCreateBindGroupLayout: function(id, desc) {
    var count = WGI.u32(desc, 'WGPUBindGroupLayoutDescriptor.entryCount');
    var entries = WGI.ptr(desc, 'WGPUBindGroupLayoutDescriptor.entries');
    var size = WGI.L('sizeof.WGPUBindGroupLayoutEntry');
    var out = [];
    for (var i = 0; i < count; ++i) {
      var e = entries + i * size;
      var b = e + WGI.off('WGPUBindGroupLayoutEntry.buffer');
      var type = WGI.u32(b, 'WGPUBufferBindingLayout.type');
      var name = type === WGI.L('WGPUBufferBindingType_Storage')           ? 'storage'
                 : type === WGI.L('WGPUBufferBindingType_ReadOnlyStorage') ? 'read-only-storage'
                 : type === WGI.L('WGPUBufferBindingType_Uniform')         ? 'uniform'
                                                                            : null;
      if (name === null) throw new Error('wgi webgpu.js: only buffer bindings are implemented');
      var visibility = 0;
      if (Math.floor(WGI.u64(e, 'WGPUBindGroupLayoutEntry.visibility') / WGI.L('WGPUShaderStage_Compute')) % 2) {
        visibility |= GPUShaderStage.COMPUTE;
      }
      out.push({
        binding: WGI.u32(e, 'WGPUBindGroupLayoutEntry.binding'),
        visibility: visibility,
        buffer: {
          type: name,
          hasDynamicOffset: WGI.u32(b, 'WGPUBufferBindingLayout.hasDynamicOffset') !== 0,
          minBindingSize: WGI.u64(b, 'WGPUBufferBindingLayout.minBindingSize'),
        },
      });
    }
    var layout = WGI.obj(id, 'device').createBindGroupLayout({
      label: WGI.str(desc, 'WGPUBindGroupLayoutDescriptor.label'),
      entries: out,
    });
    return WGI.add('bind group layout', layout);
  },
  wgpuBindGroupLayoutRelease: function(id) { WGI.release(id); },
  wgpuDeviceCreatePipelineLayout: function(id, desc) {
    var count = WGI.u32(desc, 'WGPUPipelineLayoutDescriptor.bindGroupLayoutCount');
    var layouts = WGI.ptr(desc, 'WGPUPipelineLayoutDescriptor.bindGroupLayouts');
    var list = [];
    for (var i = 0; i < count; ++i) list.push(WGI.obj(HEAPU32[(layouts >> 2) + i], 'bind group layout'));
    var layout = WGI.obj(id, 'device').createPipelineLayout({
      label: WGI.str(desc, 'WGPUPipelineLayoutDescriptor.label'),
      bindGroupLayouts: list,
    });
    return WGI.add('pipeline layout', layout);
  },
  wgpuPipelineLayoutRelease: function(id) { WGI.release(id); },

  $wgiComputePipelineDescriptor__deps: ['$WGI'],
  $wgiComputePipelineDescriptor: function(desc) {
    var layout = WGI.ptr(desc, 'WGPUComputePipelineDescriptor.layout');
    var c = desc + WGI.off('WGPUComputePipelineDescriptor.compute');
    var constants = {};
    var count = WGI.u32(c, 'WGPUComputeState.constantCount');
    var entries = WGI.ptr(c, 'WGPUComputeState.constants');
    var size = WGI.L('sizeof.WGPUConstantEntry');
    for (var i = 0; i < count; ++i) {
      var e = entries + i * size;
      constants[WGI.str(e, 'WGPUConstantEntry.key')] = WGI.f64(e, 'WGPUConstantEntry.value');
    }
    var compute = {module: WGI.obj(WGI.ptr(c, 'WGPUComputeState.module'), 'shader module'), constants: constants};
    var entry = WGI.str(c, 'WGPUComputeState.entryPoint');
    if (entry) compute.entryPoint = entry;
    return {
      label: WGI.str(desc, 'WGPUComputePipelineDescriptor.label'),
      layout: layout ? WGI.obj(layout, 'pipeline layout') : 'auto',
      compute: compute,
    };
  },
  wgpuDeviceCreateComputePipeline__deps: ['$wgiComputePipelineDescriptor'],
  wgpuDeviceCreateComputePipeline: function(id, desc) {
    var pipeline = WGI.obj(id, 'device').createComputePipeline(wgiComputePipelineDescriptor(desc));
    return WGI.add('compute pipeline', pipeline);
  },
  wgpuDeviceCreateComputePipelineAsync__deps: ['$wgiComputePipelineDescriptor'],
  wgpuDeviceCreateComputePipelineAsync: function(id, desc, info) {
    var cb = WGI.callback(info, 'WGPUCreateComputePipelineAsyncCallbackInfo');
    WGI.obj(id, 'device').createComputePipelineAsync(wgiComputePipelineDescriptor(desc)).then(function(p) {
      WGI.enqueue(function() {
        var pid = WGI.add('compute pipeline', p);
        WGI.withView('', function(view) { cb(WGI.L('WGPUCreatePipelineAsyncStatus_Success'), pid, view); });
      });
    }, function(e) {
      var status = e && e.reason === 'validation' ? 'WGPUCreatePipelineAsyncStatus_ValidationError'
                                                  : 'WGPUCreatePipelineAsyncStatus_InternalError';
      WGI.enqueue(function() {
        WGI.withView(WGI.message(e), function(view) { cb(WGI.L(status), 0, view); });
      });
    });
    return BigInt(0);  // WGPUFuture (i64); Emscripten 3.1.6 drops BigInt literals
  },
  wgpuComputePipelineRelease: function(id) { WGI.release(id); },

  wgpuDeviceCreateBindGroup: function(id, desc) {
    var count = WGI.u32(desc, 'WGPUBindGroupDescriptor.entryCount');
    var entries = WGI.ptr(desc, 'WGPUBindGroupDescriptor.entries');
    var size = WGI.L('sizeof.WGPUBindGroupEntry');
    var out = [];
    for (var i = 0; i < count; ++i) {
      var e = entries + i * size;
      var buffer = WGI.ptr(e, 'WGPUBindGroupEntry.buffer');
      if (!buffer) throw new Error('wgi webgpu.js: only buffer bindings are implemented');
      var resource = {buffer: WGI.obj(buffer, 'buffer'), offset: WGI.u64(e, 'WGPUBindGroupEntry.offset')};
      var bytes = WGI.u64(e, 'WGPUBindGroupEntry.size');
      if (bytes < 18446744073709549568) resource.size = bytes;  // WGPU_WHOLE_SIZE: to the end
      out.push({binding: WGI.u32(e, 'WGPUBindGroupEntry.binding'), resource: resource});
    }
    var group = WGI.obj(id, 'device').createBindGroup({
      label: WGI.str(desc, 'WGPUBindGroupDescriptor.label'),
      layout: WGI.obj(WGI.ptr(desc, 'WGPUBindGroupDescriptor.layout'), 'bind group layout'),
      entries: out,
    });
    return WGI.add('bind group', group);
  },
  wgpuBindGroupRelease: function(id) { WGI.release(id); },

  wgpuDeviceCreateQuerySet: function(id, desc) {
    if (WGI.u32(desc, 'WGPUQuerySetDescriptor.type') !== WGI.L('WGPUQueryType_Timestamp')) {
      throw new Error('wgi webgpu.js: only timestamp query sets are implemented');
    }
    var set = WGI.obj(id, 'device').createQuerySet({
      label: WGI.str(desc, 'WGPUQuerySetDescriptor.label'),
      type: 'timestamp',
      count: WGI.u32(desc, 'WGPUQuerySetDescriptor.count'),
    });
    return WGI.add('query set', set);
  },
  wgpuQuerySetDestroy: function(id) { WGI.obj(id, 'query set').destroy(); },
  wgpuQuerySetRelease: function(id) { WGI.release(id); },

  wgpuDeviceCreateCommandEncoder: function(id, desc) {
    var encoder = WGI.obj(id, 'device').createCommandEncoder(
        {label: WGI.label(desc, 'WGPUCommandEncoderDescriptor.label')});
    return WGI.add('command encoder', encoder);
  },
  wgpuCommandEncoderRelease: function(id) { WGI.release(id); },
  wgpuCommandEncoderBeginComputePass: function(id, desc) {
    var d = {};
    if (desc) {
      d.label = WGI.str(desc, 'WGPUComputePassDescriptor.label');
      var tw = WGI.ptr(desc, 'WGPUComputePassDescriptor.timestampWrites');
      if (tw) {
        d.timestampWrites = {
          querySet: WGI.obj(WGI.ptr(tw, 'WGPUPassTimestampWrites.querySet'), 'query set'),
          beginningOfPassWriteIndex: WGI.u32(tw, 'WGPUPassTimestampWrites.beginningOfPassWriteIndex'),
          endOfPassWriteIndex: WGI.u32(tw, 'WGPUPassTimestampWrites.endOfPassWriteIndex'),
        };
      }
    }
    return WGI.add('compute pass', WGI.obj(id, 'command encoder').beginComputePass(d));
  },
  wgpuCommandEncoderCopyBufferToBuffer: function(id, src, srcOffset, dst, dstOffset, size) {
    WGI.obj(id, 'command encoder').copyBufferToBuffer(WGI.obj(src, 'buffer'), Number(srcOffset),
                                                       WGI.obj(dst, 'buffer'), Number(dstOffset), Number(size));
  },
  wgpuCommandEncoderResolveQuerySet: function(id, set, first, count, dst, dstOffset) {
    WGI.obj(id, 'command encoder').resolveQuerySet(WGI.obj(set, 'query set'), first, count,
                                                    WGI.obj(dst, 'buffer'), Number(dstOffset));
  },
  wgpuCommandEncoderFinish: function(id, desc) {
    var commands = WGI.obj(id, 'command encoder').finish({label: WGI.label(desc, 'WGPUCommandBufferDescriptor.label')});
    return WGI.add('command buffer', commands);
  },
  wgpuCommandBufferRelease: function(id) { WGI.release(id); },

  wgpuComputePassEncoderSetPipeline: function(id, pipeline) {
    WGI.obj(id, 'compute pass').setPipeline(WGI.obj(pipeline, 'compute pipeline'));
  },
  wgpuComputePassEncoderSetBindGroup: function(id, index, group, offsetCount, offsets) {
    var dynamic = [];
    for (var i = 0; i < offsetCount; ++i) dynamic.push(HEAPU32[(offsets >> 2) + i]);
    WGI.obj(id, 'compute pass').setBindGroup(index, group ? WGI.obj(group, 'bind group') : null, dynamic);
  },
  wgpuComputePassEncoderDispatchWorkgroups: function(id, x, y, z) {
    WGI.obj(id, 'compute pass').dispatchWorkgroups(x, y, z);
  },
  wgpuComputePassEncoderEnd: function(id) { WGI.obj(id, 'compute pass').end(); },
  wgpuComputePassEncoderRelease: function(id) { WGI.release(id); },

  wgpuQueueRelease: function(id) { WGI.release(id); },
  wgpuQueueSubmit: function(id, count, commands) {
    var list = [];
    for (var i = 0; i < count; ++i) list.push(WGI.obj(HEAPU32[(commands >> 2) + i], 'command buffer'));
    WGI.obj(id, 'queue').submit(list);
  },
  wgpuQueueWriteBuffer: function(id, buffer, offset, data, size) {
    WGI.obj(id, 'queue').writeBuffer(WGI.obj(buffer, 'buffer'), Number(offset), HEAPU8, data, size);
  },
  wgpuQueueOnSubmittedWorkDone: function(id, info) {
    var cb = WGI.callback(info, 'WGPUQueueWorkDoneCallbackInfo');
    WGI.obj(id, 'queue').onSubmittedWorkDone().then(function() {
      WGI.enqueue(function() {
        WGI.withView('', function(view) { cb(WGI.L('WGPUQueueWorkDoneStatus_Success'), view); });
      });
    }, function(e) {
      WGI.enqueue(function() {
        WGI.withView(WGI.message(e), function(view) { cb(WGI.L('WGPUQueueWorkDoneStatus_Error'), view); });
      });
    });
    return BigInt(0);  // WGPUFuture (i64); Emscripten 3.1.6 drops BigInt literals
  },
};

// Every function above except the helpers needs WGI.
Object.keys(LibraryWgiWebGPU).forEach(function(name) {
  if (name[0] === '$' || name.indexOf('__') !== -1) return;
  var deps = name + '__deps';
  if (!LibraryWgiWebGPU[deps]) LibraryWgiWebGPU[deps] = ['$WGI'];
});
mergeInto(LibraryManager.library, LibraryWgiWebGPU);
