// browserq stealth: the few JavaScript patches a context needs, installed in every frame by
// BrowserContext.add_init_script before any page script runs. The Python side replaces
// __BROWSERQ_STEALTH_CONFIG__ with a JSON object (see apply.py: _init_script).
//
// Rules this file keeps:
// * Patch only what CDP and launch flags cannot do natively (WebGL strings, work area, window
//   geometry, deviceMemory when it differs from the host; in workers also what no CDP override
//   reaches; high-entropy client hints where the browser reports them blank). No globals, no own
//   properties on navigator, no Proxy objects.
// * The same file runs in pages and frames (init script) and in dedicated, shared and service
//   workers (stealth/workers.py evaluates it before the worker's own script): every patch checks
//   that what it replaces exists in this scope.
// * A replaced function looks native: a method (no `prototype`, not constructible), same name and
//   length, same property descriptor, toString "function NAME() { [native code] }" from
//   Function.prototype.toString in any same-origin realm (one registry per frame tree, reached
//   through a per-context secret symbol), and errors thrown through it carry the stack the native
//   function would have produced (Error.captureStackTrace drops our frame).
// * Strict mode: like native functions, the replacements throw on `.caller` / `.arguments`.
(function bqIdentity() {
  'use strict';
  var cfg = __BROWSERQ_STEALTH_CONFIG__;
  var G = globalThis;
  var O = Object;
  var defineProperty = O.defineProperty;
  var getOwnPropertyDescriptor = O.getOwnPropertyDescriptor;
  var apply = Reflect.apply;
  var nativeToString = Function.prototype.toString;
  var captureStackTrace = Error.captureStackTrace;
  var WeakMapCtor = WeakMap;
  var wmGet = WeakMap.prototype.get;
  var wmSet = WeakMap.prototype.set;
  var KEY = Symbol.for(cfg.nonce);

  // Once per scope: a worker can be reached both ways (stealth/workers.py). Our toString answers
  // the secret key with the registry; the native one throws on a symbol receiver.
  try {
    if (typeof apply(Function.prototype.toString, KEY, []) === 'object') return;
  } catch (e) { /* not patched yet */ }

  // One registry (patched function -> native source text) per frame tree: a child frame borrows
  // its same-origin top's through the top's patched toString, called with the secret symbol.
  var registry = null;
  try {
    var top = G.top;
    if (top && top !== G) {
      var found = apply(top.Function.prototype.toString, KEY, []);
      if (found && typeof found === 'object') registry = found;
    }
  } catch (e) { /* cross-origin top: this frame keeps its own registry */ }
  if (!registry) registry = new WeakMapCtor();

  function markNative(fn, name) {
    apply(wmSet, registry, [fn, 'function ' + name + '() { [native code] }']);
  }

  function rethrow(error, frameToHide) {
    // The caller sees the error the native function threw, without our frame in its stack.
    if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
      try { apply(captureStackTrace, Error, [error, frameToHide]); } catch (e) { /* frozen error */ }
    }
    throw error;
  }

  // For a JavaScript built-in (Function.prototype.toString), V8 shows the built-in's own frame
  // ("at Object.toString (<anonymous>)") first: keep that line, drop ours, honour stackTraceLimit.
  function rethrowFromBuiltin(error, frameToHide) {
    var before = null;
    try {
      if (Error.prepareStackTrace === undefined) before = error.stack;
    } catch (e) { before = null; }
    try { apply(captureStackTrace, Error, [error, frameToHide]); } catch (e) { throw error; }
    if (typeof before === 'string') {
      var builtinFrame = before.split('\n')[1];
      if (builtinFrame && /^\s+at .*\(<anonymous>\)$/.test(builtinFrame)) {
        var lines = String(error.stack).split('\n');
        var limit = Error.stackTraceLimit;
        var callers = lines.slice(1);
        if (typeof limit === 'number' && limit >= 1) callers = callers.slice(0, limit - 1);
        else if (typeof limit === 'number') callers = [];
        error.stack = [lines[0], builtinFrame].concat(callers).join('\n');
      }
    }
    throw error;
  }

  var patchedAnything = false;

  function replaceMethod(proto, name, makeReplacement) {
    var desc = proto && getOwnPropertyDescriptor(proto, name);
    if (!desc || typeof desc.value !== 'function') return;
    var replacement = makeReplacement(desc.value);
    defineProperty(proto, name, {
      value: replacement, writable: desc.writable, enumerable: desc.enumerable, configurable: desc.configurable,
    });
    markNative(replacement, name);
    patchedAnything = true;
  }

  // A getter that validates its receiver exactly like the native one (by calling it), then
  // answers `value`.
  function replaceGetter(holder, name, value) {
    var desc = holder && getOwnPropertyDescriptor(holder, name);
    if (!desc || typeof desc.get !== 'function') return;
    var original = desc.get;
    var getter = getOwnPropertyDescriptor({
      get value() {
        try { apply(original, this, []); } catch (e) { rethrow(e, getter); }
        return value;
      },
    }, 'value').get;
    // The object-literal trick names it "get value"; give it the native name.
    defineProperty(getter, 'name', { value: 'get ' + name });
    defineProperty(holder, name, {
      get: getter, set: desc.set, enumerable: desc.enumerable, configurable: desc.configurable,
    });
    markNative(getter, 'get ' + name);
    patchedAnything = true;
  }

  // --- WebGL: UNMASKED_VENDOR_WEBGL (0x9245) / UNMASKED_RENDERER_WEBGL (0x9246) ----------------
  if (cfg.webgl) {
    var webglVendor = cfg.webgl.vendor;
    var webglRenderer = cfg.webgl.renderer;
    var glProtos = [G.WebGLRenderingContext, G.WebGL2RenderingContext];
    for (var i = 0; i < glProtos.length; i++) {
      if (!glProtos[i]) continue;
      replaceMethod(glProtos[i].prototype, 'getParameter', function (original) {
        var replacement = {
          getParameter(pname) {
            var value;
            try { value = apply(original, this, arguments); } catch (e) { rethrow(e, replacement); }
            if (typeof value === 'string') {
              if (pname === 0x9245) return webglVendor;
              if (pname === 0x9246) return webglRenderer;
            }
            return value;
          },
        }.getParameter;
        return replacement;
      });
    }
  }

  // --- navigator values (only where the native one differs) ----------------------------------
  // Pages get platform and cores from CDP overrides; workers other than dedicated ones see
  // neither, so cfg.workerNavigator carries them there.
  var NavigatorCtor = G.Navigator || G.WorkerNavigator;
  function replaceNavigatorValue(name, value) {
    if (value === null || value === undefined || !NavigatorCtor) return;
    var desc = getOwnPropertyDescriptor(NavigatorCtor.prototype, name);
    var nativeValue;
    try { nativeValue = desc && apply(desc.get, G.navigator, []); } catch (e) { nativeValue = undefined; }
    if (nativeValue !== undefined && nativeValue !== value) replaceGetter(NavigatorCtor.prototype, name, value);
  }
  if (typeof cfg.deviceMemory === 'number') replaceNavigatorValue('deviceMemory', cfg.deviceMemory);
  if (cfg.workerNavigator && G.WorkerNavigator) {
    replaceNavigatorValue('platform', cfg.workerNavigator.platform);
    replaceNavigatorValue('hardwareConcurrency', cfg.workerNavigator.hardwareConcurrency);
  }

  // --- high-entropy client hints the browser reports blank -----------------------------------
  // Launched with --user-agent (headless), Chrome answers architecture, bitness, platformVersion
  // and fullVersionList with '' / [] wherever no CDP override reaches (cross-site iframes, shared
  // and service workers). Fill exactly those blanks with the identity's values; a page that the
  // override reached gets its values untouched.
  if (cfg.hints && G.NavigatorUAData) {
    var hints = cfg.hints;
    var promiseThen = Promise.prototype.then;
    var isArray = Array.isArray;
    var fillBlanks = function (values) {
      if (values === null || typeof values !== 'object') return values;
      for (var key in hints) {
        if (!(key in values)) continue;
        var current = values[key];
        var blank = current === '' || (isArray(current) && current.length === 0);
        if (!blank) continue;
        var wanted = hints[key];
        if (isArray(wanted)) {
          var copy = [];
          for (var j = 0; j < wanted.length; j++) {
            var item = wanted[j];
            copy.push(typeof item === 'object' ? { brand: item.brand, version: item.version } : item);
          }
          values[key] = copy;
        } else {
          values[key] = wanted;
        }
      }
      return values;
    };
    replaceMethod(G.NavigatorUAData.prototype, 'getHighEntropyValues', function (original) {
      var replacement = {
        getHighEntropyValues(hintNames) {
          var pending;
          try { pending = apply(original, this, arguments); } catch (e) { rethrow(e, replacement); }
          return apply(promiseThen, pending, [fillBlanks]);
        },
      }.getHighEntropyValues;
      return replacement;
    });
  }

  // --- screen work area (taskbar / menu bar) -------------------------------------------------
  if (cfg.screen && G.Screen) {
    var sp = G.Screen.prototype;
    replaceGetter(sp, 'availLeft', cfg.screen.availLeft);
    replaceGetter(sp, 'availTop', cfg.screen.availTop);
    replaceGetter(sp, 'availWidth', cfg.screen.availWidth);
    replaceGetter(sp, 'availHeight', cfg.screen.availHeight);
  }

  // --- outer window geometry (headless has no browser UI: outer == inner, position 10,10) -------
  if (cfg.window) {
    replaceGetter(G, 'outerWidth', cfg.window.outerWidth);
    replaceGetter(G, 'outerHeight', cfg.window.outerHeight);
    replaceGetter(G, 'screenX', cfg.window.screenX);
    replaceGetter(G, 'screenLeft', cfg.window.screenX);
    replaceGetter(G, 'screenY', cfg.window.screenY);
    replaceGetter(G, 'screenTop', cfg.window.screenY);
  }

  // --- blob: workers ------------------------------------------------------------------------------
  // A worker from a URL gets this script prepended to its own (stealth/workers.py); a blob: worker's
  // script is in the page's memory, where no request can be rewritten and the CDP way can lose the
  // race. So a JavaScript blob gets this script in front when a URL is made for it.
  if (G.URL && G.Blob && typeof G.URL.createObjectURL === 'function') {
    var BlobCtor = G.Blob;
    var blobType = getOwnPropertyDescriptor(BlobCtor.prototype, 'type').get;
    var selfSource = '(' + apply(nativeToString, bqIdentity, []) + ')();\n';
    var scriptType = /^(text|application)\/(x-)?(java|ecma)script\b/i;
    var test = RegExp.prototype.test;
    replaceMethod(G.URL, 'createObjectURL', function (original) {
      var replacement = {
        createObjectURL(object) {
          var target = object;
          try {
            var type = apply(blobType, object, []);  // throws for anything but a Blob
            if (apply(test, scriptType, [type])) target = new BlobCtor([selfSource, object], { type: type });
          } catch (e) { target = object; }
          var args = target === object ? arguments : [target];  // untouched: the native's own errors
          try { return apply(original, this, args); } catch (e) { rethrow(e, replacement); }
        },
      }.createObjectURL;
      return replacement;
    });
  }

  // --- Function.prototype.toString, last: everything above is registered ----------------------
  if (patchedAnything) {
    var toStringReplacement = {
      toString() {
        if (typeof this === 'function') {
          var source = apply(wmGet, registry, [this]);
          if (source !== undefined) return source;
        } else if (this === KEY) {
          return registry;  // a child frame asking for the frame tree's registry
        }
        try { return apply(nativeToString, this, arguments); } catch (e) { rethrowFromBuiltin(e, toStringReplacement); }
      },
    }.toString;
    var tsDesc = getOwnPropertyDescriptor(Function.prototype, 'toString');
    defineProperty(Function.prototype, 'toString', {
      value: toStringReplacement, writable: tsDesc.writable, enumerable: tsDesc.enumerable,
      configurable: tsDesc.configurable,
    });
    markNative(toStringReplacement, 'toString');
  }
})();
