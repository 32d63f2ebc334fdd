// API requests as the apiserver counts them (apiserver_request_total), not as the clients think they made them.
import type { RestClient } from '../controller/runtime/rest.ts';

/** The resources a TDSet controller touches: its own kind, the owned Deployments and the Events it records. */
export const workloadResources = ['tdsets', 'deployments', 'events'];
const writeVerbs = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);

export interface RequestCounts {
  reads: number;
  writes: number;
}

export function countRequests(metricsText: string, resources = workloadResources): RequestCounts {
  const counts = { reads: 0, writes: 0 };
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (!resources.includes(labels.resource ?? '')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (writeVerbs.has(labels.verb ?? '')) counts.writes += value;
    else counts.reads += value;
  }
  return counts;
}

export async function requestCounts(admin: RestClient, resources = workloadResources): Promise<RequestCounts> {
  return countRequests(await admin.text({ method: 'GET', path: '/metrics' }), resources);
}

export function difference(after: RequestCounts, before: RequestCounts): RequestCounts {
  return { reads: after.reads - before.reads, writes: after.writes - before.writes };
}
