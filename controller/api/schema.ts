// One description of a field gives four things: the CRD's structural OpenAPI schema, the TypeScript type the
// controller reads, the defaults, and the controller-side validation. Every node must say what it is for, so
// `kubectl explain` always helps.

/** A CEL rule the apiserver evaluates (x-kubernetes-validations). */
export interface Rule {
  rule: string;
  message: string;
  /** Points the error at a field below this node, e.g. `.endTime`. */
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export type OpenApiSchema = { [key: string]: unknown };

/**
 * A schema node carrying the TypeScript type `T` it describes. `P` says whether the field is always present
 * when read: required by its parent, or filled in by its default (the apiserver applies defaults on every read).
 */
export interface Node<T, P extends boolean = false> {
  readonly openApi: OpenApiSchema;
  /** Whether the parent object lists this field as required. */
  readonly required: boolean;
  /** Never set: carries presence for inference only. */
  readonly __present?: P;
  /** Never set: carries `T` for inference only. */
  readonly __type?: T;
}

export type Infer<N> = N extends Node<infer T, boolean> ? T : never;

interface Common<T> {
  description: string;
  required?: boolean;
  default?: T;
  rules?: Rule[];
}

type Req<O> = O extends { required: true } ? true : O extends { default: unknown } ? true : false;

function node<T, P extends boolean>(openApi: OpenApiSchema, options: Common<unknown>): Node<T, P> {
  const schema: OpenApiSchema = { ...openApi, description: options.description };
  if (options.default !== undefined) schema.default = options.default;
  if (options.rules?.length) schema['x-kubernetes-validations'] = options.rules;
  return { openApi: schema, required: options.required ?? false };
}

function defined(fields: Record<string, unknown>): OpenApiSchema {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

export function string<O extends Common<string> & { pattern?: string; minLength?: number; maxLength?: number;
  format?: 'date-time' }>(options: O): Node<string, Req<O>> {
  const { pattern, minLength, maxLength, format } = options;
  return node({ type: 'string', ...defined({ pattern, minLength, maxLength, format }) }, options);
}

export function enumeration<const V extends string, O extends Common<V>>(values: readonly V[], options: O):
Node<V, Req<O>> {
  return node({ type: 'string', enum: [...values] }, options);
}

export function integer<O extends Common<number> & { minimum?: number; maximum?: number }>(options: O):
Node<number, Req<O>> {
  const { minimum, maximum } = options;
  return node({ type: 'integer', format: 'int32', ...defined({ minimum, maximum }) }, options);
}

export function boolean<O extends Common<boolean>>(options: O): Node<boolean, Req<O>> {
  return node({ type: 'boolean' }, options);
}

/** A Kubernetes resource quantity ("1Gi", "500m", 2): a number or a string. */
export function quantity<O extends Common<string | number>>(options: O): Node<string | number, Req<O>> {
  return node({
    'x-kubernetes-int-or-string': true,
    pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
    anyOf: [{ type: 'integer' }, { type: 'string' }],
  }, options);
}

export function array<I extends Node<unknown, boolean>, O extends Common<Infer<I>[]> & { minItems?: number;
  maxItems: number; listType?: 'atomic' | 'set' | 'map'; listMapKeys?: string[] }>(items: I, options: O):
Node<Infer<I>[], Req<O>> {
  const { minItems, maxItems, listType, listMapKeys } = options;
  return node({ type: 'array', items: items.openApi, ...defined({ minItems, maxItems,
    'x-kubernetes-list-type': listType, 'x-kubernetes-list-map-keys': listMapKeys }) }, options);
}

/** A map with string keys (additionalProperties). */
export function map<V extends Node<unknown, boolean>, O extends Common<Record<string, Infer<V>>> & {
  minProperties?: number; maxProperties: number }>(values: V, options: O): Node<Record<string, Infer<V>>, Req<O>> {
  const { minProperties, maxProperties } = options;
  return node({ type: 'object', additionalProperties: values.openApi, ...defined({ minProperties, maxProperties }) },
    options);
}

type Fields = Record<string, Node<unknown, boolean>>;
type Present<F extends Fields> = { [K in keyof F]: F[K] extends Node<unknown, true> ? K : never }[keyof F];
type Simplify<T> = { [K in keyof T]: T[K] } & {};
/** Required fields are present; so are fields with a default, which the apiserver fills in on every read. */
export type ObjectOf<F extends Fields> = Simplify<{ [K in Present<F>]: Infer<F[K]> } & {
  [K in Exclude<keyof F, Present<F>>]?: Infer<F[K]> }>;

export interface ObjectNode<T, P extends boolean = false> extends Node<T, P> {
  readonly fields: Fields;
}

export function object<F extends Fields, O extends Common<Partial<ObjectOf<F>>> & { preserveUnknownFields?: boolean }>(
  fields: F, options: O): ObjectNode<ObjectOf<F>, Req<O>> {
  const required = Object.entries(fields).filter(([, f]) => f.required).map(([name]) => name);
  const properties = Object.fromEntries(Object.entries(fields).map(([name, f]) => [name, f.openApi]));
  // No empty properties: the apiserver drops them, and an apply of the CRD by another manager then conflicts.
  const base = node<ObjectOf<F>, Req<O>>({ type: 'object', ...(Object.keys(properties).length ? { properties } : {}),
    ...(required.length ? { required } : {}),
    ...(options.preserveUnknownFields ? { 'x-kubernetes-preserve-unknown-fields': true } : {}) }, options);
  return { ...base, fields };
}
