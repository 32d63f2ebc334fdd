package main

import corev1 "k8s.io/api/core/v1"

// keepPodView is the transform a careful author gives the Pod informer of a pod-watching operator: only the fields
// its health check reads, the same ones Keelson's PodAlert declares (metadata whole but managedFields; phase, reason,
// message, conditions; and of each container status its name, readiness, restarts and states).
func keepPodView(in any) (any, error) {
	pod, ok := in.(*corev1.Pod)
	if !ok {
		return in, nil
	}
	kept := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta, Status: corev1.PodStatus{
		Phase: pod.Status.Phase, Reason: pod.Status.Reason, Message: pod.Status.Message, Conditions: pod.Status.Conditions,
		InitContainerStatuses: containerViews(pod.Status.InitContainerStatuses),
		ContainerStatuses:     containerViews(pod.Status.ContainerStatuses),
	}}
	kept.ManagedFields = nil
	return kept, nil
}

func containerViews(statuses []corev1.ContainerStatus) []corev1.ContainerStatus {
	if statuses == nil {
		return nil
	}
	views := make([]corev1.ContainerStatus, len(statuses))
	for i, s := range statuses {
		views[i] = corev1.ContainerStatus{Name: s.Name, Ready: s.Ready, RestartCount: s.RestartCount, State: s.State,
			LastTerminationState: s.LastTerminationState}
	}
	return views
}
