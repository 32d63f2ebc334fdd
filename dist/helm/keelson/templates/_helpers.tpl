{{/* The namespace the controller runs in: the value, or the release's. */}}
{{- define "keelson.namespace" -}}
{{ .Values.namespace | default .Release.Namespace }}
{{- end }}

{{/* repository:tag, pinned to the digest when one is set; the tag defaults to the chart's appVersion. */}}
{{- define "keelson.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}
