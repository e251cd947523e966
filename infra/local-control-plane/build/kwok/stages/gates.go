package main

import "strings"

// readyFromGates is a text/template fragment (kwok renders statusTemplate with the Pod as a map) that sets
// $ready to what a kubelet reports as the Pod's Ready status: ContainersReady True and every condition named by
// spec.readinessGates present and True. $gate names the first gate that holds it back, for the message.
// A kubelet never writes a gate condition itself; whoever owns the gate does (here: Ripple's ops-lifecycle).
const readyFromGates = `
      {{ $root := . }}
      {{ $containersReady := false }}
      {{ range $root.status.conditions }}{{ if and (eq .type "ContainersReady") (eq .status "True") }}{{ $containersReady = true }}{{ end }}{{ end }}
      {{ $gate := "" }}
      {{ range $g := $root.spec.readinessGates }}
        {{ $on := false }}
        {{ range $root.status.conditions }}{{ if and (eq .type $g.conditionType) (eq .status "True") }}{{ $on = true }}{{ end }}{{ end }}
        {{ if and (not $on) (eq $gate "") }}{{ $gate = $g.conditionType }}{{ end }}
      {{ end }}
      {{ $ready := and $containersReady (eq $gate "") }}
`

// readyCondition writes the Ready condition from readyFromGates' variables, as a kubelet words it.
const readyCondition = `
      - type: Ready
        lastTransitionTime: {{ $now | Quote }}
      {{ if $ready }}
        status: "True"
        reason: ""
        message: ""
      {{ else if not $containersReady }}
        status: "False"
        reason: ContainersNotReady
        message: "containers are not ready"
      {{ else }}
        status: "False"
        reason: ReadinessGatesNotReady
        message: {{ printf "readiness gate %q is absent or not True" $gate | Quote }}
      {{ end }}
`

// podReadyWithGates starts a scheduled Pod that has readiness gates: its containers run and are ready, and
// its Ready condition is computed from the gates (unlike kwok's default pod-ready, which writes every gate
// condition True). Conditions are merged by type, so a gate condition written earlier is kept.
const podReadyWithGates = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-with-readiness-gates
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: '.spec.readinessGates.[].conditionType'
      operator: 'Exists'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $nodeName := .spec.nodeName }}
` + readyFromGates + `
      {{ $containersReady = true }}
      {{ $ready = and $containersReady (eq $gate "") }}
      conditions:
      - type: Initialized
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: ContainersReady
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
` + readyCondition + `
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ with .spec.initContainers }}
      initContainerStatuses:
      {{ range . }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        restartCount: 0
        {{ if eq .restartPolicy "Always" }}
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
        {{ else }}
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
        {{ end }}
      {{ end }}
      {{ end }}
      {{ with NodeIPsWith $nodeName }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ with PodIPsWith $nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
`

// staleReady is a gojq query over the Pod: "stale" when its Ready condition disagrees with ContainersReady and
// its readiness-gate conditions, "current" otherwise. It is the selector of podReadinessGates, so the stage
// fires on exactly the Pod updates that change what Ready should be (a gate condition written by its owner).
const staleReady = `(.spec.readinessGates // []) as $gates
  | (.status.conditions // []) as $c
  | (([$c[] | select(.type == "ContainersReady") | .status] | last) == "True") as $containers
  | (([$c[] | select(.type == "Ready") | .status] | last) == "True") as $ready
  | ([$gates[] | .conditionType as $t | ([$c[] | select(.type == $t) | .status] | last) == "True"] | all) as $open
  | if ($containers and $open) == $ready then "current" else "stale" end`

// podReadinessGates recomputes Ready for a running Pod with readiness gates whenever it has gone stale: the
// kubelet's status manager does the same on every pod update it sees.
var podReadinessGates = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-readiness-gates
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.spec.readinessGates.[].conditionType'
      operator: 'Exists'
    - key: ` + "'" + strings.Join(strings.Fields(staleReady), " ") + "'" + `
      operator: 'In'
      values:
      - 'stale'
  # A kubelet reports Ready some time after a gate changes. By default the sandbox's "kubelet" is immediate;
  # a Pod annotated sandbox.ripple.dev/ready-delay (a Go duration, e.g. "1s") gets a slow one, so a test can
  # show what happens when the lifecycle does not wait for Ready and the endpoints.
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["sandbox.ripple.dev/ready-delay"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
` + readyFromGates + `
      conditions:
` + readyCondition
