{{/*
Names. Kubernetes names and label values are at most 63 characters; a
component's name keeps its suffix whole and shortens the release part, so two
long names never collide after truncation.
*/}}
{{- define "kairos.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kairos.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<fullname>-<suffix>", at most 63 characters. Call with (list $ "suffix"). */}}
{{- define "kairos.componentName" -}}
{{- $root := index . 0 -}}
{{- $suffix := printf "-%s" (index . 1) -}}
{{- $room := sub 63 (len $suffix) | int -}}
{{- printf "%s%s" (include "kairos.fullname" $root | trunc $room | trimSuffix "-") $suffix -}}
{{- end -}}

{{- define "kairos.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kairos.coordinatorName" -}}
{{- include "kairos.componentName" (list . "coordinator") -}}
{{- end -}}

{{- define "kairos.headlessName" -}}
{{- include "kairos.componentName" (list . "coordinator-headless") -}}
{{- end -}}

{{/* A pool's Deployment (and PDB, ScaledObject) name. Call with (list $ $pool). */}}
{{- define "kairos.poolName" -}}
{{- include "kairos.componentName" (list (index . 0) (printf "agent-%s" (index . 1).name)) -}}
{{- end -}}

{{/*
Labels. Selectors use only what never changes for a release's component:
name, instance and component (plus the pool, for agents). Call with
(list $ "component").
*/}}
{{- define "kairos.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "kairos.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- with index . 1 }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end -}}

