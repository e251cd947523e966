{{/* The functions Ripple ships (functions/index.ts); each has its own identity in templates/rbac/. */}}
{{- define "ripple.builtinFunctions" -}}
reconcile-modelserving reconcile-autoscaler ops-lifecycle emit-events
{{- end }}

{{/*
Every function the release runs: Ripple's own, then extraFunctions (your own, loaded from their modules by every
process through RIPPLE_FUNCTIONS_MODULES). Each gets the same treatment: a worker Deployment, a Knative Service or
an OpenFaaS Function, a dispatch target, and an identity of its own.
*/}}
{{- define "ripple.functions" -}}
{{ include "ripple.builtinFunctions" . }}
{{- range .Values.extraFunctions }} {{ .name }}{{ end }}
{{- end }}

{{/* The modules of extraFunctions, each once, comma-separated (RIPPLE_FUNCTIONS_MODULES). */}}
{{- define "ripple.functionsModules" -}}
{{- $modules := list }}
{{- range .Values.extraFunctions }}{{ $modules = append $modules .module }}{{ end }}
{{- $modules | uniq | join "," }}
{{- end }}

{{- define "ripple.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Every object is named `<fullname>-…`; with the release `ripple` the names are the kustomize ones. */}}
{{- define "ripple.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ripple.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels of one component: dict "root" $ "component" NAME ["function" FN]. */}}
{{- define "ripple.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ripple.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- with .function }}
ripple.dev/function: {{ . }}
{{- end }}
{{- end }}

{{/* Labels of every object: dict "root" $ "component" NAME ["function" FN]. */}}
{{- define "ripple.labels" -}}
helm.sh/chart: {{ include "ripple.chart" .root }}
{{ include "ripple.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: ripple
{{- end }}

{{- define "ripple.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* ServiceAccount of an identity: watcher, ops, dispatcher, all-in-one, ops-lifecycle-webhook, or a function's name. */}}
{{- define "ripple.serviceAccount" -}}
{{- $full := include "ripple.fullname" .root }}
{{- if eq .identity "all-in-one" }}{{ $full }}
{{- else if has .identity (list "watcher" "ops" "dispatcher" "ops-lifecycle-webhook") }}{{ printf "%s-%s" $full .identity }}
{{- else }}{{ printf "%s-worker-%s" $full .identity }}
{{- end }}
{{- end }}

{{/* Where the functions run: OpenFaaS keeps them in its own namespace; everything else is the release's. */}}
{{- define "ripple.functionNamespace" -}}
{{- if and (eq .Values.mode "serverless") (eq .Values.serverless.platform "openfaas") }}
{{- .Values.serverless.openfaas.functionNamespace }}
{{- else }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{- define "ripple.redisSecretName" -}}
{{- default (printf "%s-redis" (include "ripple.fullname" .)) .Values.redis.existingSecret }}
{{- end }}
{{- define "ripple.redisSecretKey" -}}
{{- if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretKey }}{{ else }}url{{ end }}
{{- end }}
{{- define "ripple.opsTokenSecretName" -}}
{{- default (printf "%s-ops-token" (include "ripple.fullname" .)) .Values.opsToken.existingSecret }}
{{- end }}
{{- define "ripple.opsTokenSecretKey" -}}
{{- if .Values.opsToken.existingSecret }}{{ .Values.opsToken.existingSecretKey }}{{ else }}token{{ end }}
{{- end }}
{{- define "ripple.functionTokenSecretName" -}}
{{- default (printf "%s-function-token" (include "ripple.fullname" .)) .Values.functionToken.existingSecret }}
{{- end }}
{{- define "ripple.functionTokenSecretKey" -}}
{{- if .Values.functionToken.existingSecret }}{{ .Values.functionToken.existingSecretKey }}{{ else }}token{{ end }}
{{- end }}

{{/* The Redis URL the chart knows (demo or redis.url); empty with redis.existingSecret. */}}
{{- define "ripple.redisUrl" -}}
{{- if .Values.redis.url }}{{ .Values.redis.url }}
{{- else if .Values.redis.deploy }}{{ printf "redis://%s-redis.%s.svc:6379" (include "ripple.fullname" .) .Release.Namespace }}
{{- end }}
{{- end }}

{{/*
Tokens come from an existing Secret or a value, never from `lookup` or a random value at render time: under
`helm template` (Argo CD) `lookup` finds nothing, so a generated token changed on every
sync and the dispatcher and the functions answered 401 until restarted. docs/operations.md ("Helm", tokens).
*/}}
{{- define "ripple.functionToken" -}}
{{- .Values.functionToken.value }}
{{- end }}

{{/*
Checks across values that a JSON schema cannot say clearly; each message says what to set.
*/}}
{{- define "ripple.validate" -}}
{{- $sources := 0 }}
{{- if .Values.redis.deploy }}{{ $sources = add1 $sources }}{{ end }}
{{- if .Values.redis.url }}{{ $sources = add1 $sources }}{{ end }}
{{- if .Values.redis.existingSecret }}{{ $sources = add1 $sources }}{{ end }}
{{- if ne $sources 1 }}
{{- fail (printf "redis: give exactly one of redis.deploy=true (a demo Redis), redis.url or redis.existingSecret (%d given)" $sources) }}
{{- end }}
{{- if and .Values.keda.enabled (ne .Values.mode "scaled") }}
{{- fail "keda.enabled scales the worker Deployments, which only mode=scaled has: set mode=scaled or keda.enabled=false" }}
{{- end }}
{{- if and (eq .Values.mode "serverless") (eq .Values.serverless.platform "openfaas") .Values.functionToken.existingSecret }}
{{- fail "serverless.platform=openfaas: the functions run in another namespace and cannot read functionToken.existingSecret; give functionToken.value" }}
{{- end }}
{{- if and (eq .Values.mode "serverless") (eq .Values.serverless.platform "openfaas") .Values.redis.existingSecret }}
{{- fail "serverless.platform=openfaas: the functions run in another namespace and cannot read redis.existingSecret; give redis.url (or redis.deploy=true)" }}
{{- end }}
{{- if and (eq .Values.mode "serverless") (not .Values.functionToken.existingSecret) (not .Values.functionToken.value) }}
{{- fail "mode=serverless needs a function token (the functions refuse calls without one): set functionToken.existingSecret (a Secret you keep) or functionToken.value (e.g. --set functionToken.value=$(openssl rand -hex 24)); the chart generates none, so that it stays the same on every render (helm template, Argo CD)" }}
{{- end }}
{{- $names := list }}
{{- range .Values.extraFunctions }}
{{- if has .name (splitList " " (include "ripple.builtinFunctions" $)) }}
{{- fail (printf "extraFunctions: %s is one of Ripple's own functions; give yours another name (it names its queue, its Deployment and its ServiceAccount)" .name) }}
{{- end }}
{{- if has .name $names }}
{{- fail (printf "extraFunctions: %s is listed twice" .name) }}
{{- end }}
{{- $names = append $names .name }}
{{- end }}
{{- /* The schema cannot know the extraFunctions' names, so a misspelt workers.perFunction key is caught here. */}}
{{- $functions := splitList " " (include "ripple.functions" .) }}
{{- range $fn, $_ := .Values.workers.perFunction }}
{{- if not (has $fn $functions) }}
{{- fail (printf "workers.perFunction.%s: no such function; give one of %s (Ripple's own, then extraFunctions)" $fn (join ", " $functions)) }}
{{- end }}
{{- end }}
{{- if and .Values.redis.tls.caSecret (eq .Values.mode "serverless") (eq .Values.serverless.platform "openfaas") }}
{{- fail "serverless.platform=openfaas: the functions run in another namespace and cannot mount redis.tls.caSecret; put the CA in the Redis server's certificate chain your image trusts, or use Knative" }}
{{- end }}
{{- end }}

{{/* Whether there is an ops token at all: an existing Secret or a value. */}}
{{- define "ripple.hasOpsToken" -}}
{{- if or .Values.opsToken.existingSecret .Values.opsToken.value }}true{{ end }}
{{- end }}

{{/* The environment every Ripple process gets: dict "root" $ "opsToken" BOOL "functionToken" BOOL. */}}
{{- define "ripple.env" -}}
# The leader Lease and the autoscaler's ConfigMaps live in the namespace Ripple runs in.
- name: RIPPLE_NAMESPACE
  valueFrom: { fieldRef: { fieldPath: metadata.namespace } }
- name: POD_NAMESPACE
  valueFrom: { fieldRef: { fieldPath: metadata.namespace } }
- name: REDIS_URL
  valueFrom: { secretKeyRef: { name: {{ include "ripple.redisSecretName" .root }}, key: {{ include "ripple.redisSecretKey" .root }} } }
{{- if and .opsToken (include "ripple.hasOpsToken" .root) }}
# Without it the state-changing ops routes answer 403.
- name: RIPPLE_OPS_TOKEN
  valueFrom: { secretKeyRef: { name: {{ include "ripple.opsTokenSecretName" .root }}, key: {{ include "ripple.opsTokenSecretKey" .root }}, optional: true } }
{{- end }}
{{- if .functionToken }}
# Required: the functions refuse requests without it.
- name: RIPPLE_FUNCTION_TOKEN
  valueFrom: { secretKeyRef: { name: {{ include "ripple.functionTokenSecretName" .root }}, key: {{ include "ripple.functionTokenSecretKey" .root }} } }
{{- end }}
{{- if .root.Values.redis.tls.caSecret }}
# The CA of a rediss:// Redis, trusted beside the system's (Node reads it at start).
- name: NODE_EXTRA_CA_CERTS
  value: /etc/ripple/redis-ca/{{ .root.Values.redis.tls.caSecretKey }}
{{- end }}
{{- end }}

{{/*
One pod setting of a component: the component's own value when it sets one, else the chart-wide one
(unless "own" is true). dict "root" $ "values" COMPONENT-VALUES "key" NAME ["own" BOOL]; rendered as YAML
(empty when neither is set).
*/}}
{{- define "ripple.podSetting" -}}
{{- $v := index (.values | default dict) .key }}
{{- if and (not $v) (not .own) }}{{ $v = index .root.Values .key }}{{ end }}
{{- with $v }}{{ toYaml . }}{{ end }}
{{- end }}

{{/* The chart-wide list `key` (unless "own") followed by the component's own: dict "root" $ "values" C "key" NAME ["own" BOOL]. */}}
{{- define "ripple.podList" -}}
{{- $l := concat (ternary (list) (index .root.Values .key | default list) (not (empty .own))) (index (.values | default dict) .key | default list) }}
{{- with $l }}{{ toYaml . }}{{ end }}
{{- end }}

{{/*
Scheduling and extras of a Ripple pod spec (Deployments and Knative Services): priority, node selection,
affinity, tolerations, topology spread, the Redis CA volume and the user's volumes.
dict "root" $ "values" COMPONENT-VALUES ["tmp" BOOL] ["ownScheduling" BOOL: only the component's own
scheduling settings, not the chart-wide ones (Knative refuses them unless its feature flags are on)].
*/}}
{{- define "ripple.podExtras" -}}
{{- $root := .root }}
{{- $own := .ownScheduling }}
{{- with include "ripple.podSetting" (dict "root" $root "values" .values "key" "priorityClassName" "own" $own) }}
priorityClassName: {{ . }}
{{- end }}
{{- with include "ripple.podSetting" (dict "root" $root "values" .values "key" "nodeSelector" "own" $own) }}
nodeSelector:
  {{- . | nindent 2 }}
{{- end }}
{{- with include "ripple.podSetting" (dict "root" $root "values" .values "key" "affinity" "own" $own) }}
affinity:
  {{- . | nindent 2 }}
{{- end }}
{{- with include "ripple.podList" (dict "root" $root "values" .values "key" "tolerations" "own" $own) }}
tolerations:
  {{- . | nindent 2 }}
{{- end }}
{{- with include "ripple.podList" (dict "root" $root "values" .values "key" "topologySpreadConstraints" "own" $own) }}
topologySpreadConstraints:
  {{- tpl . $root | nindent 2 }}
{{- end }}
{{- $volumes := list }}
{{- if .tmp }}
{{- /* tsx caches transpiled files under /tmp; the root filesystem is read-only. */}}
{{- $volumes = append $volumes (dict "name" "tmp" "emptyDir" (dict "sizeLimit" "64Mi")) }}
{{- end }}
{{- if $root.Values.redis.tls.caSecret }}
{{- $volumes = append $volumes (dict "name" "redis-ca" "secret" (dict "secretName" $root.Values.redis.tls.caSecret "items" (list (dict "key" $root.Values.redis.tls.caSecretKey "path" $root.Values.redis.tls.caSecretKey)))) }}
{{- end }}
{{- $volumes = concat $volumes (fromYamlArray (include "ripple.podList" (dict "root" $root "values" .values "key" "extraVolumes") | default "[]")) }}
{{- with $volumes }}
volumes:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The container's volume mounts: dict "root" $ "values" COMPONENT-VALUES ["tmp" BOOL]. */}}
{{- define "ripple.volumeMounts" -}}
{{- $mounts := list }}
{{- if .tmp }}{{ $mounts = append $mounts (dict "name" "tmp" "mountPath" "/tmp") }}{{ end }}
{{- if .root.Values.redis.tls.caSecret }}{{ $mounts = append $mounts (dict "name" "redis-ca" "mountPath" "/etc/ripple/redis-ca" "readOnly" true) }}{{ end }}
{{- $mounts = concat $mounts (fromYamlArray (include "ripple.podList" (dict "root" .root "values" .values "key" "extraVolumeMounts") | default "[]")) }}
{{- with $mounts }}{{ toYaml . }}{{ end }}
{{- end }}

{{/*
A Deployment of one Ripple process. dict "root" $ "name" NAME "component" C ["function" FN] "identity" ID
"replicas" N "grace" S "args" LIST "values" COMPONENT-VALUES ["opsToken" BOOL] ["functionToken" BOOL]
["extraEnv" LIST] ["readinessPeriodSeconds" N]. COMPONENT-VALUES (allInOne, watcher, ops, workers, serverless.dispatcher) may set every
pod setting the chart sets chart-wide (resources, nodeSelector, …); theirs win, lists add up.
*/}}
{{- define "ripple.deployment" -}}
{{- $root := .root }}
{{- $v := .values | default dict }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "ripple.labels" . | nindent 4 }}
spec:
  replicas: {{ .replicas }}
  selector:
    matchLabels:
      {{- include "ripple.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "ripple.labels" . | nindent 8 }}
        {{- with merge (dict) ($v.podLabels | default dict) $root.Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $root.Values.config.opsPort | quote }}
        prometheus.io/path: /metrics
        # A changed setting restarts the pods (they read the ConfigMap once, at start).
        checksum/config: {{ include (print $root.Template.BasePath "/config.yaml") $root | sha256sum }}
        {{- with merge (dict) ($v.podAnnotations | default dict) $root.Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "ripple.serviceAccount" (dict "root" $root "identity" .identity) }}
      # Long enough for in-flight reconciles to finish: SIGTERM makes the process stop taking jobs and
      # wait for the running ones (a killed reconcile is retried, but costs a lock timeout).
      terminationGracePeriodSeconds: {{ .grace }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      # No fixed uid: the image's USER (1000) runs it, or the uid the platform assigns (OpenShift's
      # restricted-v2 SCC picks one from the namespace's range and refuses a fixed one outside it).
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      containers:
        - name: ripple
          image: {{ include "ripple.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          ports:
            - { name: ops, containerPort: {{ $root.Values.config.opsPort }} }
          env:
            {{- include "ripple.env" . | nindent 12 }}
            {{- with .extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- with include "ripple.podList" (dict "root" $root "values" $v "key" "extraEnv") }}
            {{- tpl . $root | nindent 12 }}
            {{- end }}
          envFrom:
            - configMapRef: { name: {{ include "ripple.fullname" $root }}-config }
          # Start-up (loading the TypeScript, the first lists of every watch) may take a while on a busy
          # node; liveness counts only once /healthz has answered.
          startupProbe:
            httpGet: { path: /healthz, port: ops }
            periodSeconds: {{ $root.Values.startupProbe.periodSeconds }}
            failureThreshold: {{ $root.Values.startupProbe.failureThreshold }}
          readinessProbe:
            httpGet: { path: /readyz, port: ops }
            periodSeconds: {{ .readinessPeriodSeconds | default 10 }}
          livenessProbe:
            httpGet: { path: /healthz, port: ops }
            periodSeconds: 20
            failureThreshold: 3
          resources:
            {{- include "ripple.podSetting" (dict "root" $root "values" $v "key" "resources") | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            {{- include "ripple.volumeMounts" (dict "root" $root "values" $v "tmp" true) | nindent 12 }}
      {{- include "ripple.podExtras" (dict "root" $root "values" $v "tmp" true) | nindent 6 }}
{{- end }}
