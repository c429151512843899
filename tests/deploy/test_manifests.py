"""deploy/kubernetes: every manifest is valid against the Kubernetes API schemas of a pinned
version (offline: kubernetes-validate ships them, strict so a misspelt field fails), and the
manifests agree with the server and with each other: probe paths the app serves, ports that
match, env var names the server reads, Secret references the example Secret provides, and
selectors that pick the server's pods and only them."""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any, Final

import kubernetes_validate
import pytest

from tests.deploy._files import (
    ENV_NAMES,
    KUBERNETES_DIR,
    manifests,
    served_paths,
    stages,
)

if TYPE_CHECKING:
    from pathlib import Path

KUBERNETES_VERSION: Final = "1.33.0"
"""The API version the manifests are validated against (Deployment, Job, PDB are GA there)."""

KINDS: Final = {"Deployment", "Service", "Job", "PodDisruptionBudget", "Secret"}


def _one(kind: str) -> dict[str, Any]:
    found = [doc for _path, doc in manifests() if doc["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container.get("env", [])}


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_every_kind_is_there() -> None:
    assert {doc["kind"] for _path, doc in manifests()} == KINDS


@pytest.mark.parametrize(
    ("path", "doc"),
    manifests(),
    ids=[f"{path.relative_to(KUBERNETES_DIR)}:{doc['kind']}" for path, doc in manifests()],
)
def test_manifest_is_valid(path: Path, doc: dict[str, Any]) -> None:
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{path.name}: {exc.message} at {'.'.join(map(str, exc.path))}")


def test_validation_catches_a_misspelt_field() -> None:
    """The schema check is not vacuous: an unknown field in a probe fails it."""
    broken = copy.deepcopy(_one("Deployment"))
    probe = _container(broken)["livenessProbe"]
    probe["httpGet"]["pth"] = probe["httpGet"].pop("path")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_probes_use_paths_the_app_serves() -> None:
    container = _container(_one("Deployment"))
    paths = served_paths()
    probes = {
        name: container[name]["httpGet"]
        for name in ("startupProbe", "livenessProbe", "readinessProbe")
    }
    for name, probe in probes.items():
        assert probe["path"] in paths, (name, probe["path"], paths)
    # Liveness never depends on the database; readiness does.
    assert probes["livenessProbe"]["path"] == "/healthz"
    assert probes["startupProbe"]["path"] == "/healthz"
    assert probes["readinessProbe"]["path"] == "/readyz"


def test_ports_match() -> None:
    deployment, service = _one("Deployment"), _one("Service")
    container = _container(deployment)
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    # The server listens where the container port says, on every interface.
    env = _env(container)
    assert int(env["COMPASS_PORT"]["value"]) in ports.values()
    assert env["COMPASS_HOST"]["value"] == "0.0.0.0"  # noqa: S104 - what the pod must bind
    for name in ("startupProbe", "livenessProbe", "readinessProbe"):
        port = container[name]["httpGet"]["port"]
        assert port in ports or port in ports.values(), (name, port)
    for port in service["spec"]["ports"]:
        target = port["targetPort"]
        assert target in ports or target in ports.values(), target
    # ... which is the port the image exposes.
    runtime = stages()[-1]
    exposed = {int(args.split("/")[0]) for keyword, args in runtime if keyword == "EXPOSE"}
    assert set(ports.values()) <= exposed


def test_env_var_names_are_ones_the_server_reads() -> None:
    for kind in ("Deployment", "Job"):
        names = set(_env(_container(_one(kind))))
        assert "COMPASS_DATABASE_URL" in names, kind
        compass = {name for name in names if name.startswith("COMPASS_")}
        assert compass <= ENV_NAMES, (kind, compass - ENV_NAMES)


def test_commented_env_examples_name_variables_the_server_reads() -> None:
    """The commented-out example (the metrics token) must work once uncommented."""
    text = (KUBERNETES_DIR / "deployment.yaml").read_text()
    documented = set(re.findall(r"#\s*- name: (COMPASS_[A-Z_]+)", text))
    assert documented
    assert documented <= ENV_NAMES, sorted(documented - ENV_NAMES)


def test_database_url_comes_from_the_example_secret() -> None:
    secret = _one("Secret")
    provided = {(secret["metadata"]["name"], key) for key in secret["stringData"]}
    for kind in ("Deployment", "Job"):
        source = _env(_container(_one(kind)))["COMPASS_DATABASE_URL"]
        assert "value" not in source, f"{kind}: the database URL belongs in a Secret"
        ref = source["valueFrom"]["secretKeyRef"]
        assert (ref["name"], ref["key"]) in provided, (kind, ref)


def test_migrate_job_runs_the_release_image() -> None:
    job, deployment = _one("Job"), _one("Deployment")
    container = _container(job)
    assert container["args"] == ["compass", "migrate"]
    assert container["image"] == _container(deployment)["image"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in {"Never", "OnFailure"}
    assert _container(deployment)["args"] == ["compass", "serve"]


def test_selectors_pick_the_server_pods_only() -> None:
    deployment = _one("Deployment")
    server_labels = deployment["spec"]["template"]["metadata"]["labels"]
    job_labels = _one("Job")["spec"]["template"]["metadata"]["labels"]
    selectors = {
        "Deployment": deployment["spec"]["selector"]["matchLabels"],
        "Service": _one("Service")["spec"]["selector"],
        "PodDisruptionBudget": _one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
    }
    for kind, selector in selectors.items():
        assert _matches(selector, server_labels), kind
        assert not _matches(selector, job_labels), f"{kind} would select the migrate Job's pod"


def test_availability() -> None:
    deployment = _one("Deployment")
    replicas = deployment["spec"]["replicas"]
    assert replicas == 2
    assert _one("PodDisruptionBudget")["spec"]["minAvailable"] < replicas
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_run_locked_down_as_the_image_user(kind: str) -> None:
    workload = _one(kind)
    pod = workload["spec"]["template"]["spec"]
    container = _container(workload)
    user = next(args for keyword, args in stages()[-1] if keyword == "USER")
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert str(pod["securityContext"]["runAsUser"]) == user.split(":")[0]
    assert pod["automountServiceAccountToken"] is False
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    resources = container["resources"]
    assert {"cpu", "memory"} <= set(resources["requests"])
    assert "memory" in resources["limits"]
