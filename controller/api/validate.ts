// Controller-side checks against the same OpenAPI schema the CRD carries: what the apiserver enforces, checked
// again before acting (objects stored before a schema change, or read through a cache), and defaults filled in.
// CEL rules are the apiserver's; semantic checks that no schema can say belong to each operator.
import type { OpenApiSchema } from './schema.ts';

export interface FieldError {
  path: string;
  message: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function typeError(schema: OpenApiSchema, value: unknown): string | undefined {
  if (schema['x-kubernetes-int-or-string']) {
    return typeof value === 'string' || Number.isInteger(value) ? undefined : 'must be an integer or a string';
  }
  switch (schema.type) {
    case 'object': return isObject(value) ? undefined : 'must be an object';
    case 'array': return Array.isArray(value) ? undefined : 'must be a list';
    case 'string': return typeof value === 'string' ? undefined : 'must be a string';
    case 'integer': return Number.isInteger(value) ? undefined : 'must be an integer';
    case 'boolean': return typeof value === 'boolean' ? undefined : 'must be true or false';
    default: return undefined;
  }
}

function check(schema: OpenApiSchema, value: unknown, path: string, errors: FieldError[]): void {
  const wrongType = typeError(schema, value);
  if (wrongType) {
    errors.push({ path, message: wrongType });
    return;
  }
  const fail = (message: string) => errors.push({ path, message });
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) fail(`must be at least ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) fail(`must be at most ${schema.maximum}`);
  }
  if (typeof value === 'string') {
    if (Array.isArray(schema.enum) && !schema.enum.includes(value)) fail(`must be one of ${schema.enum.join(', ')}`);
    if (typeof schema.minLength === 'number' && value.length < schema.minLength) fail(`must not be shorter than ${schema.minLength}`);
    if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) fail(`must not be longer than ${schema.maxLength}`);
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) {
      fail(`must match ${schema.pattern}`);
    }
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) fail(`must have at least ${schema.minItems} items`);
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) fail(`must have at most ${schema.maxItems} items`);
    const items = schema.items as OpenApiSchema | undefined;
    if (items) value.forEach((item, i) => check(items, item, `${path}[${i}]`, errors));
  }
  if (isObject(value)) {
    const properties = schema.properties as Record<string, OpenApiSchema> | undefined;
    for (const name of (schema.required as string[] | undefined) ?? []) {
      if (value[name] === undefined) errors.push({ path: `${path}.${name}`, message: 'is required' });
    }
    const count = Object.keys(value).length;
    if (typeof schema.minProperties === 'number' && count < schema.minProperties) fail(`must have at least ${schema.minProperties} entries`);
    if (typeof schema.maxProperties === 'number' && count > schema.maxProperties) fail(`must have at most ${schema.maxProperties} entries`);
    for (const [name, child] of Object.entries(value)) {
      const childSchema = properties?.[name] ?? (schema.additionalProperties as OpenApiSchema | undefined);
      if (childSchema && child !== undefined) check(childSchema, child, `${path}.${name}`, errors);
    }
  }
}

/** Every way `value` breaks `schema`, each naming its field path from `root` (e.g. `spec.container.port`). */
export function validate(schema: OpenApiSchema, value: unknown, root: string): FieldError[] {
  const errors: FieldError[] = [];
  check(schema, value, root, errors);
  return errors;
}

/** A copy of `value` with the schema's defaults filled in where fields are absent, as the apiserver does. */
export function withDefaults<T>(schema: OpenApiSchema, value: T): T {
  if (Array.isArray(value)) {
    const items = schema.items as OpenApiSchema | undefined;
    return (items ? value.map((item) => withDefaults(items, item)) : value) as T;
  }
  if (!isObject(value)) return value;
  const properties = (schema.properties as Record<string, OpenApiSchema> | undefined) ?? {};
  const result: Record<string, unknown> = { ...value };
  for (const [name, child] of Object.entries(properties)) {
    if (result[name] === undefined && child.default !== undefined) result[name] = structuredClone(child.default);
    if (result[name] !== undefined) result[name] = withDefaults(child, result[name]);
  }
  return result as T;
}
