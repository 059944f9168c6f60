import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { type FieldIssue, invalid } from '../errors.js';

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
  return { field: error.instancePath, in: 'body', message: error.message ?? 'is invalid' };
}

/** Compiles request-body validators; one Ajv instance per app. */
export class Validators {
  private readonly ajv = new Ajv({ allErrors: true, strict: true });

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
