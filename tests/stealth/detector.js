// Offline headless/automation detector: the checks of infosimples/detect-headless, Intoli's
// "headless chrome test", rebrowser-bot-detector and CreepJS-style worker/iframe comparisons,
// rewritten for a page served on 127.0.0.1. It collects raw facts and POSTs them to /report;
// tests/stealth/detector.py turns them into {check_name: passed}.
//
// Everything runs from the page's own scripts (never through page.evaluate), so the stacks it
// records are the page's. bqProbe comes from probe.js, loaded first.

// --- page-only facts --------------------------------------------------------------------------
const BQ_NATIVE_RE = (name) => new RegExp('^function ' + name.replace(/[$]/g, '\\$') + '\\(\\) \\{\\s*\\[native code\\]\\s*\\}$');

function bqFunctionTargets(win) {
  const t = [];
  const method = (label, holder, key) => {
    const d = holder && Object.getOwnPropertyDescriptor(holder, key);
    if (d && typeof d.value === 'function') t.push({label, fn: d.value, name: key, desc: d, kind: 'method'});
  };
  const getter = (label, holder, key) => {
    const d = holder && Object.getOwnPropertyDescriptor(holder, key);
    if (d && typeof d.get === 'function') t.push({label, fn: d.get, name: 'get ' + key, desc: d, kind: 'getter'});
  };
  method('WebGLRenderingContext.prototype.getParameter', win.WebGLRenderingContext && win.WebGLRenderingContext.prototype, 'getParameter');
  method('WebGL2RenderingContext.prototype.getParameter', win.WebGL2RenderingContext && win.WebGL2RenderingContext.prototype, 'getParameter');
  method('NavigatorUAData.prototype.getHighEntropyValues', win.NavigatorUAData && win.NavigatorUAData.prototype, 'getHighEntropyValues');
  method('Function.prototype.toString', win.Function.prototype, 'toString');
  method('URL.createObjectURL', win.URL, 'createObjectURL');
  method('Permissions.prototype.query', win.Permissions && win.Permissions.prototype, 'query');
  method('HTMLCanvasElement.prototype.toDataURL', win.HTMLCanvasElement.prototype, 'toDataURL');
  method('Date.prototype.getTimezoneOffset', win.Date.prototype, 'getTimezoneOffset');
  for (const k of ['webdriver', 'userAgent', 'platform', 'languages', 'hardwareConcurrency', 'deviceMemory', 'plugins', 'mimeTypes'])
    getter('Navigator.prototype.' + k, win.Navigator.prototype, k);
  for (const k of ['width', 'height', 'availWidth', 'availHeight', 'availLeft', 'availTop', 'colorDepth'])
    getter('Screen.prototype.' + k, win.Screen.prototype, k);
  for (const k of ['outerWidth', 'outerHeight', 'screenX', 'screenY', 'screenLeft', 'screenTop', 'devicePixelRatio'])
    getter('window.' + k, win, k);
  getter('Notification.permission', win.Notification, 'permission');
  return t;
}

function bqInjectedFrames(stack) {
  // Frames of scripts without a URL (eval'd or injected: "<anonymous>:12:34") or of
  // automation helpers; a native function's error has none of them.
  return String(stack || '').split('\n').slice(1).filter(l => /<anonymous>:\d+:\d+|UtilityScript|__puppeteer|pptr:|__playwright/.test(l));
}

function bqCheckFunctions(win, otherRealm) {
  const results = [];
  const otherToString = otherRealm.Function.prototype.toString;
  for (const t of bqFunctionTargets(win)) {
    const r = {label: t.label, problems: []};
    const fn = t.fn;
    let src;
    try { src = win.Function.prototype.toString.call(fn); } catch (e) { src = 'THREW ' + e; }
    if (!BQ_NATIVE_RE(t.name).test(src)) r.problems.push('toString: ' + src.slice(0, 80));
    let otherSrc;
    try { otherSrc = otherToString.call(fn); } catch (e) { otherSrc = 'THREW ' + e; }
    if (!BQ_NATIVE_RE(t.name).test(otherSrc)) r.problems.push('cross-realm toString: ' + otherSrc.slice(0, 80));
    if (fn.name !== t.name) r.problems.push('name: ' + fn.name);
    const own = Object.getOwnPropertyNames(fn).sort().join(',');
    if (own !== 'length,name') r.problems.push('own properties: ' + own);
    if ('prototype' in fn) r.problems.push('has prototype');
    let constructible = true;
    try { Reflect.construct(String, [], fn); } catch (e) { constructible = false; }
    if (constructible) r.problems.push('constructible');
    // Built-ins are strict: reading .caller throws (a sloppy replacement would answer null).
    let callerThrows = false;
    try { void fn.caller; } catch (e) { callerThrows = e instanceof win.TypeError; }
    if (!callerThrows) r.problems.push('.caller does not throw');
    if (t.kind === 'method' && !t.desc.writable) r.problems.push('descriptor not writable');
    if (t.kind === 'getter' && !t.desc.configurable) r.problems.push('descriptor not configurable');
    // Wrong receiver: a native throws a TypeError whose stack holds only the caller's frames.
    if (t.label !== 'Permissions.prototype.query') {
      try {
        Reflect.apply(fn, {}, []);
      } catch (e) {
        if (!(e instanceof win.TypeError)) r.problems.push('wrong-receiver error is not a TypeError of its realm');
        const extra = bqInjectedFrames(e.stack);
        if (extra.length) r.problems.push('stack frames: ' + extra.join(' | '));
      }
    }
    results.push(r);
  }
  // toString of toString, the classic double check.
  const ts = win.Function.prototype.toString;
  const double = [ts.toString(), ts.call(ts), ts.toString.toString(), otherToString.call(ts)];
  for (const s of double) if (!BQ_NATIVE_RE('toString').test(s)) results.push({label: 'toString of toString', problems: [s.slice(0, 80)]});
  return results;
}

