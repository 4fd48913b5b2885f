#!/bin/sh
# Copy each ready doctor pod's report to DIR/doctor-NODE.json (the DaemonSet of
# doctor-daemonset.yaml), for `fatbin-inspect check PATHS --targets DIR`.
# Needs kubectl with get/list pods and create pods/exec in the namespace (NAMESPACE, default
# fatbin-inspect). Exits 1 when a pod is not ready or no report was collected: a fleet judged on
# part of its nodes is not a fleet judged.
set -eu
dir=${1:?usage: collect-reports.sh DIR}
ns=${NAMESPACE:-fatbin-inspect}
mkdir -p "$dir"
pods=$(kubectl -n "$ns" get pods -l app.kubernetes.io/name=fatbin-inspect-doctor \
  -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{" "}{.status.containerStatuses[0].ready}{"\n"}{end}')
n=0 missing=0
echo "$pods" | {
  while read -r pod node ready; do
    [ -n "$pod" ] || continue
    case $node in *[!A-Za-z0-9.-]*|"") echo "collect-reports: $pod: odd node name '$node'" >&2; missing=1; continue ;; esac
    if [ "$ready" != true ]; then echo "collect-reports: $pod on $node: not ready" >&2; missing=1; continue; fi
    kubectl -n "$ns" exec "$pod" -- cat /reports/doctor.json > "$dir/doctor-$node.json.part" &&
      mv "$dir/doctor-$node.json.part" "$dir/doctor-$node.json" && n=$((n + 1)) || missing=1
  done
  echo "collect-reports: $n report(s) in $dir" >&2
  [ "$n" -gt 0 ] && [ "$missing" -eq 0 ]
}
