package main

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The health rules of Keelson's PodAlert (controller/operators/podalert/health.ts), written the Go way.

const stableAfter = 60 * time.Second

type trouble struct {
	phase, reason, message string
	since                  time.Time
	container              string
	containers             []ContainerReport
}

func report(status corev1.ContainerStatus) ContainerReport {
	r := ContainerReport{Name: status.Name, State: "unknown", Ready: status.Ready, RestartCount: status.RestartCount}
	switch state := status.State; {
	case state.Waiting != nil:
		r.State, r.Reason, r.Message = "waiting", state.Waiting.Reason, state.Waiting.Message
	case state.Running != nil:
		r.State = "running"
	case state.Terminated != nil:
		r.State, r.Reason, r.Message = "terminated", state.Terminated.Reason, state.Terminated.Message
	}
	return r
}

func completed(c corev1.ContainerStatus) bool {
	return c.State.Terminated != nil && c.State.Terminated.ExitCode == 0
}

func restartedLately(c corev1.ContainerStatus, now time.Time) bool {
	last := c.LastTerminationState.Terminated
	running := c.State.Running
	return last != nil && last.ExitCode != 0 && running != nil && !running.StartedAt.IsZero() &&
		now.Sub(running.StartedAt.Time) < stableAfter
}

func condition(status *corev1.PodStatus, kind corev1.PodConditionType) *corev1.PodCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == kind {
			return &status.Conditions[i]
		}
	}
	return nil
}

func orTime(value time.Time, fallback time.Time) time.Time {
	if value.IsZero() {
		return fallback
	}
	return value
}

func troubleOf(pod *corev1.Pod, now time.Time) *trouble {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded {
		return nil
	}
	status := &pod.Status
	phase := string(status.Phase)
	if phase == "" {
		phase = string(corev1.PodPending)
	}
	statuses := append(append([]corev1.ContainerStatus(nil), status.InitContainerStatuses...), status.ContainerStatuses...)
	var first *corev1.ContainerStatus
	for i, c := range statuses {
		if (!c.Ready && !completed(c)) || c.State.Waiting != nil || restartedLately(c, now) {
			first = &statuses[i]
			break
		}
	}
	// Most pods run well: every reconcile judges each of them, so those are passed before anything is built.
	if status.Phase == corev1.PodRunning && first == nil {
		return nil
	}
	created := pod.CreationTimestamp.Time
	t := &trouble{phase: phase, since: created}
	for _, c := range statuses {
		t.containers = append(t.containers, report(c))
	}
	var waiting *corev1.ContainerStateWaiting
	if first != nil {
		t.container, waiting = first.Name, first.State.Waiting
	}
	switch status.Phase {
	case corev1.PodRunning:
		if first == nil {
			return nil
		}
		if ready := condition(status, corev1.PodReady); ready != nil && ready.Status == corev1.ConditionFalse {
			t.since = orTime(ready.LastTransitionTime.Time, created)
		}
		if first.Ready && waiting == nil {
			last := first.LastTerminationState.Terminated
			t.reason = "Restarted"
			t.message = fmt.Sprintf("container %s runs again after exit code %d; healthy once it has run for %ds",
				first.Name, last.ExitCode, int(stableAfter.Seconds()))
			return t
		}
		t.reason = "NotReady"
		if waiting != nil && waiting.Reason != "" {
			t.reason = waiting.Reason
		}
		if waiting != nil && waiting.Message != "" {
			t.message = waiting.Message
		} else if first.State.Running != nil {
			t.message = fmt.Sprintf("container %s is not ready", first.Name)
		}
	case corev1.PodPending, "":
		scheduled := condition(status, corev1.PodScheduled)
		switch {
		case waiting != nil && waiting.Reason != "":
			t.reason, t.message = waiting.Reason, waiting.Message
		case scheduled != nil && scheduled.Status == corev1.ConditionFalse:
			t.reason, t.message = orString(scheduled.Reason, "Unschedulable"), scheduled.Message
		default:
			t.reason = "Pending"
		}
	case corev1.PodFailed:
		var ended time.Time
		var terminated *corev1.ContainerStateTerminated
		for _, c := range statuses {
			if c.State.Terminated != nil {
				if terminated == nil {
					terminated = c.State.Terminated
				}
				if c.State.Terminated.FinishedAt.After(ended) {
					ended = c.State.Terminated.FinishedAt.Time
				}
			}
		}
		t.since = orTime(ended, created)
		t.reason, t.message = orString(status.Reason, "Failed"), status.Message
		if terminated != nil {
			t.reason, t.message = orString(status.Reason, orString(terminated.Reason, "Failed")), orString(status.Message, terminated.Message)
		}
	default:
		t.reason, t.message = orString(status.Reason, phase), status.Message
	}
	return t
}

func orString(value, fallback string) string {
	if value == "" {
		return fallback
	}
	return value
}

// newestFirst orders troubles as PodAlert lists them: most recent first, then by pod name.
func newestFirst(found []podTrouble) {
	sort.Slice(found, func(i, j int) bool {
		if !found[i].since.Equal(found[j].since) {
			return found[i].since.After(found[j].since)
		}
		return found[i].pod < found[j].pod
	})
}

type podTrouble struct {
	pod string
	*trouble
}
