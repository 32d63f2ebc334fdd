package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The PodAlert reconcile as a kubebuilder project would write it: every matching pod judged from the cache on each
// change (listed without deep copies), the newest 50 listed, an Event per new and resolved alert, and a status
// update only when it changed.

const (
	evaluationPeriod = 30 * time.Second
	maxListedAlerts  = 50
)

type PodAlertReconciler struct {
	client.Client
	Recorder record.EventRecorder
}

func (r *PodAlertReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&PodAlert{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.alertsFor)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

func selectorOf(alert *PodAlert) (labels.Selector, error) {
	if alert.Spec.Selector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(alert.Spec.Selector)
}

func (r *PodAlertReconciler) alertsFor(ctx context.Context, pod client.Object) []reconcile.Request {
	var alerts PodAlertList
	if err := r.List(ctx, &alerts, client.InNamespace(pod.GetNamespace())); err != nil {
		return nil
	}
	var requests []reconcile.Request
	for i := range alerts.Items {
		if selector, err := selectorOf(&alerts.Items[i]); err == nil && selector.Matches(labels.Set(pod.GetLabels())) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&alerts.Items[i])})
		}
	}
	return requests
}

func (r *PodAlertReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var alert PodAlert
	if err := r.Get(ctx, req.NamespacedName, &alert); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	selector, err := selectorOf(&alert)
	if err != nil {
		return ctrl.Result{}, err
	}
	grace := 60 * time.Second
	if alert.Spec.GracePeriodSeconds != nil {
		grace = time.Duration(*alert.Spec.GracePeriodSeconds) * time.Second
	}
	now := time.Now()
	var found []podTrouble
	nextCrossing := now.Add(evaluationPeriod)
	if alert.Spec.Alerts.CheckRunningPods {
		// Read-only, so the cache's objects are not deep-copied: a careful author's choice on a list of 10,000 pods, and
		// what Keelson's frozen cache objects give.
		var pods corev1.PodList
		if err := r.List(ctx, &pods, client.InNamespace(req.Namespace), client.MatchingLabelsSelector{Selector: selector},
			client.UnsafeDisableDeepCopy); err != nil {
			return ctrl.Result{}, err
		}
		for i := range pods.Items {
			t := troubleOf(&pods.Items[i], now)
			if t == nil {
				continue
			}
			if counts := t.since.Add(grace); counts.After(now) {
				if counts.Before(nextCrossing) {
					nextCrossing = counts
				}
				continue
			}
			found = append(found, podTrouble{pod: pods.Items[i].Name, trouble: t})
		}
	}
	newestFirst(found)
	unhealthy := make(map[string]bool, len(found))
	for _, f := range found {
		unhealthy[f.pod] = true
	}
	alerts := make([]Alert, 0, maxListedAlerts)
	for _, f := range found[:min(len(found), maxListedAlerts)] {
		alerts = append(alerts, Alert{Pod: f.pod, Phase: f.phase, Reason: f.reason, Message: f.message,
			Since: metav1.NewTime(f.since.Truncate(time.Second)), Containers: f.containers, Container: f.container})
	}
	r.recordChanges(&alert, alerts, unhealthy, grace)

	var status PodAlertStatus
	alert.Status.DeepCopyInto(&status)
	status.ObservedGeneration = alert.Generation
	status.Alerts = alerts
	status.UnhealthyPods = int32(len(found))
	message := fmt.Sprintf("%d unhealthy pods", len(found))
	if len(found) > len(alerts) {
		message = fmt.Sprintf("%s; the %d most recent are listed", message, len(alerts))
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
		Reason: "Evaluated", Message: message, ObservedGeneration: alert.Generation})
	// lastEvaluationTime moves only when something else changed or a period has passed.
	last := alert.Status.LastEvaluationTime
	status.LastEvaluationTime = last
	if last == nil || now.Sub(last.Time) >= evaluationPeriod || !equality.Semantic.DeepEqual(status, alert.Status) {
		status.LastEvaluationTime = &metav1.Time{Time: now.Truncate(time.Second)}
	}
	if !equality.Semantic.DeepEqual(status, alert.Status) {
		alert.Status = status
		if err := r.Status().Update(ctx, &alert); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: nextCrossing.Sub(now) + 50*time.Millisecond}, nil
}

// recordChanges sends an Event per new alert and per resolved one. A pod is new when it was not listed and either
// none was left unlisted last time or it crossed its grace period since then; resolved when it is healthy.
func (r *PodAlertReconciler) recordChanges(alert *PodAlert, alerts []Alert, unhealthy map[string]bool, grace time.Duration) {
	previous := alert.Status.Alerts
	listed := make(map[string]bool, len(previous))
	for _, p := range previous {
		listed[p.Pod] = true
	}
	noneUnlisted := int(alert.Status.UnhealthyPods) <= len(previous) || alert.Status.ObservedGeneration != alert.Generation
	var lastEvaluated time.Time
	if alert.Status.LastEvaluationTime != nil {
		lastEvaluated = alert.Status.LastEvaluationTime.Time
	}
	for _, a := range alerts {
		if !listed[a.Pod] && (noneUnlisted || a.Since.Add(grace+time.Second).After(lastEvaluated)) {
			r.Recorder.Event(alert, corev1.EventTypeWarning, "Unhealthy", alertText(alert.Namespace, a))
		}
	}
	for _, p := range previous {
		if !unhealthy[p.Pod] {
			r.Recorder.Eventf(alert, corev1.EventTypeNormal, "Resolved", "Pod %s in %s recovered or is gone (was %s)",
				p.Pod, alert.Namespace, p.Reason)
		}
	}
}

func alertText(namespace string, a Alert) string {
	text := fmt.Sprintf("Pod %s in %s is unhealthy: %s", a.Pod, namespace, a.Reason)
	for _, c := range a.Containers {
		if c.Name == a.Container {
			text += fmt.Sprintf(" (container %s, %d restarts)", c.Name, c.RestartCount)
		}
	}
	if a.Message != "" {
		text += ": " + a.Message
	}
	return text
}
