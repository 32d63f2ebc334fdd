package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The PodAlert API as kubebuilder would scaffold it, with the fields the churn scenario uses (no webhook, no log
// tails: its PodAlerts set logLines to 0); deep copies are written out by hand instead of by controller-gen.

type PodAlertChecks struct {
	CheckRunningPods bool `json:"checkRunningPods"`
}

type PodAlertSpec struct {
	Alerts             PodAlertChecks        `json:"alerts"`
	Selector           *metav1.LabelSelector `json:"selector,omitempty"`
	GracePeriodSeconds *int64                `json:"gracePeriodSeconds,omitempty"`
}

type ContainerReport struct {
	Name         string `json:"name"`
	State        string `json:"state"`
	Ready        bool   `json:"ready"`
	Reason       string `json:"reason,omitempty"`
	Message      string `json:"message,omitempty"`
	RestartCount int32  `json:"restartCount"`
}

type Alert struct {
	Pod        string            `json:"pod"`
	Phase      string            `json:"phase"`
	Reason     string            `json:"reason"`
	Message    string            `json:"message,omitempty"`
	Since      metav1.Time       `json:"since"`
	Containers []ContainerReport `json:"containers,omitempty"`
	Container  string            `json:"container,omitempty"`
}

type PodAlertStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	UnhealthyPods      int32              `json:"unhealthyPods"`
	LastEvaluationTime *metav1.Time       `json:"lastEvaluationTime,omitempty"`
	Alerts             []Alert            `json:"alerts,omitempty"`
}

type PodAlert struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PodAlertSpec   `json:"spec"`
	Status            PodAlertStatus `json:"status,omitempty"`
}

type PodAlertList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodAlert `json:"items"`
}

func (in *PodAlertStatus) DeepCopyInto(out *PodAlertStatus) {
	*out = *in
	if in.LastEvaluationTime != nil {
		out.LastEvaluationTime = in.LastEvaluationTime.DeepCopy()
	}
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	if in.Alerts != nil {
		out.Alerts = make([]Alert, len(in.Alerts))
		for i, alert := range in.Alerts {
			out.Alerts[i] = alert
			out.Alerts[i].Containers = append([]ContainerReport(nil), alert.Containers...)
		}
	}
}

func (in *PodAlert) DeepCopyInto(out *PodAlert) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Selector = in.Spec.Selector.DeepCopy()
	if in.Spec.GracePeriodSeconds != nil {
		grace := *in.Spec.GracePeriodSeconds
		out.Spec.GracePeriodSeconds = &grace
	}
	in.Status.DeepCopyInto(&out.Status)
}

func (in *PodAlert) DeepCopy() *PodAlert {
	out := new(PodAlert)
	in.DeepCopyInto(out)
	return out
}

func (in *PodAlert) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *PodAlertList) DeepCopyObject() runtime.Object {
	out := new(PodAlertList)
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]PodAlert, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
