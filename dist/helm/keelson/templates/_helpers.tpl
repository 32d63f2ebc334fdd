{{/* The namespace the controller runs in: the value, or the release's. */}}
{{- define "keelson.namespace" -}}
{{ .Values.namespace | default .Release.Namespace }}
{{- end }}

{{/*
Of the enabled operators (the list's first item), those its second item names, comma-separated, in its order; with a
watched namespace (the third), not those of cluster-scoped kinds.
*/}}
{{- define "keelson.operatorsIn" -}}
{{- $enabled := index . 0 -}}
{{- if index . 2 }}{{ $enabled = without $enabled "clusterpodalert" }}{{ end -}}
{{- $found := list -}}
{{- range index . 1 }}{{ if has . $enabled }}{{ $found = append $found . }}{{ end }}{{ end -}}
{{- join "," $found -}}
{{- end }}

{{/*
The RBAC rules in the second item (YAML) and, for the scale resources in the first, get on each and get and patch on
its scale subresource: a group's resources in one rule per verbs, every rule sorted by group and first resource, as
charts/rbac.ts writes them (a dict's keys come sorted byte by byte, which orders such names as localeCompare does).
*/}}
{{- define "keelson.withScaleRules" -}}
{{- $rules := dict -}}
{{- range fromYamlArray (index . 1) }}{{ $_ := set $rules (printf "%s %s" (first .apiGroups) (first .resources)) . }}{{ end -}}
{{- $byGroup := dict -}}
{{- range index . 0 }}{{ $_ := set $byGroup .group (append (get $byGroup .group | default list) .resource) }}{{ end -}}
{{- range $group, $resources := $byGroup }}
{{- $names := $resources | uniq | sortAlpha -}}
{{- $scales := list -}}
{{- range $names }}{{ $scales = append $scales (printf "%s/scale" .) }}{{ end -}}
{{- $scales = sortAlpha $scales -}}
{{- $_ := set $rules (printf "%s %s" $group (first $names)) (dict "apiGroups" (list $group) "resources" $names "verbs" (list "get")) -}}
{{- $_ = set $rules (printf "%s %s" $group (first $scales)) (dict "apiGroups" (list $group) "resources" $scales "verbs" (list "get" "patch")) -}}
{{- end -}}
{{- $sorted := list -}}
{{- range $rules }}{{ $sorted = append $sorted . }}{{ end -}}
{{- toYaml $sorted -}}
{{- end }}

{{/* repository:tag, pinned to the digest when one is set; the tag defaults to the chart's appVersion. */}}
{{- define "keelson.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}