{{- define "kairos.labels" -}}
{{- $root := index . 0 -}}
{{ include "kairos.selectorLabels" . }}
app.kubernetes.io/version: {{ include "kairos.imageTag" $root | trunc 63 | trimSuffix "-" | trimSuffix "." | trimSuffix "_" | quote }}
app.kubernetes.io/part-of: kairos
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
helm.sh/chart: {{ include "kairos.chart" $root }}
{{- with $root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Image: repository is required; the tag defaults to the chart's appVersion; a digest pins it. */}}
{{- define "kairos.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{- define "kairos.image" -}}
{{- $repository := required "image.repository is required: the registry path of the Kairos image built from deploy/docker/Dockerfile (for example --set image.repository=registry.example.com/kairos)" .Values.image.repository -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (include "kairos.imageTag" .) -}}
{{- end -}}
{{- end -}}

{{- define "kairos.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kairos.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* What every pod of the chart shares: pull secrets, no service links, the security contexts. */}}
{{- define "kairos.podCommon" -}}
automountServiceAccountToken: false
# Service links would put variables such as KAIROS_COORDINATOR_PORT=tcp://… into
# the environment, next to Kairos's own KAIROS_* settings.
enableServiceLinks: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "kairos.containerSecurityContext" -}}
{{- toYaml .Values.containerSecurityContext -}}
{{- end -}}

{{/* An integer as a string ("3600000", never 3.6e+06). */}}
{{- define "kairos.intString" -}}
{{- . | int64 | toString -}}
{{- end -}}

{{/* Whole seconds, rounded up, for a duration in milliseconds, plus extra seconds. Call with (list ms extra). */}}
{{- define "kairos.graceSeconds" -}}
{{- $ms := index . 0 | int64 -}}
{{- add (div (add $ms 999) 1000) (index . 1 | int64) -}}
{{- end -}}

{{/* Scheme of the coordinator's REST port. */}}
{{- define "kairos.httpScheme" -}}
{{- if .Values.tls.enabled }}HTTPS{{ else }}HTTP{{ end -}}
{{- end -}}

{{/* Where agents dial the coordinators. */}}
{{- define "kairos.coordinatorAddress" -}}
{{- if .Values.agents.coordinatorAddress -}}
{{- .Values.agents.coordinatorAddress -}}
{{- else if .Values.agents.useHeadlessService -}}
{{- if not .Values.coordinator.headlessService.enabled -}}
{{- fail "agents.useHeadlessService needs coordinator.headlessService.enabled=true" -}}
{{- end -}}
{{- printf "dns:///%s.%s.svc:%s" (include "kairos.headlessName" .) .Release.Namespace (include "kairos.intString" .Values.coordinator.grpcPort) -}}
{{- else -}}
{{- printf "%s.%s.svc:%s" (include "kairos.coordinatorName" .) .Release.Namespace (include "kairos.intString" .Values.coordinator.grpcPort) -}}
{{- end -}}
{{- end -}}

{{/*
A pool's settings: agents.defaults with the pool's own keys over them. Maps
listed below are merged key by key (a pool can turn KEDA on and keep the
default server address); every other key, lists and resources included, is
replaced whole. Returns YAML: (include "kairos.pool" (list $ $pool) | fromYaml).
*/}}
{{- define "kairos.pool" -}}
{{- $root := index . 0 -}}
{{- $pool := index . 1 -}}
{{- $merged := deepCopy $root.Values.agents.defaults -}}
{{- range $key, $value := $pool -}}
{{- if and (has $key (list "keda" "pdb" "token" "topologySpread" "updateStrategy" "probes")) (kindIs "map" $value) -}}
{{- $inner := deepCopy (get $merged $key | default dict) -}}
{{- range $innerKey, $innerValue := $value -}}
{{- $_ := set $inner $innerKey $innerValue -}}
{{- end -}}
{{- $_ := set $merged $key $inner -}}
{{- else -}}
{{- $_ := set $merged $key $value -}}
{{- end -}}
{{- end -}}
{{- toYaml $merged -}}
{{- end -}}

{{/*
The label matchers that keep a PromQL query to this release: the Kubernetes
namespace and the coordinator Service, as a ServiceMonitor's targets carry
them. Kairos's own `namespace` label is then named exported_namespace.
*/}}
{{- define "kairos.releaseMatchers" -}}
{{- printf "namespace=%q,service=%q" .Release.Namespace (include "kairos.coordinatorName" .) -}}
{{- end -}}

{{/* A pool's KEDA query: its demand (due soon + running), summed over its tasks. Call with (list $ $pool). */}}
{{- define "kairos.demandQuery" -}}
{{- $root := index . 0 -}}
{{- $pool := index . 1 -}}
{{- if $pool.keda.query -}}
{{- $pool.keda.query -}}
{{- else -}}
{{- $matchers := include "kairos.releaseMatchers" $root -}}
{{- if $pool.kairosNamespace -}}
{{- $matchers = printf "%s,exported_namespace=%q" $matchers $pool.kairosNamespace -}}
{{- end -}}
{{- if $pool.tasks -}}
{{- $patterns := list -}}
{{- range $pool.tasks -}}
{{- $patterns = append $patterns (regexQuoteMeta .) -}}
{{- end -}}
{{- $matchers = printf "%s,task=~%q" $matchers (join "|" $patterns) -}}
{{- end -}}
{{- printf "sum(max by (exported_namespace, task) (kairos_jobs_demand{%s}))" $matchers -}}
{{- end -}}
{{- end -}}

{{/* A probe: the handler plus the timings from values. Call with (list "path" "port" "scheme" timings). */}}
{{- define "kairos.probe" -}}
httpGet:
  path: {{ index . 0 }}
  port: {{ index . 1 }}
  scheme: {{ index . 2 }}
{{- range $key, $value := index . 3 }}
{{ $key }}: {{ $value | int64 }}
{{- end }}
{{- end -}}

{{/* An int-or-string value (25%, 1): strings quoted, numbers as integers. */}}
{{- define "kairos.intOrString" -}}
{{- if kindIs "string" . -}}{{ . | quote }}{{- else -}}{{ . | int64 }}{{- end -}}
{{- end -}}

{{/* The emptyDir on /tmp (the root filesystem is read-only). Call with the size limit. */}}
{{- define "kairos.tmpVolume" -}}
- name: tmp
  emptyDir: {{ if . }}{ sizeLimit: {{ . | quote }} }{{ else }}{}{{ end }}
{{- end -}}

{{/* A number given as an integer or a decimal string, as a string ("100", "0.5"). */}}
{{- define "kairos.numberString" -}}
{{- if kindIs "string" . -}}{{ . }}{{- else -}}{{ . | int64 | toString }}{{- end -}}
{{- end -}}

{{/* An alert's labels: its severity, then monitoring.prometheusRule.alertLabels. Call with (list "severity" $extra). */}}
{{- define "kairos.alertLabels" -}}
severity: {{ index . 0 }}
{{- with index . 1 }}
{{ toYaml . }}
{{- end }}
{{- end -}}
