import { resolve } from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { copyTarget, describeStore, StorageTargetError } from '../../src/store/store.js';

const lmdb = loadConfig({
  COFFER_DATA_DIR: '/srv/coffer/data',
  COFFER_PG_URL: 'postgres://coffer@db.internal:5432/coffer',
});
const postgres = loadConfig({
  COFFER_STORAGE: 'postgres',
  COFFER_DATA_DIR: '/srv/coffer/data',
  COFFER_PG_URL: 'postgres://coffer@db.internal:5432/coffer',
});

/** What `--to` is refused with, or null when it is taken. */
function refusal(to: string, config = lmdb): string | null {
  try {
    copyTarget(to, config);
    return null;
  } catch (err) {
    expect(err).to.be.instanceOf(StorageTargetError);
    return (err as Error).message;
  }
}

describe("a copy's destination, --to NAME[:WHERE] (each storage backend reads its own WHERE)", () => {
  it('lmdb:DIR: a data directory, made absolute; the backend says where the copy went', () => {
    const target = copyTarget('lmdb:elsewhere/data', lmdb);
    expect(target.storage).to.equal('lmdb');
    expect(target.data_dir).to.equal(resolve('elsewhere/data'));
    expect(describeStore(target)).to.equal(resolve('elsewhere/data'));
    expect(refusal('lmdb')).to.equal('--to lmdb:DIR names the data directory to copy into');
    expect(refusal('lmdb:')).to.equal('--to lmdb:DIR names the data directory to copy into');
  });

  it('postgres: the database the settings name, or postgres:URL another, never with a password in it', () => {
    const named = copyTarget('postgres', lmdb) as unknown as { pg_url?: string };
    expect(named.pg_url).to.equal('postgres://coffer@db.internal:5432/coffer');
    const other = copyTarget('postgres:postgres://coffer@db2.internal/coffer', lmdb);
    expect(other.storage).to.equal('postgres');
    expect((other as unknown as { pg_url?: string }).pg_url).to.equal(
      'postgres://coffer@db2.internal/coffer',
    );
    expect(describeStore(other)).to.equal('PostgreSQL');
    expect(refusal('postgres:postgres://coffer:hunter2@db2.internal/coffer')).to.match(
      /^--to postgres:URL must not hold a password/,
    );
    expect(refusal('postgres:postgres://coffer:hunter2@db2.internal/coffer')).not.to.include(
      'hunter2',
    );
  });

  it('refuses the store being copied, on either backend, and a name no backend has (listing the forms)', () => {
    expect(refusal('lmdb:/srv/coffer/data')).to.equal('--to names the store being copied');
    expect(refusal('lmdb:/srv/coffer/../coffer/data')).to.equal(
      '--to names the store being copied',
    );
    expect(refusal('postgres', postgres)).to.equal('--to names the store being copied');
    expect(refusal('postgres:postgres://coffer@db2.internal/coffer', postgres)).to.equal(null);
    expect(refusal('lmdb:/srv/coffer/data', postgres)).to.equal(null);
    expect(refusal('mysql:db')).to.equal('--to must be lmdb:DIR or postgres[:URL]');
  });
});