function bqWebdriverFacts() {
  const d = Object.getOwnPropertyDescriptor(Navigator.prototype, 'webdriver');
  return {
    value: navigator.webdriver, type: typeof navigator.webdriver,
    ownNames: Object.getOwnPropertyNames(navigator), ownDescriptor: Object.getOwnPropertyDescriptor(navigator, 'webdriver') !== undefined,
    onPrototype: !!(d && typeof d.get === 'function'),
    getterSource: d && d.get ? Function.prototype.toString.call(d.get) : null,
  };
}

function bqChromeFacts() {
  const c = window.chrome;
  return {
    present: typeof c === 'object' && c !== null,
    loadTimes: !!c && typeof c.loadTimes === 'function',
    csi: !!c && typeof c.csi === 'function',
    app: !!c && typeof c.app === 'object' && c.app !== null,
    keys: c ? Object.keys(c) : [],
  };
}

function bqPluginFacts() {
  const names = Array.from(navigator.plugins).map(p => p.name);
  return {
    plugins: navigator.plugins.length, mimeTypes: navigator.mimeTypes.length, names,
    pluginArrayTag: Object.prototype.toString.call(navigator.plugins),
    firstIsPlugin: navigator.plugins.length > 0 && navigator.plugins[0] instanceof Plugin,
    pdfViewerEnabled: navigator.pdfViewerEnabled,
  };
}

function bqGeometry() {
  document.documentElement.style.overflowY = 'scroll';
  const scrollbar = window.innerWidth - document.documentElement.clientWidth;
  document.documentElement.style.overflowY = '';
  return {
    screen: [screen.width, screen.height], avail: [screen.availLeft, screen.availTop, screen.availWidth, screen.availHeight],
    colorDepth: screen.colorDepth, outer: [outerWidth, outerHeight], inner: [innerWidth, innerHeight],
    position: [screenX, screenY, screenLeft, screenTop], dpr: devicePixelRatio, scrollbar,
    deviceWidthMatches: matchMedia('(device-width: ' + screen.width + 'px)').matches,
  };
}

function bqDevtoolsConsoleChecks() {
  // rebrowser / DataDome: an Error whose `stack` getter only runs when DevTools' Runtime domain
  // serializes console arguments (no longer fires on Chromium 156).
  let errorStackReads = 0;
  const err = new Error('bq');
  Object.defineProperty(err, 'stack', {configurable: false, enumerable: false, get() { errorStackReads += 1; return ''; }});
  console.debug(err);
  // The same leak through V8's stack formatting: with Runtime enabled, logging a fresh Error makes
  // the inspector format its stack, which calls Error.prepareStackTrace. Without a DevTools
  // client nothing formats it (measured: 0 with no CDP client, 1 under Playwright).
  let prepareStackTraceCalls = 0;
  const previous = Error.prepareStackTrace;
  Error.prepareStackTrace = (error, frames) => { prepareStackTraceCalls += 1; return 'bq'; };
  console.debug(new Error('bq'));
  Error.prepareStackTrace = previous;
  // infosimples: a RegExp whose toString counts how often it is rendered.
  let regexToString = 0;
  const re = /./;
  re.toString = function () { regexToString += 1; return 'bq'; };
  console.debug(re);
  return new Promise(resolve => setTimeout(() => resolve({errorStackReads, prepareStackTraceCalls, regexToString}), 150));
}

function bqAutomationGlobals() {
  const re = /^(__pw|__playwright|playwright|cdc_|\$cdc_|\$wdc_|__webdriver|__selenium|__driver|__fxdriver|__nightmare|_phantom|callPhantom|domAutomation|__puppeteer|__lastWatirAlert)/i;
  return Object.getOwnPropertyNames(window).filter(k => re.test(k));
}

// Hooks for what automation does to the main world (rebrowser's mainWorldExecution / sourceUrlLeak).
for (const name of ['getElementById', 'querySelector', 'querySelectorAll', 'getElementsByClassName']) {
  const original = Document.prototype[name];
  Document.prototype[name] = function () {
    if (arguments[0] && /bq-trigger/.test(String(arguments[0]))) {
      navigator.sendBeacon('/hook', JSON.stringify({name, stack: new Error('bq').stack}));
    }
    return original.apply(this, arguments);
  };
}

