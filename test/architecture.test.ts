import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

/** The TypeScript sources, read from the checkout (dist/test/.. /.. /src). */
const SRC = fileURLToPath(new URL('../../src', import.meta.url));

/** A module's unit: its folder under src/, or for a file directly in src/ the file itself (app, main, errors). */
function unitOf(path: string): string {
  const parts = relative(SRC, path).split('/');
  return parts.length === 1 ? parts[0]!.replace(/\.[jt]s$/, '') : parts[0]!;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

/** unit → unit → the files that make the dependency. */
function dependencies(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of sources(SRC)) {
    const from = unitOf(file);
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(
      /(?:from|import\()\s*'(\.[^']+)'/g,
    )) {
      const to = unitOf(normalize(join(dirname(file), spec!)));
      if (to === from) continue;
      const edges = graph.get(from) ?? new Map<string, string[]>();
      edges.set(to, [...(edges.get(to) ?? []), relative(SRC, file)]);
      graph.set(from, edges);
    }
  }
  return graph;
}

/** The groups of units that depend on each other in a circle (strongly connected components of two or more; Tarjan). */
function cycles(graph: Map<string, Map<string, string[]>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const groups: string[][] = [];
  const visit = (unit: string): void => {
    index.set(unit, index.size);
    low.set(unit, index.get(unit)!);
    stack.push(unit);
    for (const next of graph.get(unit)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(unit, Math.min(low.get(unit)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(unit, Math.min(low.get(unit)!, index.get(next)!));
    }
    if (low.get(unit) === index.get(unit)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        group.push(member);
      } while (member !== unit);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const unit of graph.keys()) if (!index.has(unit)) visit(unit);
  return groups;
}

describe('the architecture', () => {
  it('has folder dependencies that point one way: no cycle between the folders of src/ (docs/architecture.md)', () => {
    const graph = dependencies();
    // Each group with the imports that tie it together, for the message.
    const described = cycles(graph).map((group) =>
      group
        .flatMap((from) =>
          group
            .filter((to) => graph.get(from)?.has(to))
            .map((to) => `${from} → ${to} (${graph.get(from)!.get(to)!.slice(0, 2).join(', ')})`),
        )
        .join('; '),
    );
    expect(described).to.deep.equal([]);
  });

  it('finds a cycle when there is one (the check itself)', () => {
    const graph = new Map([
      ['a', new Map([['b', ['a/x.ts']]])],
      ['b', new Map([['c', ['b/y.ts']]])],
      ['c', new Map([['a', ['c/z.ts']]])],
    ]);
    expect(cycles(graph)).to.deep.equal([['a', 'b', 'c']]);
    graph.get('c')!.delete('a');
    expect(cycles(graph)).to.deep.equal([]);
  });

  it('records operator events inside the services that perform them: no route handler imports OperatorEvents', () => {
    const handlers = sources(join(SRC, 'http'));
    const recording = handlers.filter((file) =>
      /audit\/events\.js'|\bevents\.record\(/.test(readFileSync(file, 'utf8')),
    );
    expect(recording.map((file) => relative(SRC, file))).to.deep.equal([]);
  });

  it('keeps the storage backend out of the HTTP layer: routes reach storage only through services', () => {
    const handlers = sources(join(SRC, 'http'));
    const holding = handlers.filter((file) =>
      /\bStorageBackend\b/.test(readFileSync(file, 'utf8')),
    );
    expect(holding.map((file) => relative(SRC, file))).to.deep.equal([]);
  });

  it('declares each operation once: no route checks a privilege or reads its query by hand, and no list of actions or paths is kept beside the operations', () => {
    const routes = sources(join(SRC, 'http', 'routes'));
    const byHand = routes.filter((file) =>
      /\brequirePrivilege\(|\bqueryOf\(|\bprivileges\.has\(/.test(readFileSync(file, 'utf8')),
    );
    expect(byHand.map((file) => relative(SRC, file))).to.deep.equal([]);
    // The audit entry and the OpenAPI document take actions and paths from the operations.
    for (const name of ['request-audit.ts', 'openapi.ts']) {
      const text = readFileSync(join(SRC, 'http', name), 'utf8');
      expect(text, name).to.not.match(/'\/v1\/(kv|auth|sys)/);
    }
  });
});
