import { labelSelector, statusOf } from '../../api/common.ts';
import { objectReference } from '../../api/references.ts';
import { referenceRight, type ReferenceScope } from '../../api/admission.ts';
import { defineKind, type PrinterColumn, type ResourceOf } from '../../api/kind.ts';
import { array, boolean, enumeration, integer, map, object, string, type Infer } from '../../api/schema.ts';
import { reservedLabels } from './alertmanager.ts';

/** An Alertmanager's base URL: http or https, no credentials, query or fragment. */
const alertmanagerUrl = '^https?://[^/@?#\\s]+(/[^?#\\s]*)?$';

/**
 * The fields of a PodAlert's spec, which a ClusterPodAlert shares: its references name their namespace (scope
 * cluster) where a PodAlert's are in its own.
 */
export function podAlertSpecFields(scope: ReferenceScope) {
  const holder = 'PodAlert';
  const own = scope === 'cluster' ? 'the namespaces namespaceSelector picks' : 'the PodAlert\'s namespace';
  return {
    alerts: object({
      checkRunningPods: boolean({ description: 'Report pods that are not running and ready; false turns the check ' +
        'off and clears alerts.', required: true }),
    }, { description: 'What to alert on.', required: true }),
    selector: labelSelector(`The pods to watch; default every pod in ${own}.`),
    gracePeriodSeconds: integer({ description: 'How long a pod may be unhealthy before it counts; a crash loop\'s pod ' +
      '(failed lately) counts at once for an alert that fires already: it turns unready anew at each crash.', minimum: 0,
      maximum: 86400, default: 60 }),
    logLines: integer({ description: 'Lines of the failing container\'s log to capture (the previous instance for a ' +
      'crash loop).', minimum: 0, maximum: 200, default: 20 }),
    groupBy: enumeration(['owner', 'pod'], { description: 'What one alert is about: owner, the workload its pods ' +
      'belong to (a Deployment through its ReplicaSet, a StatefulSet, a DaemonSet, a Job or its CronJob, or the pod ' +
      'itself when nothing controls it), its pods counted; or pod, each pod on its own.', default: 'owner' }),
    webhook: object({
      secretRef: objectReference('Secret', holder, scope, { description: 'Where the webhook URL is kept: never in the ' +
        'spec, logs or status.', required: true }, 'the webhook URL'),
      format: enumeration(['generic', 'slack', 'teams', 'pagerduty'], { description: 'The payload\'s shape: generic ' +
        '(the message\'s fields, with a text a Slack incoming webhook shows), slack (text and Block Kit blocks), teams ' +
        '(an Adaptive Card, for a Teams Workflows webhook) or pagerduty (Events API v2; the URL is ' +
        'https://events.pagerduty.com/v2/enqueue).', default: 'generic' }),
      routingKeySecretRef: objectReference('Secret', holder, scope, { description: 'With format pagerduty: where the ' +
        'integration\'s routing key is kept.' }, 'the routing key'),
      repeatInterval: string({ description: 'When set, an alert still firing is sent again this long after it was ' +
        'last sent, e.g. 4h or 30m (at least 1m).', maxLength: 16, pattern: '^([0-9]+h)?([0-9]+m)?$' }),
    }, { description: 'When set, one JSON POST per new alert and per resolution: per workload, or per pod, as ' +
      'groupBy says.', rules: [
      { rule: "(self.format == 'pagerduty') == has(self.routingKeySecretRef)", message: 'routingKeySecretRef is for ' +
        'format pagerduty, and format pagerduty needs it', fieldPath: '.routingKeySecretRef' },
      { rule: "!has(self.repeatInterval) || (self.repeatInterval != '' && duration(self.repeatInterval) >= duration('1m'))",
        message: 'repeatInterval is at least 1m', fieldPath: '.repeatInterval' }] }),
    alertmanager: object({
      url: string({ description: 'Alertmanager\'s base URL, e.g. http://alertmanager.monitoring:9093; alerts are ' +
        'posted to <url>/api/v2/alerts. The install\'s --webhook-allowed-destinations must let it through (in-cluster ' +
        'names and private addresses are refused by default). No credentials, query or fragment: those go in ' +
        'credentialsSecretRef. For an Alertmanager cluster, urls instead.', maxLength: 2048, pattern: alertmanagerUrl }),
      urls: array(string({ description: 'One replica\'s base URL, as url.', maxLength: 2048, pattern: alertmanagerUrl }),
        { description: 'Instead of url: every replica of an Alertmanager cluster, each posted to, as Prometheus does ' +
          '(replicas share silences and notifications, not alerts: one behind a load balancer would hold only some). ' +
          'A post counts once one replica has it.', minItems: 1, maxItems: 5, listType: 'set' }),
      credentialsSecretRef: objectReference('Secret', holder, scope, { description: 'A Secret with `token` (sent as a ' +
        'bearer token), or `username` and `password` (basic auth).' }),
      ca: object({
        configMapRef: objectReference('ConfigMap', holder, scope, { description: 'Where the certificates are.',
          required: true }, 'PEM certificates'),
      }, { description: 'For https: the certificates to trust instead of the system\'s.' }),
    }, { description: 'When set, each alert is posted to Alertmanager (its v2 API), again every minute while it ' +
      'fires, and with its end when it is resolved: its routes, grouping, silences and receivers take it from there.',
    rules: [{ rule: 'has(self.url) != has(self.urls)', message: 'set url, or urls for every replica of an Alertmanager ' +
      'cluster, not both' }] }),
    severity: string({ description: 'The alerts\' severity label.', default: 'warning', maxLength: 63,
      pattern: '^[a-zA-Z0-9_.-]+$' }),
    labels: map(string({ description: 'A label value.', maxLength: 256 }), { description: 'More labels on every ' +
      `alert sent to Alertmanager (team, service...); not ${reservedLabels.join(', ')}.`, maxProperties: 16,
    rules: [{ rule: `self.all(k, size(k) <= 63 && k.matches('^[a-zA-Z][a-zA-Z0-9_]*$') && !(k in [${reservedLabels
      .map((l) => `'${l}'`).join(', ')}]))`, message: `label names are [a-zA-Z][a-zA-Z0-9_]* of 63 characters at ` +
      `most, and not ${reservedLabels.join(', ')}` }] }),
    runbookUrl: string({ description: 'A runbook\'s URL, in each Alertmanager alert\'s runbook_url annotation.',
      maxLength: 2048, pattern: '^https?://[^\\s]+$' }),
  };
}

