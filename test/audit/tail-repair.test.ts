import { appendFileSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { expect } from 'chai';
import { auditFiles, auditLines } from '../support/audit-lines.js';
import { startTestCoffer, tempDir } from '../support/harness.js';
import { runCoffer } from '../support/process.js';

describe('an audit file left ending in part of a line (a process killed while writing)', function () {
  this.timeout(60_000);

  it('is cut back to its last whole line at the next start, the cut is recorded, and verify passes', async () => {
    const dir = tempDir();
    const first = await startTestCoffer({ dataDir: dir, ownsDir: false });
    expect((await first.put('torn/k', 'v')).status).to.equal(201);
    await first.app.close();
    const [file] = auditFiles(first.config.audit.dir!);
    const torn = '{"chain":"x","seq":4,"ts":"2026-11-23T17:00:00.000Z","kind":"requ';
    appendFileSync(file!, torn);

    const again = await startTestCoffer({ dataDir: dir, rootToken: first.rootToken });
    let running = true;
    try {
      const text = readFileSync(file!, 'utf8');
      expect(text.endsWith('\n')).to.equal(true);
      expect(text).to.not.include(torn);
      const repaired = auditLines(again.config.audit.dir!).filter(
        (l) => l.event === 'audit.tail_repaired',
      );
      expect(repaired).to.have.length(1);
      expect(repaired[0]).to.include({ file: basename(file!), dropped_bytes: torn.length });
      await again.close();
      running = false;
      const verify = await runCoffer(['audit', 'verify'], {
        COFFER_DATA_DIR: again.config.data_dir,
        COFFER_MASTER_KEY_FILE: again.config.master_key_file,
      });
      expect(verify.code, verify.stdout + verify.stderr).to.equal(0);
      expect(verify.stdout).to.match(/^intact: /);
    } finally {
      if (running) await again.close();
    }
  });
});
