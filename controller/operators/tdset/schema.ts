import { dns1123Subdomain, statusOf } from '../../api/common.ts';
import type { RequesterRight } from '../../api/admission.ts';
import { scaleResourcePatterns } from './scale-resources.ts';
import { defineKind, type ResourceOf } from '../../api/kind.ts';
import { restrictedPodSecurity, smallContainerResources, unprivilegedUser } from '../../api/pod-security.ts';
import { array, boolean, enumeration, integer, map, object, quantity, string, type Infer } from '../../api/schema.ts';

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

/** The apps/v1 workloads a TDSet scales; custom resources are the install's to name. */
export const appsKinds = ['Deployment', 'StatefulSet', 'ReplicaSet'] as const;

/** Days as the spec writes them, Sunday first (as Date's getDay counts). */
export const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
const nextDay = `{${days.map((d, i) => `'${d}': '${days[(i + 1) % 7]}'`).join(', ')}}`;
const clockTime = (description: string) => string({ description, required: true, minLength: 5, maxLength: 5,
  pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' });
const datePattern = '[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])';
const replicas = (description: string) => integer({ description, minimum: 0, maximum: 10000, required: true });
/** An autoscaler's bound for a stretch of the schedule, and the CEL that keeps it above the replicas asked for. */
const maxReplicas = (when: string) => integer({ description: `With spec.horizontalPodAutoscaler: its maxReplicas ${when} ` +
  '(at least the replicas). Where none is given, the autoscaler gets back the maxReplicas it had before the TDSet ' +
  'set them.', minimum: 1, maximum: 10000 });
const maxAboveReplicas = (replicasField = 'replicas', maxField = 'maxReplicas') => ({
  rule: `!has(self.${maxField}) || self.${maxField} >= self.${replicasField}`,
  message: `${maxField} must be at least ${replicasField}`, fieldPath: `.${maxField}` });
/** Where a window (a) covers minutes of a day it shares with another (b), and of the day after its days. */
const end = (w: string) => `(${w}.end > ${w}.start ? ${w}.end : '24:00')`;
const overlaps = `a.days.exists(d, d in b.days && a.start < ${end('b')} && b.start < ${end('a')}) || ` +
  `(a.end <= a.start && a.days.exists(d, ${nextDay}[d] in b.days && b.start < a.end))`;

export const weekWindow = object({
  days: array(enumeration(days, { description: 'A day of the week.' }), { description: 'The days the window opens ' +
    'on, e.g. [Mon, Tue, Wed, Thu, Fri].', required: true, minItems: 1, maxItems: 7, listType: 'set' }),
  start: clockTime('When the window opens, HH:MM in spec.timeZone.'),
  end: clockTime('When the window closes, HH:MM: not included. An end not after the start runs past midnight into ' +
    'the next day (Fri 22:00-02:00 closes on Saturday); equal to the start, the window lasts a whole day.'),
  replicas: replicas('Replicas while the window is open; 0 is allowed.'),
  maxReplicas: maxReplicas('while the window is open'),
}, { description: 'A window of the week and the replicas it asks for.', rules: [maxAboveReplicas()] });

export const scheduleException = object({
  date: string({ description: 'A whole day, YYYY-MM-DD in spec.timeZone (a holiday).', pattern: `^${datePattern}$`,
    maxLength: 10 }),
  from: string({ description: 'The start of a range, YYYY-MM-DD (its start) or YYYY-MM-DDTHH:MM, in spec.timeZone.',
    pattern: `^${datePattern}(T([01][0-9]|2[0-3]):[0-5][0-9])?$`, maxLength: 16 }),
  to: string({ description: 'The end of a range: YYYY-MM-DD includes that day; YYYY-MM-DDTHH:MM is not included.',
    pattern: `^${datePattern}(T([01][0-9]|2[0-3]):[0-5][0-9])?$`, maxLength: 16 }),
  replicas: replicas('Replicas all through the exception, whatever the windows say.'),
  maxReplicas: maxReplicas('all through the exception'),
}, {
  description: 'A day or range (holidays, freezes) when the replicas are these, whatever the windows say.',
  rules: [
    { rule: 'has(self.date) != (has(self.from) || has(self.to))', message: 'give either date, or from and to' },
    { rule: 'has(self.from) == has(self.to)', message: 'a range needs both from and to' },
    { rule: '!has(self.from) || !has(self.to) || (size(self.from) == 10 ? self.from + \'T00:00\' : self.from) < ' +
      '(size(self.to) == 10 ? self.to + \'T24:00\' : self.to)', message: 'to must come after from', fieldPath: '.to' },
    maxAboveReplicas(),
  ],
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
  }, { description: 'The one container each replica of the Deployment the TDSet owns runs, as the restricted Pod ' +
    'Security Standard asks: not as root, no privilege escalation, no capabilities, the ' +
    `${restrictedPodSecurity.seccompProfile.type} seccomp profile. Exactly one of container, template and ` +
    'scaleTargetRef.' }),
  template: object({}, { description: 'The pod template (a PodTemplateSpec, as a Deployment has) of the Deployment the ' +
    'TDSet owns. Where it says nothing, its pods are hardened as the restricted Pod Security Standard asks: ' +
    'runAsNonRoot, the RuntimeDefault seccomp profile, no privilege escalation, no capabilities. Its labels get the ' +
    'TDSet\'s selector. Exactly one of container, template and scaleTargetRef.', preserveUnknownFields: true }),
  scaleTargetRef: object({
    apiVersion: string({ description: 'The workload\'s API version, group/version: apps/v1, or a custom resource\'s ' +
      '(e.g. example.com/v1).', required: true, maxLength: 317, pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-z0-9]+$' }),
    kind: string({ description: `The workload's kind: ${appsKinds.join(', ')}, or a custom resource's with a scale ` +
      'subresource that the install lets TDSets scale (tdsetScaleResources).', required: true, maxLength: 63,
    pattern: '^[A-Z][A-Za-z0-9]*$' }),
    name: string({ description: 'The workload\'s name, in the TDSet\'s namespace.', required: true, minLength: 1,
      maxLength: 253, pattern: dns1123Subdomain }),
    resource: string({ description: 'For a custom resource: its plural, as RBAC names it (kubectl api-resources shows ' +
      'it), e.g. widgets. Admission asks whoever points a TDSet at it for patch on <resource>/scale; CEL cannot find ' +
      'the plural of a kind.', maxLength: 63, pattern: scaleResourcePatterns.resource.source }),
  }, { description: 'A workload the TDSet does not own, in its namespace, scaled through its scale subresource and ' +
    'otherwise never changed. Exactly one of container, template and scaleTargetRef; it cannot change.',
  rules: [{ rule: `self.apiVersion != 'apps/v1' || self.kind in [${appsKinds.map((k) => `'${k}'`).join(', ')}]`,
    message: `of apps/v1, a TDSet scales ${appsKinds.join(', ')}`, fieldPath: '.kind' },
  { rule: "!self.apiVersion.startsWith('apps/') || self.apiVersion == 'apps/v1'", message: 'apps workloads are ' +
    'apps/v1', fieldPath: '.apiVersion' },
  { rule: "self.apiVersion.startsWith('apps/') != has(self.resource)", message: 'give resource (the plural, e.g. ' +
    'widgets) for a custom resource, and none for an apps/v1 workload', fieldPath: '.resource' }] }),
  horizontalPodAutoscaler: object({
    name: string({ description: 'The HorizontalPodAutoscaler\'s name, in the TDSet\'s namespace.', required: true,
      minLength: 1, maxLength: 253, pattern: dns1123Subdomain }),
  }, { description: 'With scaleTargetRef: the HorizontalPodAutoscaler that scales the same workload. The TDSet then ' +
    'sets its minReplicas to what the schedule asks for (at most its maxReplicas, which windows may set too) and ' +
    'leaves the replicas to it, so ' +
    'the two never fight; at 0 it scales the workload to 0, which stops the autoscaler, and back when a window asks ' +
    'for more. An autoscaler on the target that is not named here makes the TDSet change nothing. It cannot change.' }),
  restoreOnDelete: boolean({ description: 'With scaleTargetRef: when the TDSet is deleted, the target gets back the ' +
    'replicas it had before the TDSet first scaled it (status.originalReplicas), unless someone else changed them ' +
    'since. Default true.' }),
  service: object({
    port: port('The Service port; it targets the container port.'),
  }, { description: 'When set, a Service of the same name exposes the container port; removing it deletes the Service.' }),
  schedulingConfig: array(schedulingWindow, {
    description: 'Hourly windows, every day; they must not overlap. Outside every window defaultReplica applies. ' +
      'Exactly one of schedulingConfig and schedule.',
    maxItems: 24,
  }),
  schedule: array(weekWindow, {
    description: 'Windows by day of the week and minute, e.g. {days: [Mon, Tue, Wed, Thu, Fri], start: "07:30", ' +
      'end: "19:00", replicas: 5}; they must not overlap. Outside every window defaultReplica applies. Exactly one ' +
      'of schedule and schedulingConfig.',
    maxItems: 16,
    rules: [
      { rule: 'self.all(a, self.exists_one(b, b == a))', message: 'a window is listed twice', reason: 'FieldValueDuplicate' },
      { rule: `self.all(a, self.all(b, a == b || !(${overlaps})))`, message: 'windows overlap: each minute of the week ' +
        'may be in one window at most' },
    ],
  }),
  exceptions: array(scheduleException, {
    description: 'Days and ranges whose replicas override the windows\' (the first listed wins where they overlap).',
    maxItems: 32,
  }),
  paused: boolean({ description: 'While true, nothing is scaled; status still says what the schedule asks for.',
    default: false }),
  override: object({
    replicas: replicas('Replicas until the time given, whatever the schedule says.'),
    until: string({ description: 'When the schedule takes over again (RFC 3339), e.g. 2026-11-27T18:00:00Z.',
      format: 'date-time', required: true }),
    maxReplicas: maxReplicas('until then'),
  }, { description: 'An on-demand change (waking an environment up): these replicas until then, after which the ' +
    'schedule resumes; an override past its time changes nothing.', rules: [maxAboveReplicas()] }),
  defaultReplica: integer({ description: 'Replicas to run outside every window and exception.', minimum: 0,
    maximum: 10000, default: 1 }),
  defaultMaxReplicas: maxReplicas('outside every window and exception'),
  intervalMint: integer({ description: 'When set, also re-check every this many minutes (1-1440); windows are ' +
    'always applied exactly at their boundaries.', minimum: 1, maximum: 1440 }),
  timeZone: string({ description: 'The IANA time zone the hours are in, e.g. Europe/Berlin; daylight-saving ' +
    'changes are followed.', default: 'UTC', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_+\\-/]+$' }),
}, {
  description: 'Which container to run and how many replicas at each time of the week.', required: true,
  rules: [
    { rule: 'has(self.schedulingConfig) != has(self.schedule)',
      message: 'give exactly one of spec.schedule and spec.schedulingConfig' },
    { rule: '[has(self.container), has(self.template), has(self.scaleTargetRef)].filter(x, x).size() == 1',
      message: 'give exactly one of spec.container, spec.template and spec.scaleTargetRef' },
    { rule: '!has(self.horizontalPodAutoscaler) || has(self.scaleTargetRef)', message: 'spec.horizontalPodAutoscaler ' +
      'is for a scaleTargetRef', fieldPath: '.horizontalPodAutoscaler' },
    { rule: '!has(self.service) || !has(self.scaleTargetRef)', message: 'spec.service is for the Deployment the TDSet ' +
      'owns, not for a scaleTargetRef', fieldPath: '.service' },
    { rule: 'has(self.scaleTargetRef) == has(oldSelf.scaleTargetRef) && (!has(self.scaleTargetRef) || ' +
      'self.scaleTargetRef == oldSelf.scaleTargetRef)', message: 'spec.scaleTargetRef cannot be set, changed or ' +
      'removed: make a new TDSet', fieldPath: '.scaleTargetRef' },
    { rule: 'has(self.horizontalPodAutoscaler) == has(oldSelf.horizontalPodAutoscaler) && ' +
      '(!has(self.horizontalPodAutoscaler) || self.horizontalPodAutoscaler == oldSelf.horizontalPodAutoscaler)',
    message: 'spec.horizontalPodAutoscaler cannot be set, changed or removed: make a new TDSet',
    fieldPath: '.horizontalPodAutoscaler' },
    maxAboveReplicas('defaultReplica', 'defaultMaxReplicas'),
    { rule: 'has(self.horizontalPodAutoscaler) || !(has(self.defaultMaxReplicas) || (has(self.schedule) && ' +
      'self.schedule.exists(w, has(w.maxReplicas))) || (has(self.exceptions) && self.exceptions.exists(e, ' +
      'has(e.maxReplicas))) || (has(self.override) && has(self.override.maxReplicas)))',
    message: 'maxReplicas are the autoscaler\'s: give spec.horizontalPodAutoscaler' },
  ],
});

/** Patch on the target's scale subresource, by name, for targets `when` (CEL over object) picks. */
const scaleRight = ({ group, resource, when }: Pick<RequesterRight, 'group' | 'resource'> & { when: string }):
RequesterRight => ({ group, resource, subresource: 'scale', verb: 'patch', name: 'object.spec.scaleTargetRef.name',
  when: `has(object.spec.scaleTargetRef) && ${when}`, because: 'the controller scales that workload for you' });

export const tdsetStatus = statusOf({
  target: string({ description: 'What is scaled: Deployment/<name> (the owned one, or the scaleTargetRef).' }),
  desiredReplicas: integer({ description: 'The replicas the schedule asks for now.', minimum: 0 }),
  originalReplicas: integer({ description: 'With scaleTargetRef: the target\'s replicas before the TDSet first ' +
    'scaled it, restored when the TDSet is deleted.', minimum: 0 }),
  appliedReplicas: integer({ description: 'With scaleTargetRef: the replicas the TDSet last set or found as asked.',
    minimum: 0 }),
  originalMinReplicas: integer({ description: 'With horizontalPodAutoscaler: its minReplicas before the TDSet first ' +
    'set them, restored when the TDSet is deleted.', minimum: 0 }),
  appliedMinReplicas: integer({ description: 'With horizontalPodAutoscaler: the minReplicas the TDSet last set.',
    minimum: 0 }),
  originalMaxReplicas: integer({ description: 'With horizontalPodAutoscaler: its maxReplicas before the TDSet first ' +
    'set them, given back where the schedule asks for none and when the TDSet is deleted.', minimum: 1 }),
  appliedMaxReplicas: integer({ description: 'With horizontalPodAutoscaler: the maxReplicas the TDSet last set.',
    minimum: 1 }),
  appliedWindow: string({ description: 'With scaleTargetRef: the window (its replicas, and when it ends) appliedReplicas was for. ' +
    'Replicas someone else changes within it are left as they are until the next window.' }),
  lastScaleTime: string({ description: 'When the TDSet last changed the replicas.', format: 'date-time' }),
  lastScaleReason: string({ description: 'Why it last changed them: the window, exception or override.' }),
  activeWindow: string({ description: 'The window in force, as start-end (e.g. 9-17), or "default" outside every window.' }),
  nextTransitionTime: string({ description: 'When the replicas the schedule asks for next change.', format: 'date-time' }),
});

export const TDSet = defineKind({
  kind: 'TDSet',
  shortNames: ['tds'],
  description: 'TDSet scales a workload by the time of the week: windows of days and minutes (or the seed\'s hours ' +
    'of every day), each with its replicas, exceptions for holidays, a default outside them, pause and override. ' +
    'It runs a Deployment of its own, or scales one it does not own through its scale subresource.',
  spec: tdsetSpec,
  status: tdsetStatus,
  printerColumns: [
    { name: 'Target', type: 'string', jsonPath: '.status.target', description: 'What is scaled.' },
    { name: 'Replicas', type: 'integer', jsonPath: '.status.desiredReplicas', description: 'Replicas asked for now.' },
    { name: 'Window', type: 'string', jsonPath: '.status.activeWindow', description: 'The window in force.' },
    // A date column shows an age, which kubectl prints as <invalid> for a time still to come: show the time itself.
    { name: 'Next', type: 'string', jsonPath: '.status.nextTransitionTime', description: 'When the replicas next change (RFC 3339).' },
  ],
  requesterRights: [
    { group: 'apps', resource: 'deployments', verb: 'create', when: '!has(object.spec.scaleTargetRef)',
      because: 'the controller runs a Deployment of its image for you' },
    ...appsKinds.map((kind) => scaleRight({ group: 'apps', resource: `${kind.toLowerCase()}s`,
      when: `object.spec.scaleTargetRef.apiVersion.startsWith('apps/') && object.spec.scaleTargetRef.kind == '${kind}'` })),
    scaleRight({ group: { cel: "object.spec.scaleTargetRef.apiVersion.split('/')[0]" },
      resource: { cel: 'object.spec.scaleTargetRef.resource' },
      when: "!object.spec.scaleTargetRef.apiVersion.startsWith('apps/')" }),
    { group: 'autoscaling', resource: 'horizontalpodautoscalers', verb: 'patch',
      name: 'object.spec.horizontalPodAutoscaler.name', when: 'has(object.spec.horizontalPodAutoscaler)',
      because: 'the controller sets that autoscaler\'s minReplicas (and maxReplicas) for you' },
    { group: '', resource: 'services', verb: 'create', when: 'has(object.spec.service)',
      because: 'the controller makes a Service for you' },
  ],
});

export type TDSetSpec = Infer<typeof tdsetSpec>;
export type TDSetStatus = Infer<typeof tdsetStatus>;
export type TDSetResource = ResourceOf<typeof TDSet>;