function bqWaitMessage(tag, ms) {
  return new Promise(resolve => {
    const timer = setTimeout(() => resolve({timeout: tag}), ms);
    window.addEventListener('message', function on(e) {
      if (e.data && e.data.tag === tag) { clearTimeout(timer); window.removeEventListener('message', on); resolve(e.data.probe); }
    });
  });
}

function bqFrame(src, attrs) {
  const f = document.createElement('iframe');
  if (src !== null) f.src = src;
  Object.assign(f, attrs || {});
  f.style.width = '10px'; f.style.height = '10px';
  document.body.appendChild(f);
  return f;
}

async function bqWorkerProbe(makeWorker, ms) {
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve({timeout: true}), ms);
      makeWorker(data => { clearTimeout(timer); resolve(data); }, reject);
    });
  } catch (e) { return {error: String(e)}; }
}

async function bqRun() {
  const report = {};
  report.page = await bqProbe(window);
  report.webdriver = bqWebdriverFacts();
  report.chrome = bqChromeFacts();
  report.plugins = bqPluginFacts();
  report.geometry = bqGeometry();
  report.connectionRtt = navigator.connection ? navigator.connection.rtt : null;
  report.timezoneOffset = new Date().getTimezoneOffset();
  try {
    report.permissions = {notification: Notification.permission, query: (await navigator.permissions.query({name: 'notifications'})).state};
  } catch (e) { report.permissions = {error: String(e)}; }
  report.globals = bqAutomationGlobals();

  // Iframes: same-origin document, srcdoc, a bare about:blank created by script, and cross-site.
  const sameOrigin = bqFrame('/frame?tag=same');
  const sameProbe = bqWaitMessage('same', 5000);
  const srcdoc = bqFrame(null, {srcdoc: '<!doctype html><p>srcdoc</p>'});
  await new Promise(r => { srcdoc.onload = r; setTimeout(r, 3000); });
  const blank = bqFrame(null);
  report.iframes = {
    same: await sameProbe,
    srcdoc: await bqProbe(srcdoc.contentWindow),
    blank: await bqProbe(blank.contentWindow),
  };
  report.functions = bqCheckFunctions(window, blank.contentWindow);
  report.functionsInIframe = bqCheckFunctions(srcdoc.contentWindow, window);
  report.iframeWebdriver = {value: srcdoc.contentWindow.navigator.webdriver, own: Object.getOwnPropertyNames(srcdoc.contentWindow.navigator)};
  report.iframeGeometry = {avail: [srcdoc.contentWindow.screen.availWidth, srcdoc.contentWindow.screen.availHeight],
    outer: [srcdoc.contentWindow.outerWidth, srcdoc.contentWindow.outerHeight]};
  const crossSite = bqFrame(window.BQ_CROSS_ORIGIN + '/frame?tag=cross');
  report.crossSite = await bqWaitMessage('cross', 8000);

  // Workers: dedicated (URL and blob), shared, service.
  const probeSource = bqProbe.toString() + '\n' + bqTamperedHere.toString();
  report.workers = {};
  report.workers.dedicated = await bqWorkerProbe((ok, fail) => {
    const w = new Worker('/worker.js'); w.onmessage = e => ok(e.data); w.onerror = e => fail(e.message || 'worker error');
  }, 8000);
  report.workers.blob = await bqWorkerProbe((ok, fail) => {
    const url = URL.createObjectURL(new Blob([probeSource + '\nbqProbe(self).then(r => postMessage(r));'], {type: 'text/javascript'}));
    const w = new Worker(url); w.onmessage = e => ok(e.data); w.onerror = e => fail(e.message || 'worker error');
  }, 8000);
  report.workers.shared = await bqWorkerProbe((ok, fail) => {
    const w = new SharedWorker('/shared.js'); w.port.onmessage = e => ok(e.data); w.onerror = e => fail('shared worker error');
  }, 8000);
  report.workers.service = await bqWorkerProbe(async (ok, fail) => {
    try {
      const reg = await navigator.serviceWorker.register('/sw.js');
      await navigator.serviceWorker.ready;
      const active = reg.active || reg.waiting || reg.installing;
      const channel = new MessageChannel();
      channel.port1.onmessage = e => ok(e.data);
      active.postMessage('probe', [channel.port2]);
    } catch (e) { fail(e); }
  }, 10000);

  report.devtools = await bqDevtoolsConsoleChecks();
  await fetch('/report', {method: 'POST', body: JSON.stringify(report), headers: {'Content-Type': 'application/json'}});
  document.title = 'bq-done';
}

window.addEventListener('load', () => { bqRun().catch(e => fetch('/report', {method: 'POST', body: JSON.stringify({fatal: String(e && e.stack || e)})})); });
