// browserq allowed_domains, page side: what CDP's Fetch never sees, stopped in every frame.
// Installed by BrowserContext.add_init_script (browsers/egress.py) in contexts with
// allowed_domains. __BROWSERQ_EGRESS__ is replaced with {allowed: [domains], strict: bool}.
//
// Always (open and strict):
// * <script type="speculationrules"> is taken out of the document as soon as it is inserted
//   (parser or script), before Blink hands its candidates to the browser: Chromium fetches
//   cross-site prefetches and prerenders in an isolated network context that Fetch never sees.
// Strict mode only:
// * RTCPeerConnection: every configuration (constructor, setConfiguration) keeps only ICE servers
//   on allowed hosts and gets iceTransportPolicy "relay": no host or server-reflexive candidates
//   are gathered, so no STUN goes out and no connectivity check is sent to a remote candidate;
//   the browser talks to an allowed TURN server or to nobody. Offers, answers, codecs and data
//   channel objects are untouched.
// * WebTransport and WebSocketStream (and, in workers, WebSocket) to a host outside
//   allowed_domains throw NotAllowedError before any packet. browsers/egress.py runs this file
//   in every worker of a strict context too, before the worker's own script.
// Replaced functions keep their name, length and a native-looking toString.
(function bqEgress() {
  'use strict';
  var cfg = __BROWSERQ_EGRESS__;
  var allowed = cfg.allowed;
  var G = globalThis;
  var apply = Reflect.apply;
  var construct = Reflect.construct;
  var defineProperty = Object.defineProperty;
  var getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  var nativeToString = Function.prototype.toString;
  var URLCtor = G.URL;
  var replaced = new WeakMap();

  function hostAllowed(host) {
    host = String(host).toLowerCase().replace(/\.$/, '').replace(/^\[|\]$/g, '');
    for (var i = 0; i < allowed.length; i++) {
      var d = allowed[i];
      if (host === d || host.slice(-(d.length + 1)) === '.' + d) return true;
    }
    return false;
  }

  function iceHost(url) {
    // stun:host[:port], turn:host[:port][?transport=…], turns:…; IPv6 in brackets.
    var rest = String(url).replace(/^[a-z]+:/i, '').replace(/^\/\//, '').split('?')[0];
    if (rest.charAt(0) === '[') return rest.slice(1, rest.indexOf(']'));
    return rest.split(':')[0];
  }

  function allowedServer(server) {
    if (!server || server.urls === undefined) return false;
    var urls = typeof server.urls === 'string' ? [server.urls] : Array.prototype.slice.call(server.urls);
    return urls.length > 0 && urls.every(function (u) { return hostAllowed(iceHost(u)); });
  }

  function confined(config) {
    var out = {};
    if (config !== undefined && config !== null && typeof config === 'object') {
      for (var key in config) out[key] = config[key];
    }
    var servers = out.iceServers ? Array.prototype.slice.call(out.iceServers) : [];
    out.iceServers = servers.filter(allowedServer);
    out.iceTransportPolicy = 'relay';
    return out;
  }

  // toString of a replaced function says what the native one said.
  var patchedToString = {
    toString: function toString() {
      var source = typeof this === 'function' ? replaced.get(this) : undefined;
      return source !== undefined ? source : apply(nativeToString, this, arguments);
    },
  }.toString;
  var sourceOf = function (fn) { return apply(nativeToString, fn, []); };

  function swapToString() {
    var desc = getOwnPropertyDescriptor(Function.prototype, 'toString');
    replaced.set(patchedToString, sourceOf(nativeToString));
    defineProperty(Function.prototype, 'toString', {
      value: patchedToString, writable: desc.writable, enumerable: desc.enumerable, configurable: desc.configurable,
    });
  }

  function wrapConstructor(name, makeArgs) {
    var Native = G[name];
    if (typeof Native !== 'function') return null;
    var Wrapper = function () {
      if (new.target === undefined) return apply(Native, this, arguments); // throws like the native one
      return construct(Native, makeArgs(arguments), new.target === Wrapper ? Native : new.target);
    };
    defineProperty(Wrapper, 'name', { value: Native.name });
    defineProperty(Wrapper, 'length', { value: Native.length });
    defineProperty(Wrapper, 'prototype', { value: Native.prototype, writable: false });
    Object.setPrototypeOf(Wrapper, Object.getPrototypeOf(Native));
    var protoDesc = getOwnPropertyDescriptor(Native.prototype, 'constructor');
    defineProperty(Native.prototype, 'constructor', {
      value: Wrapper, writable: protoDesc.writable, enumerable: protoDesc.enumerable, configurable: protoDesc.configurable,
    });
    replaced.set(Wrapper, sourceOf(Native));
    var desc = getOwnPropertyDescriptor(G, name);
    defineProperty(G, name, { value: Wrapper, writable: desc.writable, enumerable: desc.enumerable, configurable: desc.configurable });
    return { Native: Native, Wrapper: Wrapper };
  }

  // --- speculation rules: a microtask after insertion is before Blink's candidate update ------
  var RULES = 'script[type="speculationrules" i]';
  function dropRules(records) {
    for (var i = 0; i < records.length; i++) {
      var added = records[i].addedNodes;
      for (var j = 0; j < added.length; j++) {
        var node = added[j];
        if (node.nodeType !== 1) continue;
        if (node.matches(RULES)) node.remove();
        else node.querySelectorAll(RULES).forEach(function (s) { s.remove(); });
      }
    }
  }
  if (typeof G.MutationObserver === 'function' && G.document) {
    new G.MutationObserver(dropRules).observe(G.document, { childList: true, subtree: true });
  }
  if (!cfg.strict) return;

  var pc = wrapConstructor('RTCPeerConnection', function (args) {
    var list = Array.prototype.slice.call(args);
    list[0] = confined(list[0]);
    return list;
  });
  if (pc) {
    if (G.webkitRTCPeerConnection === pc.Native) {
      var wdesc = getOwnPropertyDescriptor(G, 'webkitRTCPeerConnection');
      defineProperty(G, 'webkitRTCPeerConnection', {
        value: pc.Wrapper, writable: wdesc.writable, enumerable: wdesc.enumerable, configurable: wdesc.configurable,
      });
    }
    var proto = pc.Native.prototype;
    var setDesc = getOwnPropertyDescriptor(proto, 'setConfiguration');
    if (setDesc && typeof setDesc.value === 'function') {
      var nativeSet = setDesc.value;
      var setConfiguration = {
        setConfiguration: function setConfiguration(config) {
          var list = Array.prototype.slice.call(arguments);
          if (list.length) list[0] = confined(list[0]);
          return apply(nativeSet, this, list);
        },
      }.setConfiguration;
      replaced.set(setConfiguration, sourceOf(nativeSet));
      defineProperty(proto, 'setConfiguration', {
        value: setConfiguration, writable: setDesc.writable, enumerable: setDesc.enumerable, configurable: setDesc.configurable,
      });
    }
  }

  function refuseForeign(args) {
    var list = Array.prototype.slice.call(args);
    var host = '';
    try { host = new URLCtor(String(list[0]), G.location && G.location.href).hostname; } catch (e) { host = ''; }
    if (host && !hostAllowed(host)) {
      throw new DOMException('blocked: host outside allowed_domains', 'NotAllowedError');
    }
    return list;
  }
  wrapConstructor('WebTransport', refuseForeign);
  wrapConstructor('WebSocketStream', refuseForeign);
  // In frames Playwright's route_web_socket holds WebSocket (and records the block); workers
  // have no such route.
  if (typeof G.document === 'undefined') wrapConstructor('WebSocket', refuseForeign);

  // --- workers: this file runs first in each one ------------------------------------------------
  // A worker from a URL gets it prepended by the browser's worker-script watch (egress.py). One
  // from a blob: or data: URL is built here: its source is read at once (a page may revoke the
  // blob URL right after), this file prepended, and the worker started from that; a data: URL
  // stays a data: URL, so its opaque origin does not change.
  var source = '(' + apply(nativeToString, bqEgress, []) + ')();\n';
  var XHR = G.XMLHttpRequest;
  var xhrOpen = XHR && XHR.prototype.open, xhrSend = XHR && XHR.prototype.send;
  var textOf = XHR && getOwnPropertyDescriptor(XHR.prototype, 'responseText').get;
  var createObjectURL = G.URL && G.URL.createObjectURL;
  var BlobCtor = G.Blob;
  function readNow(url) {
    var xhr = new XHR();
    apply(xhrOpen, xhr, ['GET', url, false]);
    apply(xhrSend, xhr, []);
    return apply(textOf, xhr, []);
  }
  function confinedWorkerArgs(args) {
    var list = Array.prototype.slice.call(args);
    var url = String(list[0]);
    var scheme = url.slice(0, 5).toLowerCase();
    if (scheme !== 'blob:' && scheme !== 'data:') return list;
    var text = source + readNow(url);
    list[0] = scheme === 'data:' ? 'data:text/javascript,' + encodeURIComponent(text)
      : apply(createObjectURL, G.URL, [new BlobCtor([text], { type: 'text/javascript' })]);
    return list;
  }
  if (XHR && textOf && createObjectURL) {
    wrapConstructor('Worker', confinedWorkerArgs);
    wrapConstructor('SharedWorker', confinedWorkerArgs);
  }

  swapToString();
})();
