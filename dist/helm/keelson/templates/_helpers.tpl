{{/* The namespace the controller runs in: the value, or the release's. */}}
{{- define "keelson.namespace" -}}
{{ .Values.namespace | default .Release.Namespace }}
{{- end }}

{{/* Of the enabled operators (the list's first item), those its second item names, comma-separated, in its order. */}}
{{- define "keelson.operatorsIn" -}}
{{- $enabled := index . 0 -}}
{{- $found := list -}}
{{- range index . 1 }}{{ if has . $enabled }}{{ $found = append $found . }}{{ end }}{{ end -}}
{{- join "," $found -}}
{{- end }}

{{/* repository:tag, pinned to the digest when one is set; the tag defaults to the chart's appVersion. */}}
{{- define "keelson.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}
