/** `coffer --version --remote`: the version of the server COFFER_ADDR names (GET /v1/sys/version). */
import { connect, explain } from './session.js';

export async function serverVersion(env: NodeJS.ProcessEnv = process.env) {
  const coffer = connect(env);
  try {
    return await coffer.serverVersion();
  } catch (err) {
    throw explain(err, coffer, "the server's version");
  }
}
