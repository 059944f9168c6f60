import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { Request } from 'express';
import { type FieldIssue, invalid } from '../errors.js';
import type { Queries, QuerySchema, QueryValues } from './query-params.js';
import { queryError, queryOf } from './request-parts.js';

export type BodyValidator<T> = (body: unknown) => T;

function issueOf(error: ErrorObject): FieldIssue {
  if (error.keyword === 'additionalProperties') {
    const name = (error.params as { additionalProperty: string }).additionalProperty;
    return {
      field: `${error.instancePath}/${name}`,
      in: 'body',
      message: `unknown field "${name}"`,
    };
  }
  if (error.keyword === 'required') {
    const name = (error.params as { missingProperty: string }).missingProperty;
    return { field: `${error.instancePath}/${name}`, in: 'body', message: 'is required' };
  }
  if (error.keyword === 'enum') {
    // Name them: "must be equal to one of the allowed values" leaves the caller to guess which.
    const allowed = (error.params as { allowedValues: unknown[] }).allowedValues;
    return {
      field: error.instancePath,
      in: 'body',
      message: `must be one of: ${allowed.map((v) => JSON.stringify(v)).join(', ')}`,
    };
  }
  return { field: error.instancePath, in: 'body', message: error.message ?? 'is invalid' };
}

/** Reads a request's query as its operation declared it: typed values, or a 400 naming the parameter. */
export type QueryReader<Q extends Queries> = (req: Request) => QueryValues<Q>;

/** The text of an integer, a boolean or a string as the value its schema checks; undefined: not one. */
function typedValue(
  type: QuerySchema['type'],
  text: string,
): number | boolean | string | undefined {
  // Canonical decimals only: no sign, no leading zero, no exponent or fraction.
  if (type === 'integer') return /^(0|[1-9][0-9]{0,9})$/.test(text) ? Number(text) : undefined;
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : undefined;
  return text;
}

/** What a refused value is told, from its schema, when its declaration says nothing itself. */
function expected(schema: QuerySchema): string {
  if (schema.type === 'integer')
    return `must be an integer from ${schema.minimum ?? 0} to ${schema.maximum ?? 4_294_967_295}`;
  if (schema.type === 'boolean') return 'must be true or false';
  if (schema.enum) return `must be ${schema.enum.join(' or ')}`;
  if (schema.maxLength !== undefined) return `must be at most ${schema.maxLength} characters`;
  return `must match ${schema.pattern}`;
}

/** Compiles request-body and query validators; one Ajv instance per app. */
export class Validators {
  // date-time is documented and read by the handler that takes it (audit/query.ts), which says what is wrong.
  private readonly ajv = new Ajv({ allErrors: true, strict: true, formats: { 'date-time': true } });

  /**
   * The reader of an operation's declared query: unknown, repeated and malformed parameters are refused
   * (request-parts.ts queryOf), then each value is read as its schema's type and checked against it.
   */
  query<Q extends Queries>(declared: Q): QueryReader<Q> {
    const names = Object.keys(declared);
    const params = Object.entries(declared).map(([name, param]) => ({
      name,
      param,
      check: this.ajv.compile(param.schema),
    }));
    return (req) => {
      const given = queryOf(req, names);
      const values: Record<string, unknown> = {};
      for (const { name, param, check } of params) {
        const text = given[name];
        if (text === undefined) continue;
        const value = typedValue(param.schema.type, text);
        if (value === undefined || !check(value))
          throw queryError(name, param.invalid ?? expected(param.schema));
        values[name] = param.parse ? param.parse(text) : value;
      }
      return values as QueryValues<Q>;
    };
  }

  body<T>(schema: object): BodyValidator<T> {
    const check: ValidateFunction = this.ajv.compile(schema);
    return (body: unknown): T => {
      if (!check(body)) {
        const issues = (check.errors ?? []).map(issueOf);
        throw invalid(
          `request body is invalid: ${issues.map((i) => `${i.field || 'body'} ${i.message}`).join('; ')}`,
          issues,
        );
      }
      return body as T;
    };
  }
}
