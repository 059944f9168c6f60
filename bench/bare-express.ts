/** The baseline: a bare Express 5 route returning a small JSON body, nothing else. */
import express from 'express';

const app = express();
app.get('/v1/kv/bench/app/secret', (_req, res) => {
  res.json({
    namespace: 'bench/app',
    key: 'secret',
    version: 1,
    type: 'secret',
    value: 'p'.repeat(64),
    created_at: new Date(0).toISOString(),
  });
});
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object')
    console.log(`listening http://127.0.0.1:${address.port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
