// The one door to the apiserver. Every call names its verb and resource; a call the caller never declared is refused
// before it leaves the process, so the RBAC synthesized from the same declarations is always enough.
import type { IncomingMessage } from 'node:http';
import { allows, type Permission, type Verb } from '../api/permissions.ts';
import type { ExecRequest, ExecResult } from './exec.ts';
import { type RestClient, type Query, ApiError } from './rest.ts';
import { apiVersionOf, pathOf, type KubeObject, type ResourceType } from './resources.ts';

export class UndeclaredCallError extends Error {
  constructor(readonly verb: Verb, readonly group: string, readonly resource: string) {
    super(`undeclared API call: ${verb} ${group || 'core'}/${resource}; add it to the permissions the caller declares`);
    this.name = 'UndeclaredCallError';
  }
}

export interface ObjectList<T> {
  metadata: { resourceVersion: string; continue?: string };
  items: T[];
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

/** Asks for each object's kind and metadata only (PartialObjectMetadata), as client-go's metadata client does. */
const metadataOnly = (kind: 'PartialObjectMetadata' | 'PartialObjectMetadataList') =>
  `application/json;as=${kind};g=meta.k8s.io;v=v1,application/json`;

export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';

/**
 * A watch whose headers do not come within this long is failed and retried: the apiserver sends them once the watch
 * is set up, and a request hung before them (a peer that accepted it and went quiet) is one keepalive cannot see.
 * Priority and fairness may queue a watch for up to a minute, and a cache not fresh yet holds it 3 s more.
 */
const watchHeadersTimeoutMs = 65_000;

const contentTypes: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

/** Observes every call's outcome (for metrics); `code` is the HTTP status, or 0 when none came back. */
export type CallObserver = (verb: Verb, type: ResourceType, code: number) => void;

export class Client {
  constructor(
    private readonly rest: RestClient,
    readonly permissions: readonly Permission[],
    readonly fieldManager: string,
    private readonly observe: CallObserver = () => {},
  ) {}

  /** The same connection, allowed only what `permissions` declare, writing as `fieldManager`. */
  scoped(permissions: readonly Permission[], fieldManager = this.fieldManager): Client {
    return new Client(this.rest, permissions, fieldManager, this.observe);
  }

  /** Throws UndeclaredCallError unless `verb` on the type (or its subresource) was declared. */
  check(type: ResourceType, verb: Verb, subresource?: string): void {
    const resource = subresource ? `${type.resource}/${subresource}` : type.resource;
    if (!allows(this.permissions, type.group, resource, verb)) throw new UndeclaredCallError(verb, type.group, resource);
  }

  private async call<T>(verb: Verb, type: ResourceType, send: () => Promise<T>): Promise<T> {
    try {
      const result = await send();
      this.observe(verb, type, 200);
      return result;
    } catch (error) {
      this.observe(verb, type, error instanceof ApiError ? error.status : 0);
      throw error;
    }
  }

  /** The object, or undefined when it does not exist. */
  async get<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string,
    subresource?: string): Promise<T | undefined> {
    this.check(type, 'get', subresource);
    try {
      return await this.call('get', type, () =>
        this.rest.json<T>({ method: 'GET', path: pathOf(type, namespace, name, subresource) }));
    } catch (error) {
      if (error instanceof ApiError && error.notFound) return undefined;
      throw error;
    }
  }

  /** A subresource served as text, such as pods/log. */
  async getText(type: ResourceType, namespace: string, name: string, subresource: string, query?: Query): Promise<string> {
    this.check(type, 'get', subresource);
    return this.call('get', type, () =>
      this.rest.text({ method: 'GET', path: pathOf(type, namespace, name, subresource), query }));
  }

  /**
   * Runs a command in a pod's container. The WebSocket upgrade is a GET, authorized as get on pods/exec, and the
   * apiserver then asks for create as well (AuthorizePodWebsocketUpgradeCreatePermission, on since 1.31).
   */
  async exec(type: ResourceType, request: ExecRequest): Promise<ExecResult> {
    this.check(type, 'get', 'exec');
    this.check(type, 'create', 'exec');
    return this.call('create', type, () => this.rest.exec(request));
  }