export const podAlertSpec = object(podAlertSpecFields('namespaced'), { description: 'Which pods to watch and where ' +
  'to send alerts.', required: true });

const containerReport = object({
  name: string({ description: 'The container.', required: true }),
  state: string({ description: 'waiting, running or terminated.', required: true }),
  ready: boolean({ description: 'Whether the container is ready.' }),
  reason: string({ description: 'Why it waits or ended, e.g. CrashLoopBackOff.' }),
  message: string({ description: 'The runtime\'s message.', maxLength: 4096 }),
  restartCount: integer({ description: 'Restarts so far.', minimum: 0 }),
}, { description: 'One container\'s state.' });

export const podAlertStatus = statusOf({
  unhealthyPods: integer({ description: 'Pods counted unhealthy now: past the grace period, or crash-looping within it ' +
    'while their alert fires.', minimum: 0 }),
  lastEvaluationTime: string({ description: 'When pods were last checked.', format: 'date-time' }),
  unhealthyWorkloads: integer({ description: 'Alerts firing now: workloads with a pod unhealthy past the grace ' +
    'period (groupBy owner), or such pods (groupBy pod).', minimum: 0 }),
  workloads: array(object({
    namespace: string({ description: 'Its namespace (a ClusterPodAlert\'s alerts span several).' }),
    owner: string({ description: 'The workload, kind/name: Deployment/shop, or Pod/<name> for a pod of its own.',
      required: true }),
    pod: string({ description: 'With groupBy pod: the pod.' }),
    container: string({ description: 'The failing container, as when the alert fired while a pod still has it.' }),
    unhealthyPods: integer({ description: 'Its pods unhealthy now.', minimum: 1, required: true }),
    reason: string({ description: 'Why, as when the alert fired while a pod still has that reason; else the reason ' +
      'most of its pods have.', required: true }),
    since: string({ description: 'When its first pod became unhealthy.', format: 'date-time', required: true }),
    pods: array(string({ description: 'A pod.' }), { description: 'Its worst pods: those with its reason first, then by ' +
      'how much their reason tells, the most recent first.', maxItems: 10 }),
    notifiedAt: string({ description: 'With a webhook repeatInterval: when it was last sent.', format: 'date-time' }),
  }, { description: 'One alert.' }), { description: 'The alerts firing, most recent first: one per workload with ' +
    'unhealthy pods (groupBy owner), or per pod (groupBy pod).', maxItems: 100 }),
  alerts: array(object({
    pod: string({ description: 'The pod.', required: true }),
    namespace: string({ description: 'Its namespace (a ClusterPodAlert\'s alerts span several).' }),
    owner: string({ description: 'The workload it belongs to, kind/name.' }),
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
    event: enumeration(['alert', 'resolved', 'repeat'], { description: 'A new alert, one resolved, or one still firing ' +
      'a repeatInterval after it was last sent.', required: true }),
    namespace: string({ description: 'Its namespace (a ClusterPodAlert\'s alerts span several).' }),
    pod: string({ description: 'The pod, with groupBy pod (or a pod of its own).' }),
    owner: string({ description: 'The workload, kind/name, with groupBy owner.' }),
    pods: integer({ description: 'With groupBy owner: its pods unhealthy when the alert fired.', minimum: 0 }),
    text: string({ description: 'The message, as a chat webhook shows it.', required: true, maxLength: 4096 }),
    reason: string({ description: 'The alert\'s reason.' }),
    since: string({ description: 'When the pod became unhealthy.', format: 'date-time' }),
    attempts: integer({ description: 'Failed deliveries so far.', minimum: 0 }),
    notBefore: string({ description: 'When the next delivery is due, after a failure.', format: 'date-time' }),
  }, { description: 'A webhook message not delivered yet.' }), {
    description: 'Webhook messages waiting for delivery, oldest first; kept here so that a restarted controller ' +
      'neither loses nor repeats one.', maxItems: 100 }),
  droppedNotifications: integer({ description: 'Webhook messages dropped because 100 were already waiting.', minimum: 0 }),
  alertmanagerResolutions: array(object({
    labels: map(string({ description: 'A label value.' }), { description: 'The alert\'s labels.', maxProperties: 32,
      required: true }),
    annotations: map(string({ description: 'An annotation.' }), { description: 'Its annotations.', maxProperties: 8 }),
    startsAt: string({ description: 'When it began.', format: 'date-time', required: true }),
    endsAt: string({ description: 'When it was resolved.', format: 'date-time', required: true }),
  }, { description: 'A resolved alert Alertmanager does not have yet.' }), { description: 'Resolutions waiting for ' +
    'Alertmanager, kept here so that a restarted controller loses none; the oldest go past 50.', maxItems: 50 }),
});

