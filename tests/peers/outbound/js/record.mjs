// What the JS peer servers keep about each request they got: the Authorization and
// traceparent headers and, for a JSON-RPC body (parsed by express.json() before this), its
// method, the trace context it carries (A2A message.metadata.openwop, MCP params._meta)
// and whether it names a `tenant`, as JSON lines in $OUTBOUND_RECORD_DIR/<name>.jsonl.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

export function recordHeaders(name) {
  const file = join(process.env.OUTBOUND_RECORD_DIR, `${name}.jsonl`);
  return (req, _res, next) => {
    // The driver's own look-ups (x-outbound-driver) are not requests from the host.
    if (req.headers['x-outbound-driver']) return next();
    const body = req.body && typeof req.body === 'object' ? req.body : {};
    const params = body.params ?? {};
    const line = {
      method: req.method,
      path: req.path,
      authorization: req.headers.authorization ?? null,
      traceparent: req.headers.traceparent ?? null,
      rpc: body.method ?? null,
      bodyTraceparent: params._meta?.traceparent ?? params.message?.metadata?.openwop?.traceparent ?? null,
      hasTenant: Object.hasOwn(params, 'tenant'),
    };
    appendFileSync(file, JSON.stringify(line) + '\n');
    next();
  };
}
