import { dns1123Subdomain, labelSelector, statusOf } from '../../api/common.ts';
import { defineKind, type ResourceOf } from '../../api/kind.ts';
import { array, boolean, enumeration, integer, object, string, type Infer } from '../../api/schema.ts';

export const podAlertSpec = object({
  alerts: object({
    checkRunningPods: boolean({ description: 'Report pods that are not running and ready; false turns the check ' +
      'off and clears alerts.', required: true }),
  }, { description: 'What to alert on.', required: true }),
  selector: labelSelector('The pods to watch; default every pod in the PodAlert\'s namespace.'),
  gracePeriodSeconds: integer({ description: 'How long a pod may be unhealthy before it counts.', minimum: 0,
    maximum: 86400, default: 60 }),
  logLines: integer({ description: 'Lines of the failing container\'s log to capture (the previous instance for a ' +
    'crash loop).', minimum: 0, maximum: 200, default: 20 }),
  webhook: object({
    secretRef: object({
      name: string({ description: 'The Secret in the PodAlert\'s namespace.', required: true, maxLength: 253,
        pattern: dns1123Subdomain }),
      key: string({ description: 'The key whose value is the webhook URL.', required: true, maxLength: 253,
        pattern: '^[-._a-zA-Z0-9]+$' }),
    }, { description: 'Where the webhook URL is kept: never in the spec, logs or status.', required: true }),
  }, { description: 'When set, one JSON POST per new alert and per resolution (Slack-compatible: a text field).' }),
}, { description: 'Which pods to watch and where to send alerts.', required: true });

const containerReport = object({
  name: string({ description: 'The container.', required: true }),
  state: string({ description: 'waiting, running or terminated.', required: true }),
  ready: boolean({ description: 'Whether the container is ready.' }),
  reason: string({ description: 'Why it waits or ended, e.g. CrashLoopBackOff.' }),
  message: string({ description: 'The runtime\'s message.', maxLength: 4096 }),
  restartCount: integer({ description: 'Restarts so far.', minimum: 0 }),
}, { description: 'One container\'s state.' });

export const podAlertStatus = statusOf({
  unhealthyPods: integer({ description: 'Pods unhealthy past the grace period now.', minimum: 0 }),
  lastEvaluationTime: string({ description: 'When pods were last checked.', format: 'date-time' }),
  alerts: array(object({
    pod: string({ description: 'The pod.', required: true }),
    phase: string({ description: 'The pod\'s phase.', required: true }),
    reason: string({ description: 'What is wrong, in a word: CrashLoopBackOff, ImagePullBackOff, Unschedulable, ' +
      'NotReady, Failed...', required: true }),
    message: string({ description: 'What is wrong, in a sentence.', maxLength: 4096 }),
    since: string({ description: 'When it became unhealthy.', format: 'date-time', required: true }),
    containers: array(containerReport, { description: 'Each container\'s state.', maxItems: 32 }),
    container: string({ description: 'The failing container whose log is captured.' }),
    logTail: string({ description: 'The last lines of the failing container\'s log.', maxLength: 65536 }),
    logError: string({ description: 'Why no log could be read, when none could.', maxLength: 1024 }),
  }, { description: 'One unhealthy pod.' }), { description: 'Current alerts, most recent first.', maxItems: 50 }),
  pendingNotifications: array(object({
    id: string({ description: 'The message\'s id, sent with it: a receiver can drop a repeat.', maxLength: 64 }),
    event: enumeration(['alert', 'resolved'], { description: 'A new alert, or one resolved.', required: true }),
    pod: string({ description: 'The pod.', required: true }),
    text: string({ description: 'The message, as a chat webhook shows it.', required: true, maxLength: 4096 }),
    reason: string({ description: 'The alert\'s reason.' }),
    since: string({ description: 'When the pod became unhealthy.', format: 'date-time' }),
    attempts: integer({ description: 'Failed deliveries so far.', minimum: 0 }),
    notBefore: string({ description: 'When the next delivery is due, after a failure.', format: 'date-time' }),
  }, { description: 'A webhook message not delivered yet.' }), {
    description: 'Webhook messages waiting for delivery, oldest first; kept here so that a restarted controller ' +
      'neither loses nor repeats one.', maxItems: 100 }),
  droppedNotifications: integer({ description: 'Webhook messages dropped because 100 were already waiting.', minimum: 0 }),
});

export const PodAlert = defineKind({
  kind: 'PodAlert',
  shortNames: ['pa'],
  description: 'PodAlert watches pods in its namespace and reports those unhealthy past a grace period, with each ' +
    'container\'s state and a tail of the failing container\'s log; optionally posts alerts to a webhook.',
  spec: podAlertSpec,
  status: podAlertStatus,
  printerColumns: [
    { name: 'Unhealthy', type: 'integer', jsonPath: '.status.unhealthyPods', description: 'Unhealthy pods now.' },
    { name: 'Checked', type: 'date', jsonPath: '.status.lastEvaluationTime', description: 'The last check.' },
  ],
  requesterRights: [{ group: '', resource: 'pods', verb: 'list',
    because: 'the controller copies matching pods\' states into its status for you' },
  { group: '', resource: 'pods', subresource: 'log', verb: 'get',
    when: 'has(object.spec.logLines) && object.spec.logLines > 0',
    because: 'the controller copies pods\' log tails into its status for you; logLines: 0 needs no such right' },
  { group: '', resource: 'secrets', verb: 'get', name: 'object.spec.webhook.secretRef.name', when: 'has(object.spec.webhook)',
    because: 'the controller reads the webhook URL from that Secret for you' }],
});

export type PodAlertSpec = Infer<typeof podAlertSpec>;
export type PodAlertStatus = Infer<typeof podAlertStatus>;
export type PodAlertResource = ResourceOf<typeof PodAlert>;