  /** Lists objects; with `metadata`, only their kind and metadata. */
  async list<T extends KubeObject>(type: ResourceType, namespace?: string, options: ListOptions = {},
    metadata = false): Promise<ObjectList<T>> {
    this.check(type, 'list');
    return this.call('list', type, () => this.rest.json<ObjectList<T>>({ method: 'GET', path: pathOf(type, namespace),
      query: { ...options }, timeoutMs: 60_000, accept: metadata ? metadataOnly('PartialObjectMetadataList') : undefined }));
  }

  /** Opens a watch stream, of objects' metadata only with `metadata`; the caller reads newline-delimited events. */
  async watch(type: ResourceType, namespace: string | undefined, query: Query, signal: AbortSignal, metadata = false):
  Promise<IncomingMessage> {
    this.check(type, 'watch');
    return this.call('watch', type, () => this.rest.open({ method: 'GET', path: pathOf(type, namespace),
      query: { ...query, watch: 1, allowWatchBookmarks: true }, signal, headersTimeoutMs: watchHeadersTimeoutMs,
      accept: metadata ? metadataOnly('PartialObjectMetadata') : undefined }));
  }

  async create<T extends KubeObject>(type: ResourceType, object: T, subresource?: string): Promise<T> {
    this.check(type, 'create', subresource);
    const namespace = object.metadata.namespace;
    const path = subresource ? pathOf(type, namespace, object.metadata.name, subresource) : pathOf(type, namespace);
    return this.call('create', type, () => this.rest.json<T>({ method: 'POST', path,
      query: { fieldManager: this.fieldManager }, body: { apiVersion: apiVersionOf(type), kind: type.kind, ...object } }));
  }

  /** PUT: carries metadata.resourceVersion, so a stale object fails with 409 rather than overwriting. */
  async update<T extends KubeObject>(type: ResourceType, object: T, subresource?: string): Promise<T> {
    this.check(type, 'update', subresource);
    return this.call('update', type, () => this.rest.json<T>({ method: 'PUT',
      path: pathOf(type, object.metadata.namespace, object.metadata.name, subresource),
      query: { fieldManager: this.fieldManager }, body: { apiVersion: apiVersionOf(type), kind: type.kind, ...object } }));
  }

  async patch<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string, patch: unknown,
    patchType: Exclude<PatchType, 'apply'>, subresource?: string): Promise<T> {
    this.check(type, 'patch', subresource);
    return this.call('patch', type, () => this.rest.json<T>({ method: 'PATCH',
      path: pathOf(type, namespace, name, subresource), query: { fieldManager: this.fieldManager },
      body: patch, contentType: contentTypes[patchType] }));
  }

  /** A patch of an object that may be gone already (say, one the cache still holds): undefined when it is. */
  async patchIfPresent<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string,
    patch: unknown, patchType: Exclude<PatchType, 'apply'>): Promise<T | undefined> {
    try {
      return await this.patch<T>(type, namespace, name, patch, patchType);
    } catch (error) {
      if (error instanceof ApiError && error.notFound) return undefined;
      throw error;
    }
  }

  /**
   * Server-side apply of the fields this field manager owns; conflicts with other managers are forced. An apply
   * creates the object when it is missing, for which the apiserver asks for create as well as patch.
   */
  async apply<T extends KubeObject>(type: ResourceType, object: T, subresource?: string): Promise<T> {
    this.check(type, 'patch', subresource);
    this.check(type, 'create', subresource);
    return this.call('patch', type, () => this.rest.json<T>({ method: 'PATCH',
      path: pathOf(type, object.metadata.namespace, object.metadata.name, subresource),
      query: { fieldManager: this.fieldManager, force: true }, contentType: contentTypes.apply,
      body: { apiVersion: apiVersionOf(type), kind: type.kind, ...object } }));
  }

  /** Deletes, optionally only if the object is still the one with `uid`. False when it was already gone. */
  /** Deletes the object (that uid only, if given); `gracePeriodSeconds` 0 is a force delete, for a pod whose node is gone. */
  async delete(type: ResourceType, namespace: string | undefined, name: string, uid?: string,
    gracePeriodSeconds?: number): Promise<boolean> {
    this.check(type, 'delete');
    try {
      await this.call('delete', type, () => this.rest.json({ method: 'DELETE', path: pathOf(type, namespace, name),
        body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background',
          ...(uid ? { preconditions: { uid } } : {}),
          ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }) } }));
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.notFound) return false;
      throw error;
    }
  }
}
