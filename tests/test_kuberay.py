"""docs/kuberay.yaml, the manifest docs/distributed.md gives for running redline's injectors
on KubeRay, is checked here without a Kubernetes cluster (``kubectl apply --dry-run=client``
needs one to look up RayCluster's schema):

- every pod template (the head's, the worker group's, the Job's) and the Job itself against
  Kubernetes' own published schema, strictly (kubernetes-validate: an unknown or misspelt
  field fails);
- the RayCluster against the fields of KubeRay's ``ray.io/v1`` API that it uses, typed as
  KubeRay types them (``rayStartParams`` is a map of strings: ``num-cpus: 0`` unquoted is
  refused by the API server), with no other field allowed at those levels;
- the Job's command against redline's own command line and this cluster: it parses, its
  ``--cluster`` is the head service's Ray Client port, ``--injectors`` is the worker pods'
  count, the head offers no CPU (so no injector lands beside the GCS, as in
  tests/test_cluster_hosts.py) and the Ray version is the one redline pins.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from redline.cli.commands import build_parser
from redline.cluster.address import Kind, parse_address

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "docs" / "kuberay.yaml"

#: KUBERNETES: the Kubernetes release whose schema the pod templates and the Job are held to.
KUBERNETES = "1.30"

_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_TEMPLATE = {"type": "object", "required": ["spec"]}  # its insides: Kubernetes' schema
_COUNT = {"type": "integer", "minimum": 0}

#: RAYCLUSTER: the part of KubeRay's RayCluster (ray.io/v1) this manifest uses.
RAYCLUSTER: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "ray.io/v1"},
        "kind": {"const": "RayCluster"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
            },
        },
        "spec": {
            "type": "object",
            "required": ["headGroupSpec"],
            "additionalProperties": False,
            "properties": {
                "rayVersion": {"type": "string"},
                "headGroupSpec": {
                    "type": "object",
                    "required": ["template"],
                    "additionalProperties": False,
                    "properties": {"rayStartParams": _STRINGS, "template": _TEMPLATE},
                },
                "workerGroupSpecs": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["groupName", "template"],
                        "additionalProperties": False,
                        "properties": {
                            "groupName": {"type": "string"},
                            "replicas": _COUNT,
                            "minReplicas": _COUNT,
                            "maxReplicas": _COUNT,
                            "rayStartParams": _STRINGS,
                            "template": _TEMPLATE,
                        },
                    },
                },
            },
        },
    },
}


def documents() -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    return {d["kind"]: d for d in docs}


def pod_templates(docs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    spec = docs["RayCluster"]["spec"]
    found = {"head": spec["headGroupSpec"]["template"]}
    for group in spec["workerGroupSpecs"]:
        found[group["groupName"]] = group["template"]
    found["job"] = docs["Job"]["spec"]["template"]
    return found


def validate_kubernetes(resource: dict[str, Any]) -> None:
    kubernetes_validate.validate(resource, KUBERNETES, strict=True)


def test_the_manifest_holds_a_raycluster_and_a_job() -> None:
    assert sorted(documents()) == ["Job", "RayCluster"]


def test_the_raycluster_has_kuberays_fields_and_types() -> None:
    jsonschema.validate(documents()["RayCluster"], RAYCLUSTER)


def test_the_schema_refuses_what_kuberay_refuses() -> None:
    """The check can fail: a number where KubeRay wants a string, and a misspelt field."""
    bad = documents()["RayCluster"]
    bad["spec"]["headGroupSpec"]["rayStartParams"]["num-cpus"] = 0
    with pytest.raises(jsonschema.ValidationError, match="is not of type 'string'"):
        jsonschema.validate(bad, RAYCLUSTER)
    bad = documents()["RayCluster"]
    bad["spec"]["workerGroupSpec"] = bad["spec"].pop("workerGroupSpecs")
    with pytest.raises(jsonschema.ValidationError, match="workerGroupSpec"):
        jsonschema.validate(bad, RAYCLUSTER)


@pytest.mark.parametrize("which", ["head", "injectors", "job"])
def test_each_pod_template_is_a_valid_kubernetes_pod_template(which: str) -> None:
    template = pod_templates(documents())[which]
    validate_kubernetes(
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": which},
            "template": template,
        }
    )


def test_the_job_is_a_valid_kubernetes_job() -> None:
    validate_kubernetes(documents()["Job"])


def test_kubernetes_validation_refuses_a_misspelt_field() -> None:
    job = documents()["Job"]
    job["spec"]["template"]["spec"]["containers"][0]["comand"] = ["redline"]
    with pytest.raises(kubernetes_validate.ValidationError, match="comand"):
        validate_kubernetes(job)


def test_the_jobs_command_drives_this_cluster_with_one_injector_a_pod() -> None:
    docs = documents()
    cluster = docs["RayCluster"]
    command = docs["Job"]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[0] == "redline"
    args = build_parser().parse_args(command[1:])
    address = parse_address(args.cluster)
    assert address.kind is Kind.RAY
    assert address.host == f"{cluster['metadata']['name']}-head-svc"
    head = cluster["spec"]["headGroupSpec"]
    ports = {
        p["name"]: p["containerPort"] for p in head["template"]["spec"]["containers"][0]["ports"]
    }
    assert address.port == ports["client"] == 10001
    assert head["rayStartParams"]["num-cpus"] == "0"
    groups = cluster["spec"]["workerGroupSpecs"]
    assert all(g["rayStartParams"]["num-cpus"] == "1" for g in groups)
    assert all(g["replicas"] == g["minReplicas"] == g["maxReplicas"] for g in groups)
    assert args.injectors == sum(g["replicas"] for g in groups)


def test_the_ray_version_is_the_one_redline_pins() -> None:
    pinned = re.search(r'ray\[client\]==([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned is not None
    assert documents()["RayCluster"]["spec"]["rayVersion"] == pinned.group(1)
