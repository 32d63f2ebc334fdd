"""The TDSet reconcile as a kopf operator would write it: handlers on create, update and resume, a timer to follow
the schedule, the official kubernetes client for the owned Deployment, and status set through kopf's patch.
Keelson's benchmark runs it beside Keelson's own TDSet operator on the same apiserver."""
import datetime
import os
import zoneinfo

import kopf
import kubernetes

TDSETS = ('keelson.dev', 'v1alpha1', 'tdsets')
QUARTER_HOUR = datetime.timedelta(minutes=15)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    # The TDSet schema is structural, so kopf's own status fields would be pruned: keep its state in annotations.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    kubernetes.config.load_kube_config()


def covers(window, hour):
    start, end = window['startTime'], window['endTime']
    return start <= hour < end if start < end else hour >= start or hour < end


def desired_at(spec, instant):
    hour = instant.astimezone(zoneinfo.ZoneInfo(spec.get('timeZone', 'UTC'))).hour
    for window in spec.get('schedulingConfig', []):
        if covers(window, hour):
            return window['replica'], f"{window['startTime']}-{window['endTime']}"
    return spec.get('defaultReplica', 1), 'default'


def next_transition(spec, now):
    _, current = desired_at(spec, now)
    t = now.replace(minute=now.minute - now.minute % 15, second=0, microsecond=0) + QUARTER_HOUR
    while t <= now + datetime.timedelta(hours=49):
        if desired_at(spec, t)[1] != current:
            return t
        t += QUARTER_HOUR
    return None


def deployment_for(name, spec, replicas):
    labels = {'app.kubernetes.io/name': name, 'app.kubernetes.io/instance': name,
              'app.kubernetes.io/managed-by': 'keelson-bench'}
    return {
        'apiVersion': 'apps/v1', 'kind': 'Deployment',
        'metadata': {'name': name, 'labels': labels},
        'spec': {
            'replicas': replicas,
            'selector': {'matchLabels': {k: labels[k] for k in ('app.kubernetes.io/name', 'app.kubernetes.io/instance')}},
            'template': {'metadata': {'labels': labels}, 'spec': {'containers': [{
                'name': 'app', 'image': spec['container']['image'],
                'ports': [{'name': 'http', 'containerPort': spec['container']['port'], 'protocol': 'TCP'}]}]}},
        },
    }


@kopf.on.resume(*TDSETS)
@kopf.on.create(*TDSETS)
@kopf.on.update(*TDSETS)
@kopf.timer(*TDSETS, interval=60, initial_delay=60)
def reconcile(name, namespace, spec, meta, status, body, patch, **_):
    now = datetime.datetime.now(datetime.timezone.utc)
    replicas, window = desired_at(spec, now)
    apps = kubernetes.client.AppsV1Api()
    try:
        deployment = apps.read_namespaced_deployment(name, namespace)
    except kubernetes.client.ApiException as error:
        if error.status != 404:
            raise
        deployment = None
    if deployment is None:
        wanted = deployment_for(name, spec, replicas)
        kopf.adopt(wanted, owner=body)
        deployment = apps.create_namespaced_deployment(namespace, wanted)
        kopf.info(body, reason='Created', message=f'Created Deployment {name} with {replicas} replicas')
    elif deployment.spec.replicas != replicas:
        deployment = apps.patch_namespaced_deployment(name, namespace, {'spec': {'replicas': replicas}})

    available = (deployment.status and deployment.status.available_replicas) or 0
    ready = available >= replicas
    condition = {'type': 'Ready', 'status': 'True' if ready else 'False',
                 'reason': 'Available' if ready else 'Unavailable',
                 'message': f'{available} of {replicas} replicas available', 'observedGeneration': meta['generation']}
    previous = next((c for c in status.get('conditions', []) if c['type'] == 'Ready'), None)
    same = previous is not None and all(previous.get(k) == v for k, v in condition.items())
    condition['lastTransitionTime'] = (previous['lastTransitionTime'] if same else now.strftime('%Y-%m-%dT%H:%M:%SZ'))
    upcoming = next_transition(spec, now)
    wanted_status = {'desiredReplicas': replicas, 'activeWindow': window, 'observedGeneration': meta['generation'],
                     'conditions': [condition]}
    if upcoming is not None:
        wanted_status['nextTransitionTime'] = upcoming.strftime('%Y-%m-%dT%H:%M:%SZ')
    for key, value in wanted_status.items():
        if status.get(key) != value:
            patch.status[key] = value


if os.environ.get('KEELSON_BENCH_CACHE_PODS'):
    @kopf.index('pods')
    def pods(namespace, name, body, **_):
        return {(namespace, name): body}
