{{/* The functions Ripple ships (functions/index.ts); each has its own identity in templates/rbac/. */}}
{{- define "ripple.functions" -}}
reconcile-modelserving reconcile-autoscaler ops-lifecycle emit-events
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

{{/* ServiceAccount of an identity: watcher, ops, dispatcher, all-in-one, or a function's name. */}}
{{- define "ripple.serviceAccount" -}}
{{- $full := include "ripple.fullname" .root }}
{{- if eq .identity "all-in-one" }}{{ $full }}
{{- else if has .identity (list "watcher" "ops" "dispatcher") }}{{ printf "%s-%s" $full .identity }}
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
A token Secret's value: the one given, else the one already in the cluster (so upgrades keep it), else
32 random characters. dict "root" $ "name" SECRET "value" GIVEN.
*/}}
{{- define "ripple.tokenValue" -}}
{{- if .value }}{{ .value }}
{{- else }}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .name }}
{{- if and $existing $existing.data (index $existing.data "token") }}{{ index $existing.data "token" | b64dec }}
{{- else }}{{ randAlphaNum 32 }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The function token, generated or looked up once per render: the dispatcher's Secret and the copy OpenFaaS
mounts (another template, another namespace) must hold the same value. Helm hands every template the same
values map, so the first call stores it there.
*/}}
{{- define "ripple.functionToken" -}}
{{- if not (hasKey .Values.functionToken "resolved") }}
{{- $_ := set .Values.functionToken "resolved" (include "ripple.tokenValue" (dict "root" . "name" (printf "%s-function-token" (include "ripple.fullname" .)) "value" .Values.functionToken.value)) }}
{{- end }}
{{- .Values.functionToken.resolved }}
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
{{- fail "serverless.platform=openfaas: the functions run in another namespace and cannot read functionToken.existingSecret; give functionToken.value (or functionToken.generate=true)" }}
{{- end }}
{{- if and (eq .Values.mode "serverless") (eq .Values.serverless.platform "openfaas") .Values.redis.existingSecret }}
{{- fail "serverless.platform=openfaas: the functions run in another namespace and cannot read redis.existingSecret; give redis.url (or redis.deploy=true)" }}
{{- end }}
{{- if and (eq .Values.mode "serverless") (not .Values.functionToken.existingSecret) (not .Values.functionToken.value) (not .Values.functionToken.generate) }}
{{- fail "mode=serverless needs a function token (the functions refuse calls without one): set functionToken.existingSecret, functionToken.value or functionToken.generate=true" }}
{{- end }}
{{- end }}

{{/* Whether the ops token Secret is mounted at all: existing, given, or generated. */}}
{{- define "ripple.hasOpsToken" -}}
{{- if or .Values.opsToken.existingSecret .Values.opsToken.value .Values.opsToken.generate }}true{{ end }}
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
{{- end }}

{{/*
A Deployment of one Ripple process. dict "root" $ "name" NAME "component" C ["function" FN] "identity" ID
"replicas" N "grace" S "args" LIST ["opsToken" BOOL] ["functionToken" BOOL] ["extraEnv" LIST].
*/}}
{{- define "ripple.deployment" -}}
{{- $root := .root }}
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
        {{- with $root.Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $root.Values.config.opsPort | quote }}
        prometheus.io/path: /metrics
        # A changed setting restarts the pods (they read the ConfigMap once, at start).
        checksum/config: {{ include (print $root.Template.BasePath "/config.yaml") $root | sha256sum }}
        {{- with $root.Values.podAnnotations }}
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
      securityContext:
        runAsNonRoot: true
        runAsUser: 1000
        runAsGroup: 1000
        seccompProfile: { type: RuntimeDefault }
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
          envFrom:
            - configMapRef: { name: {{ include "ripple.fullname" $root }}-config }
          readinessProbe:
            httpGet: { path: /readyz, port: ops }
            periodSeconds: 10
          livenessProbe:
            httpGet: { path: /healthz, port: ops }
            periodSeconds: 20
            failureThreshold: 3
          resources:
            {{- toYaml $root.Values.resources | nindent 12 }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: { drop: [ALL] }
          volumeMounts:
            - { name: tmp, mountPath: /tmp }
      volumes:
        # tsx caches transpiled files under /tmp; the root filesystem is read-only.
        - { name: tmp, emptyDir: { sizeLimit: 64Mi } }
      {{- with $root.Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
