import { statusOf } from '../../api/common.ts';
import { defineKind, type ResourceOf } from '../../api/kind.ts';
import { restrictedPodSecurity, smallContainerResources, unprivilegedUser } from '../../api/pod-security.ts';
import { array, integer, map, object, quantity, string, type Infer } from '../../api/schema.ts';

const hour = (description: string) => integer({ description, minimum: 0, maximum: 23, required: true });
const port = (description: string) => integer({ description, minimum: 1, maximum: 65535, required: true });

export const schedulingWindow = object({
  startTime: hour('The hour the window opens, 0-23, in spec.timeZone; the window covers [startTime, endTime).'),
  endTime: hour('The hour the window closes, 0-23; 0 means midnight. An endTime before startTime wraps past ' +
    'midnight: 19-7 covers 19:00-06:59.'),
  replica: integer({ description: 'Replicas to run while the window is open; 0 is allowed.', minimum: 0,
    maximum: 10000, required: true }),
}, {
  description: 'An hourly window and the replicas it asks for.',
  rules: [{ rule: 'self.startTime != self.endTime', message: 'startTime and endTime must differ: a window of zero ' +
    'length never opens', fieldPath: '.endTime' }],
});

export const tdsetSpec = object({
  container: object({
    image: string({ description: 'The container image, e.g. crccheck/hello-world:v1.0.0.', required: true,
      minLength: 1, maxLength: 1024 }),
    port: port('The port the container listens on; named "http" in the Deployment.'),
    runAsUser: integer({ description: `The user the container runs as; never root. Default ${unprivilegedUser}.`,
      minimum: 1, maximum: 2147483647 }),
    runAsGroup: integer({ description: `The group the container runs as; never root. Default ${unprivilegedUser}.`,
      minimum: 1, maximum: 2147483647 }),
    resources: object({
      requests: map(quantity({ description: 'A quantity, e.g. 100m or 128Mi.' }),
        { description: 'What the scheduler sets aside, by resource name.', maxProperties: 16 }),
      limits: map(quantity({ description: 'A quantity, e.g. 100m or 128Mi.' }),
        { description: 'What the container may use at most, by resource name.', maxProperties: 16 }),
    }, { description: `The container's resources, in place of the default (requests ` +
      `${Object.entries(smallContainerResources.requests).map(([k, v]) => `${k} ${v}`).join(', ')}; limits ` +
      `${Object.entries(smallContainerResources.limits).map(([k, v]) => `${k} ${v}`).join(', ')}).` }),
  }, { description: 'The one container each replica runs, as the restricted Pod Security Standard asks: not as ' +
    `root, no privilege escalation, no capabilities, the ${restrictedPodSecurity.seccompProfile.type} seccomp profile.`,
  required: true }),
  service: object({
    port: port('The Service port; it targets the container port.'),
  }, { description: 'When set, a Service of the same name exposes the container port; removing it deletes the Service.' }),
  schedulingConfig: array(schedulingWindow, {
    description: 'Time-of-day windows; they must not overlap. Outside every window defaultReplica applies.',
    required: true, maxItems: 24,
  }),
  defaultReplica: integer({ description: 'Replicas to run outside every window.', minimum: 1, maximum: 10000,
    default: 1 }),
  intervalMint: integer({ description: 'When set, also re-check every this many minutes (1-1440); windows are ' +
    'always applied exactly at their boundaries.', minimum: 1, maximum: 1440 }),
  timeZone: string({ description: 'The IANA time zone the hours are in, e.g. Europe/Berlin; daylight-saving ' +
    'changes are followed.', default: 'UTC', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_+\\-/]+$' }),
}, { description: 'Which container to run and how many replicas at each hour of the day.', required: true });

export const tdsetStatus = statusOf({
  desiredReplicas: integer({ description: 'The replicas the schedule asks for now.', minimum: 0 }),
  activeWindow: string({ description: 'The window in force, as start-end (e.g. 9-17), or "default" outside every window.' }),
  nextTransitionTime: string({ description: 'When the replicas the schedule asks for next change.', format: 'date-time' }),
});

export const TDSet = defineKind({
  kind: 'TDSet',
  shortNames: ['tds'],
  description: 'TDSet runs a Deployment whose replicas follow the time of day: windows of hours, each with its ' +
    'replicas, and a default outside them.',
  spec: tdsetSpec,
  status: tdsetStatus,
  printerColumns: [
    { name: 'Replicas', type: 'integer', jsonPath: '.status.desiredReplicas', description: 'Replicas asked for now.' },
    { name: 'Window', type: 'string', jsonPath: '.status.activeWindow', description: 'The window in force.' },
    // A date column shows an age, which kubectl prints as <invalid> for a time still to come: show the time itself.
    { name: 'Next', type: 'string', jsonPath: '.status.nextTransitionTime', description: 'When the replicas next change (RFC 3339).' },
  ],
  requesterRights: [
    { group: 'apps', resource: 'deployments', verb: 'create', because: 'the controller runs a Deployment of its image for you' },
    { group: '', resource: 'services', verb: 'create', when: 'has(object.spec.service)',
      because: 'the controller makes a Service for you' },
  ],
});

export type TDSetSpec = Infer<typeof tdsetSpec>;
export type TDSetStatus = Infer<typeof tdsetStatus>;
export type TDSetResource = ResourceOf<typeof TDSet>;
