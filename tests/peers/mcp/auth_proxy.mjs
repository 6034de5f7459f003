// The conformance suite cannot send credentials, and the mount authenticates every
// request first. This loopback proxy forwards to the host unchanged (streaming both
// ways, so a client disconnect still reaches the host) and adds the Bearer key.
// Usage: node auth_proxy.mjs LISTEN_PORT TARGET_BASE_URL   (key from OPENWOP_API_KEY)
import http from 'node:http';

const [port, target] = process.argv.slice(2);
const key = process.env.OPENWOP_API_KEY;
if (!port || !target || !key) {
  console.error('usage: OPENWOP_API_KEY=... node auth_proxy.mjs PORT TARGET_BASE_URL');
  process.exit(2);
}
const upstream = new URL(target);

http
  .createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${key}`, host: upstream.host };
    const out = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    // A client that goes away takes the upstream request with it.
    res.on('close', () => out.destroy());
    req.pipe(out);
  })
  .listen(Number(port), '127.0.0.1', () => console.log(`auth proxy on 127.0.0.1:${port} -> ${target}`));
