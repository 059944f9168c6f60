import { expect } from 'chai';
import { COLLECTOR_FLAGS, workerExecArgv } from '../../src/server/collector-flags.js';

describe("the workers' collector flags", () => {
  it('adds each flag the supervisor was not started with', () => {
    expect(workerExecArgv(['--enable-source-maps'], '')).to.deep.equal([
      '--enable-source-maps',
      ...COLLECTOR_FLAGS,
    ]);
  });

  it("leaves a flag the operator set on node's command line as set, whatever its value", () => {
    const argv = workerExecArgv(['--max-semi-space-size=8'], '');
    expect(argv.filter((flag) => flag.startsWith('--max-semi-space-size'))).to.deep.equal([
      '--max-semi-space-size=8',
    ]);
    expect(argv).to.include('--no-allocation-site-pretenuring');
  });

  it('leaves a flag the operator set in NODE_OPTIONS, spelt with underscores, to NODE_OPTIONS', () => {
    const argv = workerExecArgv([], '--max-old-space-size=512  --max_semi_space_size=64');
    expect(argv.some((flag) => flag.startsWith('--max-semi-space-size'))).to.equal(false);
    expect(argv).to.deep.equal(['--no-allocation-site-pretenuring']);
  });
});
