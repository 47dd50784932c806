/**
 * Static types read off the schemas that already exist at run time, so that a shape is written
 * once and the rest follows from it:
 *
 * - `ParamsOf<typeof schema>`: the params an action's fastest-validator schema lets through
 *   (fastest-validator 1.19 infers nothing itself). A schema must be declared `as const`.
 * - `FromJsonSchema<typeof schema>`: the value a JSON Schema (the OpenAPI representation
 *   schemas, `as const`) describes.
 *
 * Both cover the rule types and keywords this project writes; anything else reads as `unknown`,
 * which the compiler then refuses to use as a string or a number: a gap shows, it is not hidden.
 */

declare const output: unique symbol;

/**
 * What a rule checked by code (`custom`) hands on: a mark for the type only, no such key exists
 * at run time. The helpers of shared/http/params.ts put it on the rules whose value is not their type's.
 */
export interface Typed<T> {
  readonly [output]?: T;
}

type Simplify<T> = { [K in keyof T]: T[K] } & {};

type Scalar<Type> = Type extends "string" | "email" | "url" | "uuid"
  ? string
  : Type extends "number"
    ? number
    : Type extends "boolean"
      ? boolean
      : unknown;

type RuleValue<R> = R extends readonly unknown[]
  ? RuleOf<R[number]>
  : R extends { type: "enum"; values: readonly (infer V)[] }
    ? V
    : R extends { type: "array"; items: infer I }
      ? RuleOf<I>[]
      : R extends { type: "object"; props: infer P }
        ? ParamsOf<P>
        : R extends { type: infer Type }
          ? Scalar<Type>
          : unknown;

/** The value one fastest-validator rule lets through. */
export type RuleOf<R> =
  | (typeof output extends keyof R ? Exclude<R[typeof output & keyof R], undefined> : RuleValue<R>)
  | (R extends { nullable: true } ? null : never);

type IsOptional<R> = R extends { optional: true } ? true : R extends { default: unknown } ? true : false;
type Fields<S> = { [K in keyof S as K extends `$$${string}` ? never : K]: S[K] };

/** The params a fastest-validator schema (fields plus `$$` meta keys) lets through. */
export type ParamsOf<S> = Simplify<
  { -readonly [K in keyof Fields<S> as IsOptional<Fields<S>[K]> extends true ? never : K]: RuleOf<Fields<S>[K]> } & {
    -readonly [K in keyof Fields<S> as IsOptional<Fields<S>[K]> extends true ? K : never]?: RuleOf<Fields<S>[K]>;
  }
>;

/** `#/components/schemas/<Name>` references, by name, to the types they stand for. */
export type SchemaRefs = Record<string, unknown>;

type JsonType<T, S, Refs extends SchemaRefs> = T extends "string"
  ? string
  : T extends "integer" | "number"
    ? number
    : T extends "boolean"
      ? boolean
      : T extends "null"
        ? null
        : T extends "array"
          ? S extends { items: infer I }
            ? FromJsonSchema<I, Refs>[]
            : unknown[]
          : T extends "object"
            ? S extends { properties: infer P }
              ? JsonObject<P, S extends { required: readonly (infer Req)[] } ? Req : never, Refs>
              : Record<string, unknown>
            : unknown;

type JsonObject<P, Req, Refs extends SchemaRefs> = Simplify<
  { -readonly [K in keyof P as K extends Req ? K : never]: FromJsonSchema<P[K], Refs> } & {
    -readonly [K in keyof P as K extends Req ? never : K]?: FromJsonSchema<P[K], Refs>;
  }
>;

/** The value a JSON Schema (2020-12, `as const`) describes; `Refs` gives the referenced components. */
export type FromJsonSchema<S, Refs extends SchemaRefs = Record<string, never>> = S extends {
  $ref: `#/components/schemas/${infer Name}`;
}
  ? Name extends keyof Refs
    ? Refs[Name]
    : unknown
  : S extends { const: infer C }
    ? C
    : S extends { enum: readonly (infer V)[] }
      ? V
      : S extends { anyOf: readonly (infer A)[] }
        ? FromJsonSchema<A, Refs>
        : S extends { oneOf: readonly (infer A)[] }
          ? FromJsonSchema<A, Refs>
          : S extends { type: readonly (infer T)[] }
            ? T extends unknown
              ? JsonType<T, S, Refs>
              : never
            : S extends { type: infer T }
              ? JsonType<T, S, Refs>
              : unknown;
