// Preload (`node --require tests/peers/loopback.cjs ...`) that keeps a server on loopback:
// a listen() on a port with no host, or with a wildcard host (0.0.0.0, ::), binds 127.0.0.1.
// Used by tests/mcp/interop_http.rs for server-everything, which otherwise binds every
// interface.
"use strict";
const net = require("net");

const WILDCARDS = new Set([undefined, null, "", "0.0.0.0", "::", "::0"]);
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first !== null && typeof first === "object" && !Array.isArray(first)) {
    // listen(options[, callback]); a `path` (IPC) or a handle is left alone.
    if (first.path === undefined && first.handle === undefined && first._handle === undefined
        && first.fd === undefined && WILDCARDS.has(first.host)) {
      args[0] = { ...first, host: "127.0.0.1" };
    }
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] === "string") {
      if (WILDCARDS.has(args[1])) args[1] = "127.0.0.1";
    } else {
      args.splice(1, 0, "127.0.0.1");
    }
  } else if (first === undefined || typeof first === "function") {
    // listen([callback]): a random port on every interface.
    args.unshift(0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
