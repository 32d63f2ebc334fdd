package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The TDSet API as kubebuilder would scaffold it; deep copies are written out by hand instead of by controller-gen.

var groupVersion = schema.GroupVersion{Group: "keelson.dev", Version: "v1alpha1"}

type SchedulingWindow struct {
	StartTime int32 `json:"startTime"`
	EndTime   int32 `json:"endTime"`
	Replica   int32 `json:"replica"`
}

type TDSetContainer struct {
	Image string `json:"image"`
	Port  int32  `json:"port"`
}

type TDSetSpec struct {
	Container        TDSetContainer     `json:"container"`
	SchedulingConfig []SchedulingWindow `json:"schedulingConfig"`
	DefaultReplica   int32              `json:"defaultReplica,omitempty"`
	IntervalMint     int32              `json:"intervalMint,omitempty"`
	TimeZone         string             `json:"timeZone,omitempty"`
}

type TDSetStatus struct {
	DesiredReplicas    int32              `json:"desiredReplicas"`
	ActiveWindow       string             `json:"activeWindow,omitempty"`
	NextTransitionTime *metav1.Time       `json:"nextTransitionTime,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type TDSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TDSetSpec   `json:"spec"`
	Status            TDSetStatus `json:"status,omitempty"`
}

type TDSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TDSet `json:"items"`
}

func (in *TDSet) DeepCopyInto(out *TDSet) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	out.Spec.SchedulingConfig = append([]SchedulingWindow(nil), in.Spec.SchedulingConfig...)
	out.Status = in.Status
	if in.Status.NextTransitionTime != nil {
		out.Status.NextTransitionTime = in.Status.NextTransitionTime.DeepCopy()
	}
	if in.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(in.Status.Conditions))
		for i := range in.Status.Conditions {
			in.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
}

func (in *TDSet) DeepCopy() *TDSet {
	out := new(TDSet)
	in.DeepCopyInto(out)
	return out
}

func (in *TDSet) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *TDSetList) DeepCopyObject() runtime.Object {
	out := new(TDSetList)
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]TDSet, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(groupVersion, &TDSet{}, &TDSetList{}, &PodAlert{}, &PodAlertList{})
	metav1.AddToGroupVersion(scheme, groupVersion)
	return nil
}
