/**
 * Query parameters as operations declare them (operation.ts `query`): each one's JSON Schema as the
 * document publishes it, and the type of the value its handler is given. The dispatcher checks every value
 * against its schema before the handler runs (validate.ts `Validators.query`) and hands over typed values:
 * a handler never parses the text of a declared parameter.
 */

/** One declared query parameter whose handler gets a `T`. */
export interface QueryParam<T = unknown> {
  /** JSON Schema of the value, as documented. */
  readonly schema: QuerySchema;
  readonly description?: string;
  /** What a refused value is told after the parameter's name, where the schema's wording would not help. */
  readonly invalid?: string;
  /** Turns the checked text into the handler's value (a duration into milliseconds); it may refuse it. */
  readonly parse?: (text: string) => T;
}

export interface QuerySchema {
  readonly type: 'integer' | 'boolean' | 'string';
  readonly minimum?: number;
  readonly maximum?: number;
  readonly pattern?: string;
  readonly maxLength?: number;
  /** Documented; the handler's own reading checks it (an audit search's from and to). */
  readonly format?: 'date-time';
  readonly enum?: readonly string[];
  readonly default?: number | string | boolean;
}

/** An operation's query parameters by name. */
export type Queries = Readonly<Record<string, QueryParam<unknown>>>;

/** What a handler is given for `Q`: each parameter sent, typed; absent when it was not. */
export type QueryValues<Q extends Queries> = {
  readonly [K in keyof Q]?: Q[K] extends QueryParam<infer T> ? T : never;
};

interface Described {
  readonly description?: string;
  readonly invalid?: string;
}

export function integer(
  options: Described & { minimum: number; maximum: number; default?: number },
): QueryParam<number> {
  const { description, invalid, ...bounds } = options;
  return { schema: { type: 'integer', ...bounds }, ...described({ description, invalid }) };
}

export function flag(options: Described = {}): QueryParam<boolean> {
  return { schema: { type: 'boolean' }, ...described(options) };
}

export function text(
  options: Described & {
    pattern?: string;
    maxLength?: number;
    format?: 'date-time';
    enum?: readonly string[];
    default?: string;
  } = {},
): QueryParam<string> {
  const { description, invalid, ...rest } = options;
  return { schema: { type: 'string', ...rest }, ...described({ description, invalid }) };
}

/** A text parameter its declaration turns into another value (`parse`), once the schema has passed it. */
export function parsed<T>(
  options: Described & { pattern: string; parse: (text: string) => T },
): QueryParam<T> {
  const { description, invalid, pattern, parse } = options;
  return { schema: { type: 'string', pattern }, parse, ...described({ description, invalid }) };
}

function described({ description, invalid }: Described): Described {
  return {
    ...(description === undefined ? {} : { description }),
    ...(invalid === undefined ? {} : { invalid }),
  };
}
