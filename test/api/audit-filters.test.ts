import { expect } from 'chai';
import { SEARCH_OPTIONS } from '../../src/cli/audit-remote.js';
import { apiDocument } from '../../src/features.js';
import {
  AUDIT_FILTER_NAMES,
  AUDIT_FILTERS,
  auditFilterOption,
} from '../../src/model/audit-filters.js';

interface Parameter {
  readonly name: string;
  readonly in: string;
  readonly description?: string;
  readonly schema: { readonly type: string; readonly format?: string };
}

describe("the audit search's filters, declared once (model/audit-filters.ts)", () => {
  it('are the query parameters GET /v1/sys/audit documents, each with its description, the times as date-time', () => {
    const doc = apiDocument(86_400) as {
      paths: Record<string, { get: { operationId: string; parameters: Parameter[] } }>;
    };
    const search = doc.paths['/v1/sys/audit']!.get;
    expect(search.operationId).to.equal('searchAuditLog');
    const documented = search.parameters.filter((p) => p.in === 'query');
    expect(documented.map((p) => p.name)).to.deep.equal([
      ...AUDIT_FILTER_NAMES,
      'limit',
      'cursor',
      'order',
    ]);
    for (const name of AUDIT_FILTER_NAMES) {
      const p = documented.find((q) => q.name === name)!;
      expect(p.description, name).to.equal(AUDIT_FILTERS[name].description);
      expect(p.schema.format, name).to.equal(
        'time' in AUDIT_FILTERS[name] ? 'date-time' : undefined,
      );
    }
  });

  it("are coffer audit search's options, named with - for _", () => {
    for (const name of AUDIT_FILTER_NAMES)
      expect(SEARCH_OPTIONS, name).to.have.property(auditFilterOption(name));
    expect(auditFilterOption('login_role')).to.equal('login-role');
    expect(Object.keys(SEARCH_OPTIONS)).to.have.length(AUDIT_FILTER_NAMES.length + 2);
  });
});
