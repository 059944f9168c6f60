/**
 * GET /v1/sys/snapshots — the scheduled snapshots (root and auditor, as the keyring's status): the schedule
 * and the snapshots its directory holds, newest first (operator/scheduled-snapshots.ts takes them; the
 * supervisor runs it). Names and sizes only: a snapshot's content is never read here.
 */

import type { Operation } from '../../api/operation.js';
import type { Responder } from '../../api/respond.js';
import { type ApiSnapshotList, ok, snapshotList } from '../../api/response-schemas.js';
import { intervalOf, listSnapshots } from '../scheduled-snapshots.js';

export interface SnapshotSchedule {
  readonly dir: string;
  readonly every: string;
  readonly everyMs: number;
  readonly keep: number;
}

export interface SnapshotRouteDeps {
  /** null: no scheduled snapshots. */
  readonly schedule: SnapshotSchedule | null;
  readonly now: () => number;
  readonly respond: Responder;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function snapshotOperations({ schedule, now, respond }: SnapshotRouteDeps): Operation[] {
  const list: Operation = {
    method: 'GET',
    template: '/v1/sys/snapshots',
    action: 'snapshots.list',
    privilege: 'read_keyring',
    docs: [
      {
        operationId: 'listSnapshots',
        summary:
          'The scheduled snapshots (root and auditor): the schedule, when the next is due, and each snapshot its directory holds (name, the state it holds, when written, size), newest first',
        responses: { 200: ok('The schedule and the snapshots', snapshotList) },
      },
    ],
    async handler(_req, res) {
      const body: ApiSnapshotList =
        schedule === null
          ? { scheduled: false, every: null, keep: null, next_at: null, snapshots: [] }
          : {
              scheduled: true,
              every: schedule.every,
              keep: schedule.keep,
              next_at: iso(intervalOf(now(), schedule.everyMs) + schedule.everyMs),
              snapshots: (await listSnapshots(schedule.dir)).map((s) => ({
                name: s.name,
                taken_at: iso(s.takenAt),
                written_at: iso(s.writtenAt),
                bytes: s.bytes,
              })),
            };
      respond.json(res, 200, body);
    },
  };
  return [list];
}
