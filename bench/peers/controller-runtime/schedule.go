package main

import (
	"fmt"
	"time"
)

// The same schedule rules as Keelson's TDSet: windows cover [startTime, endTime) in local hours and wrap past
// midnight; outside every window defaultReplica applies.

func covers(w SchedulingWindow, hour int32) bool {
	if w.StartTime < w.EndTime {
		return hour >= w.StartTime && hour < w.EndTime
	}
	return hour >= w.StartTime || hour < w.EndTime
}

func desiredAt(spec TDSetSpec, local time.Time) (int32, string) {
	hour := int32(local.Hour())
	for _, w := range spec.SchedulingConfig {
		if covers(w, hour) {
			return w.Replica, fmt.Sprintf("%d-%d", w.StartTime, w.EndTime)
		}
	}
	replicas := spec.DefaultReplica
	if replicas == 0 {
		replicas = 1
	}
	return replicas, "default"
}

// nextTransition steps through quarter hours of UTC, where every zone's local hours turn, for up to 49 hours.
func nextTransition(spec TDSetSpec, location *time.Location, now time.Time) *time.Time {
	_, current := desiredAt(spec, now.In(location))
	for t := now.Truncate(15 * time.Minute).Add(15 * time.Minute); t.Before(now.Add(49 * time.Hour)); t = t.Add(15 * time.Minute) {
		if _, window := desiredAt(spec, t.In(location)); window != current {
			return &t
		}
	}
	return nil
}
