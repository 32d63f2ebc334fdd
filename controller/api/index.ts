// keelson/api: describing a kind (its schema, validation and defaults from one description) and the API calls
// an operator makes, from which its RBAC is synthesized.
export { apiVersionOfKind, crdName, customResourceDefinition, defineKind, keelsonApi, type ApiGroup, type KindDefinition,
  type PrinterColumn, type Resource, type ResourceOf } from './kind.ts';
export { array, boolean, enumeration, integer, map, object, quantity, string, type Infer, type ObjectNode,
  type OpenApiSchema } from './schema.ts';
export { conditions, dns1123Label, dns1123Subdomain, labelMap, labelSelector, observedGeneration, statusOf } from './common.ts';
export { policyName, requesterPolicy, rightExpression, type FromObject, type RequesterRight } from './admission.ts';
export { validate, withDefaults, type FieldError } from './validate.ts';
export { allows, ownKind, type Permission, type Verb } from './permissions.ts';
export { controllerArgs, keelsonFlags, logLevels, parseControllerFlags, runtimeFlags, type ControllerOptions, type FlagSpec,
  type LogLevel, type ProgramOptions, type RuntimeOptions } from './flags.ts';
