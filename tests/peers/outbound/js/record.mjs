// What the JS peer servers keep about each request they got: the Authorization and
// traceparent headers, as JSON lines in $OUTBOUND_RECORD_DIR/<name>.jsonl, for the driver.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

export function recordHeaders(name) {
  const file = join(process.env.OUTBOUND_RECORD_DIR, `${name}.jsonl`);
  return (req, _res, next) => {
    const line = {
      method: req.method,
      path: req.path,
      authorization: req.headers.authorization ?? null,
      traceparent: req.headers.traceparent ?? null,
    };
    appendFileSync(file, JSON.stringify(line) + '\n');
    next();
  };
}