/** What `kubectl get` shows of a PodAlert, or a ClusterPodAlert. */
export const alertColumns: PrinterColumn[] = [
  { name: 'Unhealthy', type: 'integer', jsonPath: '.status.unhealthyPods', description: 'Unhealthy pods now.' },
  { name: 'Alerts', type: 'integer', jsonPath: '.status.unhealthyWorkloads', description: 'Alerts firing now.' },
  { name: 'Checked', type: 'date', jsonPath: '.status.lastEvaluationTime', description: 'The last check.' },
];

export const PodAlert = defineKind({
  kind: 'PodAlert',
  shortNames: ['pa'],
  description: 'PodAlert watches pods in its namespace and reports those unhealthy past a grace period, with each ' +
    'container\'s state and a tail of the failing container\'s log; optionally posts alerts to a webhook.',
  spec: podAlertSpec,
  status: podAlertStatus,
  printerColumns: alertColumns,
  requesterRights: [{ group: '', resource: 'pods', verb: 'list',
    because: 'the controller copies matching pods\' states into its status for you' },
  { group: '', resource: 'pods', subresource: 'log', verb: 'get',
    when: 'has(object.spec.logLines) && object.spec.logLines > 0',
    because: 'the controller copies pods\' log tails into its status for you; logLines: 0 needs no such right' },
  referenceRight('secrets', 'object.spec.webhook.secretRef', 'the controller reads the webhook URL from that Secret ' +
    'for you'),
  referenceRight('secrets', 'object.spec.webhook.routingKeySecretRef', 'the controller reads the PagerDuty routing key ' +
    'from that Secret for you'),
  referenceRight('secrets', 'object.spec.alertmanager.credentialsSecretRef', 'the controller reads Alertmanager\'s ' +
    'credentials from that Secret for you'),
  referenceRight('configmaps', 'object.spec.alertmanager.ca.configMapRef', 'the controller reads the certificates to ' +
    'trust Alertmanager with from that ConfigMap for you')],
});

export type PodAlertSpec = Infer<typeof podAlertSpec>;
export type PodAlertStatus = Infer<typeof podAlertStatus>;
export type PodAlertResource = ResourceOf<typeof PodAlert>;
