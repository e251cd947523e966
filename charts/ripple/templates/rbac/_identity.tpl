{{/*
The rules of one identity's ClusterRole or Role, read from files/rbac/<identity>/rbac.yaml: a link to
infra/deploy/rbac, so the chart and the kustomize overlays grant exactly the same and cannot drift apart.
dict "root" $ "identity" ID "kind" ClusterRole|Role. A Lease named in resourceNames is renamed after
config.prefix (the watcher's Lease is `<prefix>-watcher`). An extraFunctions entry has no file: its rules are
in the values, and the watcher, ops and the dispatcher get what it needs of them added to their ClusterRoles.
*/}}
{{- define "ripple.rulesOf" -}}
{{- $extra := dict }}
{{- range .root.Values.extraFunctions }}{{ if eq .name $.identity }}{{ $extra = . }}{{ end }}{{ end }}
{{- if $extra }}
{{- /* A function of your own: the rules its values give, and list on its primary (its resync lists it). */}}
{{- if eq .kind "ClusterRole" }}
{{- $rules := concat ($extra.rules | default list) (include "ripple.primaryListRules" (dict "functions" (list $extra)) | fromYamlArray) }}
{{- if $rules }}{{ toYaml $rules }}{{ end }}
{{- end }}
{{- else }}
{{- $file := printf "files/rbac/%s/rbac.yaml" .identity }}
{{- $text := .root.Files.Get $file }}
{{- if not $text }}{{ fail (printf "%s is missing from the chart (charts/ripple/files/rbac links to infra/deploy/rbac)" $file) }}{{ end }}
{{- $rules := list }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" $text -1 }}
{{- $o := fromYaml $doc }}
{{- if and $o (eq (toString (get $o "kind")) $.kind) }}
{{- range $r := $o.rules }}
{{- if and (hasKey $r "resourceNames") (has "leases" $r.resources) }}
{{- $_ := set $r "resourceNames" (list (printf "%s-watcher" $.root.Values.config.prefix)) }}
{{- end }}
{{- $rules = append $rules $r }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq .kind "ClusterRole" }}
{{- /* extraFunctions: the watcher watches what their triggers name; ops (manual resync) and the dispatcher list their primaries. */}}
{{- if eq .identity "watcher" }}
{{- range .root.Values.extraFunctions }}{{ $rules = concat $rules (.watchRules | default list) }}{{ end }}
{{- else if has .identity (list "ops" "dispatcher") }}
{{- $rules = concat $rules (include "ripple.primaryListRules" (dict "functions" .root.Values.extraFunctions) | fromYamlArray) }}
{{- end }}
{{- end }}
{{- if $rules }}{{ toYaml $rules }}{{ end }}
{{- end }}
{{- end }}

{{/* `list` on the primaries of some extraFunctions, as a YAML list of rules: dict "functions" LIST. */}}
{{- define "ripple.primaryListRules" -}}
{{- $rules := list }}
{{- range .functions }}
{{- with .primary }}{{ $rules = append $rules (dict "apiGroups" (list .apiGroup) "resources" (list .resource) "verbs" (list "list")) }}{{ end }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{/*
One identity: its ServiceAccount, a ClusterRole and its binding, and, when the identity has one, a Role
in the release namespace (Ripple's own objects) and its binding.
dict "root" $ "identity" ID "component" C ["function" FN].
Binding subjects name the account's namespace, so the functions' accounts may live elsewhere (OpenFaaS).
*/}}
{{- define "ripple.identity" -}}
{{- $root := .root }}
{{- $name := include "ripple.serviceAccount" . }}
{{- $ns := ternary (include "ripple.functionNamespace" $root) $root.Release.Namespace (not (empty .function)) }}
{{- $labels := dict "root" $root "component" .component "function" .function }}
{{- $roleRules := include "ripple.rulesOf" (dict "root" $root "identity" .identity "kind" "Role") }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $name }}
  namespace: {{ $ns }}
  labels:
    {{- include "ripple.labels" $labels | nindent 4 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $name }}
  labels:
    {{- include "ripple.labels" $labels | nindent 4 }}
rules:
  {{- include "ripple.rulesOf" (dict "root" $root "identity" .identity "kind" "ClusterRole") | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $name }}
  labels:
    {{- include "ripple.labels" $labels | nindent 4 }}
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {{ $name }} }
subjects:
  - { kind: ServiceAccount, name: {{ $name }}, namespace: {{ $ns }} }
{{- if $roleRules }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "ripple.labels" $labels | nindent 4 }}
rules:
  {{- $roleRules | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "ripple.labels" $labels | nindent 4 }}
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: {{ $name }} }
subjects:
  - { kind: ServiceAccount, name: {{ $name }}, namespace: {{ $ns }} }
{{- end }}
{{- end }}
