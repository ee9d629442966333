// A JSON-RPC 2.0 server over WebSocket built on the registry's `rpc-websockets` (installed by
// install.sh, TOOLWIRE_RPC_WEBSOCKETS), for the WebSocket transport's interop test.
//
//   node rpc_ws_server.cjs RPC_WEBSOCKETS_DIR PORT
//
// Listens on 127.0.0.1:PORT (path /), prints "listening PORT" on stdout once it does.
// Methods: echo(params) -> params; sum([a, b]) or sum({a, b}) -> a + b; slow({ms}) -> "slept"
// after ms milliseconds; fail() -> a JSON-RPC error.
const [dir, port] = process.argv.slice(2);
const { Server } = require(dir);
const server = new Server({ host: "127.0.0.1", port: Number(port) });
server.register("echo", (params) => params);
server.register("sum", (params) =>
  Array.isArray(params) ? params[0] + params[1] : params.a + params.b);
server.register("slow", (params) =>
  new Promise((resolve) => setTimeout(() => resolve("slept"), params.ms)));
server.register("fail", () => {
  throw new Error("refused on purpose");
});
server.on("listening", () => console.log(`listening ${port}`));
