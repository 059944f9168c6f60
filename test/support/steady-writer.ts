/**
 * Writes one key again and again, each write after the last one's answer, until stopped or until the server
 * stops answering (a kill): what the crash tests count as acknowledged.
 */
import { send } from './http-client.js';

export interface SteadyWriter {
  /** The version of the last write answered 200 or 201. */
  readonly acknowledged: () => number;
  /** Stops writing; resolves once the write in flight has its answer (or its failure). */
  readonly stop: () => Promise<void>;
}

export function steadyWriter(url: string, token: string, path: string): SteadyWriter {
  let acknowledged = 0;
  let writing = true;
  const done = (async () => {
    for (let v = 1; writing; v++) {
      const res = await send(url, 'PUT', path, token, { value: `v${v}`, type: 'secret' }).catch(
        () => undefined,
      );
      if (!res) return;
      if (res.status === 200 || res.status === 201) acknowledged = res.body.version;
    }
  })();
  return {
    acknowledged: () => acknowledged,
    stop: async () => {
      writing = false;
      await done;
    },
  };
}
