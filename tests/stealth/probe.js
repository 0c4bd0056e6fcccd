// The probe shared by the detector page, its iframes and its workers (tests/stealth/detector.py).
async function bqProbe(scope) {
  const n = scope.navigator;
  const out = {
    ua: n.userAgent, appVersion: n.appVersion, platform: n.platform, language: n.language,
    languages: Array.from(n.languages || []), hardwareConcurrency: n.hardwareConcurrency,
    deviceMemory: n.deviceMemory === undefined ? null : n.deviceMemory,
    webdriver: n.webdriver === undefined ? 'undefined' : n.webdriver,
  };
  try {
    const o = new scope.Intl.DateTimeFormat().resolvedOptions();
    out.timezone = o.timeZone; out.locale = o.locale;
  } catch (e) { out.intlError = String(e); }
  try {
    const d = n.userAgentData;
    if (d) {
      out.uaData = {brands: d.brands.map(b => ({brand: b.brand, version: b.version})), mobile: d.mobile, platform: d.platform};
      out.highEntropy = await d.getHighEntropyValues(['architecture', 'bitness', 'fullVersionList', 'model',
        'platformVersion', 'uaFullVersion', 'wow64', 'formFactors']);
    }
  } catch (e) { out.uaDataError = String(e); }
  try {
    let gl = null;
    if (scope.document) gl = scope.document.createElement('canvas').getContext('webgl');
    else if (scope.OffscreenCanvas) gl = new scope.OffscreenCanvas(16, 16).getContext('webgl');
    if (gl) {
      const ext = gl.getExtension('WEBGL_debug_renderer_info');
      out.webgl = {vendor: gl.getParameter(gl.VENDOR), renderer: gl.getParameter(gl.RENDERER),
        unmaskedVendor: ext ? gl.getParameter(ext.UNMASKED_VENDOR_WEBGL) : null,
        unmaskedRenderer: ext ? gl.getParameter(ext.UNMASKED_RENDERER_WEBGL) : null};
    } else {
      out.webgl = null;
    }
  } catch (e) { out.webglError = String(e); }
  out.tampered = bqTamperedHere(scope);
  return out;
}

// The functions a stealth layer would replace in this scope (page, frame or worker), checked the
// way a detector checks them from inside a worker: native toString, no prototype, not constructible.
function bqTamperedHere(scope) {
  const bad = [];
  const look = (label, fn, name) => {
    if (typeof fn !== 'function') return;
    let src;
    try { src = scope.Function.prototype.toString.call(fn); } catch (e) { src = 'THREW ' + e; }
    if (src !== 'function ' + name + '() { [native code] }') bad.push(label + ' toString: ' + src.slice(0, 60));
    if ('prototype' in fn) bad.push(label + ' has prototype');
    if (fn.name !== name) bad.push(label + ' name: ' + fn.name);
  };
  const method = (label, proto, key) => {
    const d = proto && Object.getOwnPropertyDescriptor(proto, key);
    if (d) look(label, d.value, key);
  };
  const getter = (label, proto, key) => {
    const d = proto && Object.getOwnPropertyDescriptor(proto, key);
    if (d) look(label, d.get, 'get ' + key);
  };
  method('WebGLRenderingContext.getParameter', scope.WebGLRenderingContext && scope.WebGLRenderingContext.prototype, 'getParameter');
  method('WebGL2RenderingContext.getParameter', scope.WebGL2RenderingContext && scope.WebGL2RenderingContext.prototype, 'getParameter');
  method('NavigatorUAData.getHighEntropyValues', scope.NavigatorUAData && scope.NavigatorUAData.prototype, 'getHighEntropyValues');
  method('Function.prototype.toString', scope.Function.prototype, 'toString');
  const nav = scope.Navigator || scope.WorkerNavigator;
  for (const k of ['platform', 'hardwareConcurrency', 'deviceMemory', 'userAgent']) getter('navigator.' + k, nav && nav.prototype, k);
  return bad;
}
